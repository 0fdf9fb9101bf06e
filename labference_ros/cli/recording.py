"""`labference audit`, `labference videos` and `labference demos-from-bags`."""
from __future__ import annotations

import sys

import click


def _fail(message: str, code: int = 2):
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


@click.command()
@click.argument("path", type=click.Path())
@click.option("--debug", is_flag=True, help="Show a traceback on unexpected errors.")
def audit(path: str, debug: bool) -> None:
    """Replay-audit BAG_OR_RUN_DIR: rebuild events and scores from the bag with the
    online scorer and compare them with the online records.

    Exit 0: agree; 1: disagree (report names record, field, online vs audit);
    2: a bag or its records cannot be read."""
    from labference_ros.recording.audit import audit_path, exit_code, format_report
    from labference_ros.recording.bag_reader import BagError

    try:
        results = audit_path(path)
    except BagError as exc:
        _fail(str(exc))
    except Exception as exc:  # never a traceback for a user's bag unless asked
        if debug:
            raise
        _fail(f"{path}: audit failed: {type(exc).__name__}: {exc}")
    click.echo(format_report(results))
    sys.exit(exit_code(results))


@click.command()
@click.argument("bag", type=click.Path())
@click.option("--out", "out_dir", type=click.Path(), default=None,
              help="Output directory (default: <episode dir>/videos).")
def videos(bag: str, out_dir: str | None) -> None:
    """Write one MP4 per camera stream of an episode BAG (file names carry the episode id)."""
    from labference_ros.recording.bag_reader import BagError, resolve_bag
    from labference_ros.recording.videos import write_videos

    try:
        bag_dir = resolve_bag(bag)
        written = write_videos(bag_dir, out_dir or bag_dir.parent / "videos")
    except BagError as exc:
        _fail(str(exc))
    if not written:
        _fail(f"{bag}: no camera images in the bag", 1)
    for cam, (p, n) in written.items():
        click.echo(f"{cam}: {p} ({n} frames)")


@click.command()
@click.argument("episode_dir", type=click.Path(exists=True))
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None,
              help="Output .rrd file (default: EPISODE_DIR/view.rrd).")
def view(episode_dir: str, out_path: str | None) -> None:
    """Turn one recorded episode (its directory or bag) into a Rerun recording to scrub:
    cameras, joint positions, the balance reading, referee events and verdicts on one
    sim-time timeline. Open it with `rerun FILE.rrd` (the viewer comes with rerun-sdk)."""
    from labference_ros.recording.bag_reader import BagError
    from labference_ros.recording.viewer import write_recording

    try:
        path, counts = write_recording(episode_dir, out_path)
    except BagError as exc:
        _fail(str(exc))
    if not counts:
        _fail(f"{episode_dir}: the bag holds nothing to show", 1)
    click.echo(f"wrote {path}: {sum(counts.values())} entries on {len(counts)} streams")
    click.echo(f"open it with: rerun {path}")


@click.command("demos-from-bags")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", type=click.Path(), default=None, help="Output directory (default: RUN_DIR/demos).")
@click.option("--val-fraction", default=0.1, show_default=True, help="Share of accepted episodes in the val split.")
def demos_from_bags(run_dir: str, out_dir: str | None, val_fraction: float) -> None:
    """Convert every episode bag + records under RUN_DIR into HDF5 demonstrations,
    a collection manifest and a training index."""
    import pathlib

    from labference_ros.recording.bag_reader import BagError
    from labference_ros.recording.demos import convert_run

    try:
        summary = convert_run(pathlib.Path(run_dir), pathlib.Path(out_dir) if out_dir else None, val_fraction)
    except BagError as exc:
        _fail(str(exc))
    click.echo(f"{summary['hdf5']}: {summary['episodes']} episodes, {summary['accepted']} accepted "
               f"({summary['failed']} failed attempts kept in {summary['manifest']})")
    click.echo(f"training index: {summary['index']}")


@click.command()
@click.option("--system", default="scripted_expert", show_default=True, help="Tested system that demonstrates.")
@click.option("--episodes", default=3, show_default=True, help="Number of episodes to record.")
@click.option("--condition", default="basic", show_default=True, type=click.Choice(["basic", "extended"]))
@click.option("--seed", default=0, show_default=True)
@click.option("--out", "out_dir", type=click.Path(), default="runs/demos-{timestamp}", show_default=True,
              help="Run directory; the HDF5 file, manifest and index go to <out>/demos.")
@click.option("--val-fraction", default=0.1, show_default=True, help="Share of accepted episodes in the val split.")
def demos(system: str, episodes: int, condition: str, seed: int, out_dir: str, val_fraction: float) -> None:
    """Record N episodes of a system through the weighing graph (rosbags on), then
    convert them into HDF5 demonstrations (demos-from-bags)."""
    import pathlib
    import time

    from labference_ros.launcher.launch import launch as run_launch

    out = pathlib.Path(out_dir.replace("{timestamp}", time.strftime("%Y%m%d-%H%M%S")))
    code = run_launch("weighing_sim.launch.py", (f"system:={system}", f"episodes:={episodes}",
                                                 f"condition:={condition}", f"seed:={seed}", "record:=true",
                                                 f"output_dir:={out}"))
    if code != 0:
        _fail(f"the recording run ended with exit status {code}; see {out}", code)
    demos_from_bags.callback(str(out), None, val_fraction)


COMMANDS = (audit, videos, view, demos_from_bags, demos)
