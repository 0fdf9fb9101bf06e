"""`labference launch <graph>.launch.py name:=value ...`: the embedded ROS 2 launch."""
from __future__ import annotations

import os
import pathlib
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from labference_ros.domain_locks import HELD_ENV, DomainClaim, claim_domain, ephemeral_port_note
from labference_ros.graphs import graph_for
from labference_ros.nodes.run_dir import RUN_DIR_ENV
from labference_ros.rosenv import discovery_environ, loopback_environ
from labference_ros.tasks import family as task_family

from .arguments import parse_launch_arguments
from .diskspace import NotEnoughSpace, check_free_space
from .plan import node_processes
from .shm import clean_dead_participants
from .supervisor import Supervisor
from .validate import check_output_dir, validate_run

EXIT_CANNOT_START = 1



def launch(launch_file: str, tokens: Sequence[str], substitutes: Mapping[str, str] | None = None,
           out: TextIO | None = None, grace_s: float = 10.0) -> int:
    """Start the graph, supervise it, clean up after it; the run's exit status.

    Raises KeyError (unknown launch file), LaunchArgumentError before anything starts,
    or domain_locks.DomainError when the ROS domain is taken; refuses a run that
    would not fit on its disk (exit status 1).
    """
    out = out or sys.stdout
    graph = graph_for(launch_file)
    arguments = parse_launch_arguments(graph, tokens)
    family = task_family(graph.task)
    validate_run(arguments, family)
    if arguments.get("free_space_check") == "true":
        try:
            check_free_space(check_output_dir(arguments) or Path.cwd(), arguments, _episodes(arguments, family))
        except NotEnoughSpace as exc:
            out.write(f"[launch] {exc}\n")
            out.flush()
            return EXIT_CANNOT_START
    claim = claim_domain(os.environ.get("ROS_DOMAIN_ID"))
    try:
        env = loopback_environ()
        env.update(discovery_environ(arguments.get("discovery", "localhost"), arguments.get("static_peers", "")))
        env["ROS_DOMAIN_ID"] = str(claim.domain_id)
        if "output_dir" in arguments:
            run_dir = claim_run_dir(arguments["output_dir"])
            arguments = {**arguments, "output_dir": str(run_dir)}
            env[RUN_DIR_ENV] = str(run_dir.resolve())
        nodes = node_processes(graph, arguments, substitutes=dict(substitutes or {}))
        return _run(graph, nodes, claim, env, out, grace_s)
    finally:
        claim.release()


def claim_run_dir(template: str) -> pathlib.Path:
    """The run directory, created here: ``{timestamp}`` becomes the start time, with a
    suffix when another launch took that second's directory first."""
    if "{timestamp}" not in template:
        return pathlib.Path(template)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1, 1000):
        path = pathlib.Path(template.replace("{timestamp}", stamp if n == 1 else f"{stamp}-{n}"))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise ValueError(f"output_dir: cannot create {path}: {exc.strerror}") from None
        return path
    raise ValueError(f"output_dir {template!r}: no free run directory name for {stamp}")


def _run(graph, nodes, claim: DomainClaim, env: dict, out: TextIO, grace_s: float) -> int:
    env[HELD_ENV] = "1"  # the nodes run under this launch's lock (inherited below)
    supervisor = Supervisor(nodes, env=env, out=out, grace_s=grace_s, pass_fds=(claim.fd,))
    how = "claimed a free one" if claim.chosen else "from ROS_DOMAIN_ID"
    supervisor.say(f"ROS domain {claim.domain_id} ({how}); join it with ROS_DOMAIN_ID={claim.domain_id} "
                   f"(e.g. `ROS_DOMAIN_ID={claim.domain_id} labference shell`)")
    if ephemeral_port_note(claim.domain_id):
        supervisor.say(f"note: {ephemeral_port_note(claim.domain_id)}")
    # Once the graph is down this process only reports and exits: a stop signal then
    # (a third SIGTERM) is ignored, so its exit status stays the run's.
    supervisor.ignore_late_signals = True
    outcome = supervisor.run()
    removed = clean_dead_participants()
    if removed:
        supervisor.say(f"removed {len(removed)} Fast DDS shared-memory files of dead participants")
    supervisor.say(f"graph ended ({outcome.ended_by}); exit status {outcome.exit_code}")
    return outcome.exit_code


def _episodes(arguments: Mapping[str, str], family) -> int:
    if arguments.get("instances"):
        return len(family.read_instances(arguments["instances"]))
    return int(arguments["episodes"])
