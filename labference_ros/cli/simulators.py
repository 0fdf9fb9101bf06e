"""`labference sim-check` and `labference cell export`: other simulators behind the graph."""
from __future__ import annotations

import os
import sys

import click

from labference_ros.tasks import DEFAULT_FAMILY
from labference_ros.tasks.base import launch_seeds


@click.command("sim-check")
@click.option("--task", default=DEFAULT_FAMILY, show_default=True,
              help="Task family whose graph the simulator must serve (its cameras, balance and objects).")
@click.option("--namespace", default="", help="Namespace of the simulator's simulation_interfaces services "
              "(default: the root, as Isaac Sim and lab_sim offer them).")
@click.option("--instance", "instance_path", type=click.Path(exists=True, dir_okay=False),
              help="Instance JSON to load with LoadWorld (default: the family's first generated instance).")
@click.option("--timeout", "timeout_s", default=10.0, show_default=True, type=click.FloatRange(min=0.1),
              help="Seconds to wait for the simulator's services to be discovered.")
def sim_check(task: str, namespace: str, instance_path: str | None, timeout_s: float) -> None:
    """Check that a running simulator offers what the graph needs.

    Connects through ROS 2 simulation_interfaces on the current ROS domain and reports
    feature by feature (services, step control, the entities the cell expects, topics
    and rates), then a one-line verdict. Loads a world and steps it: run it against a
    simulator no episode is using. Exit status: 0 all present, 1 something missing,
    2 no simulator answered."""
    from labference_ros.cli.sim_check import run_sim_check
    from labference_ros.tasks import available, family

    try:
        fam = family(task)
    except KeyError:
        raise click.UsageError(f"unknown task family {task!r}; registered: {', '.join(available())}") from None
    instance = _instance(fam, instance_path)
    try:
        code = run_sim_check(fam, instance, namespace, timeout_s, click.echo)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    sys.exit(code)


@click.group("cell")
def cell() -> None:
    """The lab cell's description in other formats (URDF, USD)."""


@cell.command("export")
@click.option("--format", "fmt", type=click.Choice(["urdf", "usd"]), default="urdf", show_default=True,
              help="urdf: the cell's fixtures and cameras around the robot (the weighing cell, nominal balance "
              "pose). usd: one instance's scene as a USD stage (robot reference, table, fixtures, the "
              "balance's load-cell joint, objects with masses and friction, cameras, markers).")
@click.option("--task", default=DEFAULT_FAMILY, show_default=True, help="Task family whose cell to export.")
@click.option("--instance", "instance_path", type=click.Path(exists=True, dir_okay=False),
              help="usd: instance JSON whose scene to write (default: the family's first generated instance).")
@click.option("--robot-asset", default=None,
              help="usd: the robot's USD asset the stage references (default: Isaac Sim's Franka, relative "
              "to its assets root).")
@click.option("--image-size", default="128x128", show_default=True,
              help="usd: WIDTHxHEIGHT of the rendered images the cameras' apertures are made for.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="File to write.")
def cell_export(fmt: str, task: str, instance_path: str | None, robot_asset: str | None, image_size: str,
                output: str) -> None:
    """Write the cell as URDF or as a USD stage."""
    from labference_ros.tasks import available, family

    try:
        fam = family(task)
    except KeyError:
        raise click.UsageError(f"unknown task family {task!r}; registered: {', '.join(available())}") from None
    _check_writable(output)
    if fmt == "urdf":
        from labference_ros.cell.urdf import generate_urdf

        cell_description = fam.cell_description()
        if cell_description.balance is None:
            raise click.UsageError(f"--format urdf covers cells with a balance; {task} has none (use --format usd)")
        try:
            with open(output, "w") as out:
                out.write(generate_urdf(cell_description))
        except OSError as err:
            raise click.ClickException(f"cannot write {output}: {err.strerror or err}") from None
        click.echo(f"wrote {output}")
        return
    try:
        width, height = (int(v) for v in image_size.lower().split("x"))
        if width <= 0 or height <= 0:
            raise ValueError
    except ValueError:
        raise click.UsageError(f"--image-size expects WIDTHxHEIGHT, got {image_size!r}") from None
    try:
        from pxr import Usd  # noqa: F401  (usd-core)
    except ImportError:
        raise click.ClickException("USD export needs usd-core (pip install usd-core; env/bootstrap.sh "
                                   "installs it)") from None
    from labference_ros.sim.usd_export import DEFAULT_ROBOT_ASSET, export_usd

    instance = _instance(fam, instance_path)
    summary = export_usd(fam, instance, output, robot_asset or DEFAULT_ROBOT_ASSET, (width, height))
    click.echo(f"wrote {output}: instance {instance.instance_id}, {len(summary['objects'])} objects, "
               f"{len(summary['cameras'])} cameras, load cell {'yes' if summary['load_cell'] else 'no'}")


def _check_writable(output: str) -> None:
    """A usage error, before any work, for an output whose folder is missing or not writable."""
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        raise click.UsageError(f"-o {output}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(output) and not os.access(output, os.W_OK)):
        raise click.UsageError(f"-o {output}: not writable")


def _instance(fam, instance_path: str | None):
    """The instance in the file, or the family's first generated one; a usage error for a bad file."""
    if not instance_path:
        return fam.generate(fam.conditions[0], 1, **launch_seeds(0))[0]
    try:
        with open(instance_path) as f:
            return fam.instance_from_json(f.read())
    except (ValueError, KeyError, TypeError) as exc:
        raise click.UsageError(f"{instance_path} is not a {fam.name} instance: {exc}") from None


COMMANDS = [sim_check, cell]
