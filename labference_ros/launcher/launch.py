"""`labference launch <graph>.launch.py name:=value ...`: the embedded ROS 2 launch."""
from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from labference_ros.graphs import graph_for
from labference_ros.rosenv import loopback_environ
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

    Raises KeyError (unknown launch file) or LaunchArgumentError before anything starts;
    refuses a run that would not fit on its disk (exit status 1).
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
    nodes = node_processes(graph, arguments, substitutes=dict(substitutes or {}))
    supervisor = Supervisor(nodes, env=loopback_environ(), out=out, grace_s=grace_s)
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
