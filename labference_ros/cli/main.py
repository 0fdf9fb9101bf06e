"""The `labference` console script."""
from __future__ import annotations

import os
import sys

import click

from labference_ros import __version__
from labference_ros.skills.safety_modes import SAFETY_MODES
from labference_ros.tasks import DEFAULT_FAMILY
from labference_ros.tasks.base import launch_seeds

# `labference launch` refused its ROS domain (taken by another launch or graph).
DOMAIN_REFUSED = 1  # the run could not start: its ROS domain is in use


class _Group(click.Group):
    """No traceback reaches the console: an unexpected error prints one line
    naming its cause and the log file that holds the traceback (exit 1)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit,
                KeyboardInterrupt):
            raise
        except Exception as exc:
            from labference_ros.errorlog import describe

            name = " ".join(filter(None, (ctx.command_path, ctx.invoked_subcommand)))
            raise click.ClickException(describe(name, exc)) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="labference")
def main() -> None:
    """Labference-ROS: evaluate laboratory robots on whether their next operation
    follows from what physically happened."""


@main.command()
@click.option("--rig", is_flag=True, help="Check a real cell instead: the robot PC's joint states, robot state, "
              "trajectory controller and gripper actions, the balance and the marker camera (docs/real-rig.md).")
@click.option("--robot-model", type=click.Choice(["fr3", "panda"]), default="fr3", show_default=True,
              help="With --rig: the arm franka_ros2 drives.")
@click.option("--balance-port", default="", help="With --rig: the MT-SICS balance's serial port.")
@click.option("--marker-camera", default="front", show_default=True, help="With --rig: the marker camera's name.")
@click.option("--discovery", type=click.Choice(["localhost", "subnet"]), default="subnet", show_default=True,
              help="With --rig: DDS discovery scope, as the real launch's discovery argument.")
@click.option("--static-peers", default="", help="With --rig: robot PC host names or addresses, ';'-separated.")
@click.option("--timeout", "timeout_s", type=float, default=5.0, show_default=True,
              help="With --rig: seconds to wait for each ROS check.")
def doctor(rig: bool, robot_model: str, balance_port: str, marker_camera: str, discovery: str, static_peers: str,
           timeout_s: float) -> None:
    """Report ROS distro, RMW, interfaces, MuJoCo, GL backend and what is missing (--rig: a real cell)."""
    if rig:
        from labference_ros.cli.rig_check import run_rig_check

        try:
            sys.exit(run_rig_check(robot_model, balance_port, marker_camera, discovery, static_peers, timeout_s))
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
    from labference_ros.cli.doctor import run_doctor

    sys.exit(run_doctor())


@main.command()
def shell() -> None:
    """Open a shell with the environment (rclpy, interfaces, loopback-only DDS)."""
    from labference_ros.rosenv import loopback_environ

    env = loopback_environ()
    venv_bin = os.path.dirname(sys.executable)
    env["PATH"] = venv_bin + os.pathsep + env.get("PATH", "")
    env["VIRTUAL_ENV"] = os.path.dirname(venv_bin)
    env["AMENT_PREFIX_PATH"] = os.path.dirname(venv_bin)
    env["PS1"] = "(labference) \\w$ "
    shell_path = env.get("SHELL", "/bin/bash")
    os.execvpe(shell_path, [shell_path, "-i"], env)


def _add_recording_commands() -> None:
    from labference_ros.cli.recording import COMMANDS

    for command in COMMANDS:
        main.add_command(command)


_add_recording_commands()


def _add_simulator_commands() -> None:
    from labference_ros.cli.simulators import COMMANDS

    for command in COMMANDS:
        main.add_command(command)


_add_simulator_commands()


def _add_certify_command() -> None:
    from labference_ros.cli.certify import COMMANDS

    for command in COMMANDS:
        main.add_command(command)


_add_certify_command()


def _add_operator_commands() -> None:
    from labference_ros.cli.operator import COMMANDS

    for command in COMMANDS:
        main.add_command(command)


_add_operator_commands()


def _check_records(run_dirs, allow_incomplete: bool) -> None:
    """List every unreadable or inconsistent record file; stop (exit 1) unless --allow-incomplete.
    An input without run records is always an error."""
    from labference_ros.reporting.integrity import NoRuns, check_inputs

    try:
        problems = check_inputs(run_dirs)
    except NoRuns as exc:
        raise click.ClickException(str(exc)) from None
    if not problems:
        return
    for p in problems:
        click.echo(f"record problem: {p}", err=True)
    if not allow_incomplete:
        raise click.ClickException(f"{len(problems)} record file(s) unreadable or inconsistent (listed above); "
                                   f"fix or remove them, or pass --allow-incomplete to count what can be read")
    click.echo(f"--allow-incomplete: going on without {len(problems)} unreadable or inconsistent record file(s)",
               err=True)


ALLOW_INCOMPLETE_HELP = ("Go on when record files are unreadable or inconsistent (they are listed; what cannot be "
                         "read counts as an evaluation-validity error). Without it such input exits 1.")


@main.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", type=click.Path(file_okay=False),
              help="Where report.json, report.html and the plots go (default: first RUN_DIR).")
@click.option("--level", type=click.Choice(["episode", "pair", "family"]), default="pair", show_default=True,
              help="Bootstrap cluster: episodes, matched pairs (both branches together) or task families.")
@click.option("--no-plots", is_flag=True, help="Skip the plots (no PNG files; report.html without images).")
@click.option("--compare", "candidate", metavar="CELL",
              help="Relative rule: the candidate cell, named by its tested system (e.g. scripted_expert) or by "
                   "FIELD=VALUE[,FIELD=VALUE] over tested_system, task_condition, observation_condition, "
                   "intervention_mode, intervention_site, intervention_protocol, intervention_compatibility, safety, "
                   "binding (e.g. intervention_protocol=full_rollout, or task_condition=heldout_blocks). Needs "
                   "--reference.")
@click.option("--allow-incomplete", is_flag=True, help=ALLOW_INCOMPLETE_HELP)
@click.option("--reference", "references", metavar="CELL", multiple=True,
              help="Relative rule: the reference cell (same syntax); repeat for one comparison per reference. "
                   "Over the task units both cells ran, 2,000 family-bootstrap draws, seed 240926: passes if the "
                   "upper 95% bounds of the cost- and time-per-success ratios are < 1 and the lower bound of the "
                   "success difference is > -3 percentage points, with every draw defined.")
@click.option("--test", "test", type=click.Choice(["fixed", "sequential"]), default=None,
              help="The comparison's test: fixed N (relative rule, paired rates with McNemar / permutation tests) or "
                   "the campaign's pre-registered sequential test. Default: as the runs' campaign lock says; a "
                   "test that does not match it is refused.")
def report(run_dirs, out, level, no_plots, allow_incomplete, candidate, references, test) -> None:
    """Section 7 tables per system x condition, accounting and 95% CIs, and optionally the
    protocol's relative rule; writes report.json and a self-contained report.html."""
    from labference_ros.reporting.design import DesignMismatch, format_sequential
    from labference_ros.reporting.identity import IdentityMismatch
    from labference_ros.reporting.relative import CellSelectionError, format_comparison
    from labference_ros.reporting.report import (EvaluationStepUnknown, TaskFamilyMissing, build, format_report,
                                                 write)

    if bool(candidate) != bool(references):
        raise click.UsageError("--compare and --reference go together")
    _check_records(run_dirs, allow_incomplete)
    try:
        rep = build(run_dirs, level=level, comparisons=[(candidate, r) for r in references], test=test)
    except (IdentityMismatch, CellSelectionError, TaskFamilyMissing, EvaluationStepUnknown, DesignMismatch) as exc:
        raise click.ClickException(str(exc))
    click.echo(format_report(rep))
    for comparison in rep["comparisons"]:
        formatted = format_sequential if comparison.get("design") == "sequential" else format_comparison
        click.echo("\n" + formatted(comparison))
    for path in write(rep, out or run_dirs[0], plots=not no_plots):
        click.echo(f"wrote {path}")


@main.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the attribution as JSON.")
@click.option("--allow-incomplete", is_flag=True, help=ALLOW_INCOMPLETE_HELP)
def diagnose(run_dirs, as_json, allow_incomplete) -> None:
    """Per-episode failure attribution: no choice, wrong choice, execution failure, dwell never reached,
    validity error."""
    import json

    from labference_ros.reporting.diagnose import diagnose as run_diagnose, format_diagnosis
    from labference_ros.reporting.identity import IdentityMismatch

    _check_records(run_dirs, allow_incomplete)
    try:
        d = run_diagnose(run_dirs)
    except IdentityMismatch as exc:
        raise click.ClickException(str(exc))
    click.echo(json.dumps(d, indent=1, sort_keys=True) if as_json else format_diagnosis(d))


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def agreement(run_dir, as_json) -> None:
    """Compare a rehearsal run's two referees episode by episode (weighing_rehearsal.launch.py): the
    sensor-only referee's scores.json and events.jsonl against the shadow referee's shadow/ ones, on
    every opportunity's legal set, first choice, correctness, execution and report, on completion,
    obligations, supported standards, violations and every category's count, and on the validity
    and safety events (by category and reason: one seen by one referee only is a difference; the
    sensor estimator's own uncertainty, e.g. a marker hidden by the arm, is listed, not compared).
    Exit status 0 when every episode agrees, 2 when one differs or cannot be compared."""
    import json

    from labference_ros.reporting.agreement import compare_run, format_agreement

    try:
        results = compare_run(run_dir)
    except ValueError as exc:
        raise click.ClickException(str(exc))
    if as_json:
        click.echo(json.dumps([{"episode": e.episode, "agrees": e.agrees, "differences": e.differences,
                                "problem": e.problem, "notes": e.notes} for e in results], indent=1))
    else:
        click.echo(format_agreement(results))
    sys.exit(0 if results and all(e.agrees for e in results) else 2)


@main.command("sim-real")
@click.argument("sim_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("real_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the estimate as JSON.")
def sim_real_command(sim_dir, real_dir, as_json) -> None:
    """Real success rate from simulated (or rehearsal) runs of a list and real runs of a random subset of it,
    matched by instance: a prediction-powered estimate (PPI++) with a 95% interval, beside the real runs'
    own Wilson interval. Assumptions in docs/reporting.md."""
    import json

    from labference_ros.reporting.sim_real import format_sim_real, sim_real

    _check_records([sim_dir, real_dir], False)
    try:
        r = sim_real([sim_dir], [real_dir])
    except ValueError as exc:
        raise click.ClickException(str(exc))
    click.echo(json.dumps(r, indent=1, sort_keys=True) if as_json else format_sim_real(r))


@main.group(cls=_Group)
def campaign() -> None:
    """Locked, resumable campaigns."""


@campaign.command("lock")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Lock file (default: SPEC.lock.json).")
def campaign_lock(spec, output) -> None:
    """Write the immutable lock of a campaign SPEC.yaml."""
    from pathlib import Path

    from labference_ros.campaign.lock import build_lock, write_lock

    path = Path(output or Path(spec).with_suffix(".lock.json"))
    try:
        lock = build_lock(Path(spec))
        write_lock(lock, path)
    except (FileExistsError, ValueError) as exc:
        raise click.ClickException(str(exc))
    n = sum(len(a["instances"]) for a in lock["arms"])
    click.echo(f"locked {lock['name']}: {len(lock['arms'])} arm(s), {n} episodes, "
               f"code dirty={lock['code']['dirty']}, lock {lock['lock_sha256'][:16]} -> {path}")


@campaign.command("plan")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False), required=False)
@click.option("--p0", type=click.FloatRange(0, 1), required=True, help="Success rate of the reference arm.")
@click.option("--p1", type=click.FloatRange(0, 1), required=True, help="Success rate of the candidate to detect.")
@click.option("--power", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.8, show_default=True,
              help="Probability of detecting the change (1 - beta).")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None,
              help="Type I error, two-sided (default: the spec's sequential alpha, else 0.05).")
@click.option("--episodes", type=click.IntRange(min=1), default=None,
              help="Give the interval width for this many episodes (default: the fixed-N answer).")
@click.option("--dry-run", is_flag=True, help="Print the plan without writing it into SPEC.")
def campaign_plan(spec, p0, p1, power, alpha, episodes, dry_run) -> None:
    """How many episodes per arm detect a change from P0 to P1 with the given power: fixed N (exact McNemar on
    paired episodes) and the sequential test's maximum and expected N; and the 95% interval width N episodes give.
    With SPEC.yaml the plan is appended to it as its `plan:` block, which `campaign lock` then hashes and holds
    the arms (or the sequential maximum) to."""
    from pathlib import Path

    import yaml

    from labference_ros.campaign.power import format_plan, plan_for_spec, write_plan

    try:
        parsed = yaml.safe_load(Path(spec).read_text(encoding="utf-8")) if spec else None
        if spec and not dry_run and isinstance(parsed, dict) and "plan" in parsed:
            raise ValueError(f"{spec} already has a plan; remove it to plan again")
        result = plan_for_spec(parsed if isinstance(parsed, dict) else None, p0, p1, alpha, power, episodes)
        click.echo(format_plan(result))
        if spec and not dry_run:
            write_plan(Path(spec), result)
            click.echo(f"wrote the plan into {spec}")
    except (ValueError, yaml.YAMLError) as exc:
        raise click.ClickException(str(exc).splitlines()[0])


@campaign.command("run")
@click.argument("lock_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--launcher", help="Launcher command line (default: $LABFERENCE_LAUNCHER or `labference launch`).")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Chunks run at once. 1 (default): one after another in this process. N > 1: on a local Dask "
                   "cluster of N worker processes bound to 127.0.0.1. With --scheduler: at most N at once "
                   "(default: the scheduler's worker threads).")
@click.option("--scheduler", metavar="ADDRESS",
              help="Use an existing Dask scheduler (e.g. tls://10.0.0.5:8786) instead of a local cluster; its "
                   "workers need the project at the locked code and dependency versions, not the campaign "
                   "directory: each chunk's files come back with its task.")
@click.option("--shared-dir/--ship-results", "shared_dir", default=None,
              help="Whether workers write into the campaign directory itself (a file system shared at the same "
                   "path) or run chunks in private directories whose files come back with the task. Default: "
                   "shared for --workers, shipped for --scheduler.")
@click.option("--keep-bags-on-worker", is_flag=True,
              help="With shipped results: leave bags (.mcap) on the worker; each attempt's worker_files.json "
                   "records host, path and sha256.")
@click.option("--secret", "secrets", multiple=True, metavar="NAME",
              help="An environment variable every chunk needs, never sent: each worker takes it from its own "
                   "environment or $LABFERENCE_SECRETS_FILE and refuses the chunk without it. Repeatable. "
                   "Variables whose names contain KEY, TOKEN, SECRET, PASSWORD or CREDENTIAL are never sent either.")
@click.option("--chunk-timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Stop a chunk's launcher after this long (a failed attempt; a later run redoes its episodes).")
def campaign_run(lock_file, launcher, workers, scheduler, shared_dir, keep_bags_on_worker, secrets,
                 chunk_timeout) -> None:
    """Run (or resume) the unfinished episodes of a locked campaign.

    Each running chunk gets its own ROS domain ($ROS_DOMAIN_ID + worker slot, at most 232; discovery on localhost);
    results do not depend on the number of workers. A killed run (even SIGKILL) takes its launchers
    with it; run again to resume.
    """
    import json
    import shlex
    from pathlib import Path

    from labference_ros.campaign.engine import NoWorkers
    from labference_ros.campaign.lock import LockMismatch, read_lock
    from labference_ros.campaign.runner import run_campaign

    try:
        cov = run_campaign(read_lock(Path(lock_file)), shlex.split(launcher) if launcher else None, log=click.echo,
                           workers=workers, scheduler=scheduler,
                           ship_results=None if shared_dir is None else not shared_dir, secrets=tuple(secrets),
                           chunk_timeout_s=chunk_timeout, keep_bags=keep_bags_on_worker)
    except (LockMismatch, ValueError) as exc:
        raise click.ClickException(str(exc))
    except (OSError, NoWorkers) as exc:  # e.g. the scheduler cannot be reached, or has no workers
        raise click.ClickException(f"cannot run the campaign: {exc}")
    click.echo(json.dumps(cov, indent=1, sort_keys=True))
    if not cov["complete"]:
        sys.exit(3)


@campaign.command("status")
@click.argument("lock_file", type=click.Path(exists=True, dir_okay=False))
def campaign_status(lock_file) -> None:
    """Coverage of a campaign: missing, duplicated and unexpected episodes; lock differences."""
    import json
    from pathlib import Path

    from labference_ros.campaign.lock import read_lock, verify
    from labference_ros.campaign.runner import coverage

    lock = read_lock(Path(lock_file))
    click.echo(json.dumps({"lock_differences": {k: list(v) for k, v in verify(lock).items()},
                           "coverage": coverage(lock)}, indent=1, sort_keys=True))


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("launch_file")
@click.argument("arguments", nargs=-1, type=click.UNPROCESSED)
@click.option("-s", "--show-args", is_flag=True, help="List the launch arguments and exit.")
@click.option("--substitute", "substitutes", multiple=True, metavar="EXE=MODULE_OR_FILE",
              help="Run a stand-in for a node executable (development and tests). A node that shares a "
                   "process with others (lab_sim+balance) then runs alone, and so do they: "
                   "--substitute balance=labference_ros.nodes.balance runs the two apart.")
def launch(launch_file: str, arguments: tuple[str, ...], show_args: bool, substitutes: tuple[str, ...]) -> None:
    """Start a graph (e.g. weighing_sim.launch.py) with name:=value arguments, as `ros2 launch` would.

    Every argument and the tested system's parameters are checked before any node starts.
    Without ROS_DOMAIN_ID the launch claims a free ROS domain (held while any of its
    processes lives) and prints it; with ROS_DOMAIN_ID it refuses (exit 1) when another
    launch holds that domain or nodes of this graph are already on it.

    \b
    Exit status:
      0  every episode ran and was scored
      1  the run could not start (settings the episode runner refused, too little free space,
         the ROS domain in use)
      2  usage error: a launch argument or system parameter is invalid (nothing started)
      3  every episode ran but at least one was not scored (evaluation-validity errors:
         one console line each, kinds in the final table, details in attempts.jsonl)
      4  stopped before every episode ran (a signal, a node died, or the run's own
         records could not be written, e.g. a full disk)
      128+N  the episode runner itself was killed by signal N
    """
    from labference_ros.domain_locks import DomainError
    from labference_ros.graphs import graph_for
    from labference_ros.launcher.arguments import LaunchArgumentError, describe_arguments
    from labference_ros.launcher.launch import launch as run_launch

    try:
        graph = graph_for(launch_file)
    except KeyError as exc:
        raise click.UsageError(exc.args[0]) from None
    if show_args:
        click.echo(describe_arguments(graph), nl=False)
        return
    stand_ins = {}
    for item in substitutes:
        exe, sep, target = item.partition("=")
        if not sep:
            raise click.UsageError(f"--substitute expects EXE=MODULE_OR_FILE, got {item!r}")
        stand_ins[exe] = target
    try:
        code = run_launch(launch_file, arguments, substitutes=stand_ins)
    except (LaunchArgumentError, ValueError) as exc:
        raise click.UsageError(str(exc)) from None
    except DomainError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(DOMAIN_REFUSED)
    sys.exit(code)


def _prefix_operation(text: str):
    """'add:std_10' -> add(std_10->pan); 'remove:std_20' -> remove(std_20->table)."""
    from labference_ros.core.operations import ADD, REMOVE, add, remove

    kind, _, obj = text.partition(":")
    if kind not in (ADD, REMOVE) or not obj:
        raise click.BadParameter(f"{text!r}: expected add:OBJECT or remove:OBJECT", param_hint="'--prefix'")
    return add(obj) if kind == ADD else remove(obj)


@main.command("diagnose-oracle")
@click.argument("population", type=click.Path(dir_okay=False))
@click.option("--system", required=True, help="Tested system (policy registry name), e.g. misreader.")
@click.option("--support", "supports", multiple=True, metavar="MODE:SITE[+MODE:SITE]",
              help="A support condition, e.g. replace:state, assist:state, replace:decision, replace:skill; "
                   "join supports with + for a joint condition. Repeat for several. The reference systems "
                   "expose: feedback_weighing's diagnostic readers state, decision, geometry, skill; "
                   "centrifuge_loading's and placement_recall's state and decision (placement_recall: the "
                   "target's hole by the rack's labels, the hole to retrieve from). Without any: the base branches alone (a checkpoint population's own scores).")
@click.option("--task", "task", default=DEFAULT_FAMILY, show_default=True,
              help="Task family of the population --new writes (feedback_weighing, centrifuge_loading, "
                   "placement_recall); a population file names its own.")
@click.option("--new", "new_instances", type=int, default=0, metavar="N",
              help="First write a population of N checkpoints (seed --seed) to POPULATION. For "
                   "centrifuge_loading: N controlled destination pairs, tube_a meant for a slot and seated "
                   "there or in the next slot (2N starts). For placement_recall: N balanced blocks, each the "
                   "target placed in every one of the twelve holes under every rack movement of the "
                   "condition (12 starts basic, 24 extended), the occluded transition after the handoff.")
@click.option("--condition", "task_condition",
              type=click.Choice(["basic", "extended", "basic-same", "basic-distinct", "extended-same",
                                 "extended-distinct"]), default="basic",
              show_default=True, help="Task condition of the instances --new generates (placement_recall: "
                                      "with its caps, e.g. extended-same).")
@click.option("--prefix", "prefix", multiple=True, metavar="TYPE:OBJECT",
              help="With --new: an operation carried out before the handoff in every checkpoint, e.g. "
                   "add:std_10 or remove:std_20 (repeat, in order). A prefix the instance cannot carry "
                   "out leaves that checkpoint preparation_failed, counted as unresolved.")
@click.option("--fixed-subgoal", is_flag=True,
              help="With --new: register the starts for the fixed-subgoal population K (paper eq. 6): every "
                   "branch gets the correct operation and the reference geometry supplied, and E_fixed "
                   "measures whether it is physically confirmed.")
@click.option("--seed", type=int, default=1,
              help="The seed of --new: task, layout and policy seed, as a launch's seed:=.")
@click.option("--budget-s", type=float, default=None, help="Sim seconds per branch.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), default=None,
              help="Also write the gain table as JSON; name it oracle_gains.json inside a run directory and "
                   "`labference report` over that directory puts it in report.html and report.json "
                   "(not in its terminal tables).")
@click.option("--records", "records_dir", type=click.Path(file_okay=False), default=None,
              help="Also write every branch's run records (run.json, events, observations, scores) under "
                   "this directory as RECORDS/<system>/<condition>/episodes/<checkpoint>/ (an empty or new directory); `labference report "
                   "RECORDS` reports each condition as its own cell (protocol checkpoint_continuation).")
@click.option("--safety", type=click.Choice(SAFETY_MODES), default="none", show_default=True,
              help="franka: every branch's chunks must keep the Panda's joint velocity and acceleration limits "
                   "and the cell's workspace box, as the policy bridge checks with safety:=franka; fr3 and panda: "
                   "that robot's limits, between rows too, and no contact with the cell's fixtures.")
def diagnose_oracle_command(population: str, system: str, supports: tuple[str, ...], task: str,
                            new_instances: int, task_condition: str, prefix: tuple[str, ...], fixed_subgoal: bool,
                            seed: int,
                            budget_s: float | None, out_file: str | None, records_dir: str | None,
                            safety: str) -> None:
    """Matched Oracle continuations from a checkpoint POPULATION: the base system and the
    same system with each registered support; prints gains (eq. 3) with counts,
    delivery and agreement rates. Without --support: the base branches alone."""
    import os

    os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering; must precede the first mujoco import
    from labference_ros.oracle.diagnose import DEFAULT_BUDGET_S, diagnose_oracle, format_table
    from labference_ros.oracle.supports import parse_condition
    from labference_ros.policies import available
    from labference_ros.tasks import available as families
    from labference_ros.tasks import family

    try:
        task = family(task).name
    except KeyError:
        raise click.BadParameter(f"{task!r} is not a task family ({', '.join(families())})",
                                 param_hint="'--task'") from None
    if system not in available(task):
        raise click.BadParameter(f"{system!r} is not a registered tested system ({', '.join(available(task))})",
                                 param_hint="'--system'")
    for text in supports:
        try:
            parse_condition(text)
        except (ValueError, KeyError) as exc:
            raise click.BadParameter(str(exc), param_hint="'--support'") from None

    from pathlib import Path

    if records_dir and Path(records_dir).is_dir() and any(Path(records_dir).iterdir()):
        raise click.BadParameter(f"{records_dir} is not empty: branch records go to a new or empty directory, "
                                 "never appended to an earlier run's", param_hint="'--records'")
    prefix_ops = [_prefix_operation(text) for text in prefix]
    fam = family(task)
    if new_instances and not fam.accepts_condition(task_condition):
        offered = [c for c in fam.conditions if fam.accepts_condition(c)]
        raise click.BadParameter(f"--new writes no {task_condition!r} population of {task} "
                                 f"(it writes: {', '.join(offered)})", param_hint="'--condition'")
    if (prefix_ops or fixed_subgoal) and not new_instances:
        raise click.BadParameter("--prefix and --fixed-subgoal shape the population --new writes; give --new N",
                                 param_hint="'--new'")
    if new_instances:
        from labference_ros.oracle.checkpoints import CheckpointSpec, population_from_instances, write_population

        starts = fam.checkpoint_starts(task_condition, new_instances, seed)
        if starts is not None and (prefix_ops or fixed_subgoal):
            raise click.BadParameter(f"--prefix and --fixed-subgoal shape populations of generated instances; "
                                     f"{task}'s --new writes its own registered starts", param_hint="'--task'")
        if starts is not None:
            write_population(population, [CheckpointSpec(cid, inst, ops, executed=executed)
                                          for cid, inst, ops, executed in starts])
        else:
            instances = fam.generate(task_condition, new_instances, **launch_seeds(seed))
            write_population(population, population_from_instances(instances, prefix=tuple(prefix_ops),
                                                                   fixed_subgoal=fixed_subgoal))
    result = diagnose_oracle(population, system, list(supports),
                             budget_s=DEFAULT_BUDGET_S if budget_s is None else budget_s, records_dir=records_dir,
                             safety=safety)
    click.echo(format_table(result))
    if out_file:
        from pathlib import Path

        from labference_ros.core.records import write_json_atomic
        from labference_ros.reporting.oracle_gains import gains_record

        Path(out_file).parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(Path(out_file), gains_record(result))
        click.echo(f"wrote {out_file}")
