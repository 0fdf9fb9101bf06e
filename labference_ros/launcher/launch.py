"""`labference launch <graph>.launch.py name:=value ...`: the embedded ROS 2 launch."""
from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

from labference_ros.graphs import graph_for
from labference_ros.rosenv import loopback_environ

from .arguments import LaunchArgumentError, parse_launch_arguments
from .plan import node_processes
from .shm import clean_dead_participants
from .supervisor import Supervisor


def launch(launch_file: str, tokens: Sequence[str], substitutes: Mapping[str, str] | None = None,
           out: TextIO | None = None, grace_s: float = 10.0) -> int:
    """Start the graph, supervise it, clean up after it; the run's exit status.

    Raises KeyError (unknown launch file) or LaunchArgumentError before anything starts.
    """
    out = out or sys.stdout
    graph = graph_for(launch_file)
    arguments = parse_launch_arguments(graph, tokens)
    _check_system_params(arguments)
    nodes = node_processes(graph, arguments, substitutes=dict(substitutes or {}))
    supervisor = Supervisor(nodes, env=loopback_environ(), out=out, grace_s=grace_s)
    outcome = supervisor.run()
    removed = clean_dead_participants()
    if removed:
        supervisor.say(f"removed {len(removed)} Fast DDS shared-memory files of dead participants")
    supervisor.say(f"graph ended ({outcome.ended_by}); exit status {outcome.exit_code}")
    return outcome.exit_code


def _check_system_params(arguments: Mapping[str, str]) -> None:
    """An OpenPI profile that cannot be built is refused before any node starts
    (the bridge would otherwise die at construction)."""
    if arguments.get("system") != "openpi":
        return
    from labference_ros.core.action_spec import reference_joint_spec
    from labference_ros.policies.openpi_profiles import ProfileError, build_profile

    try:
        params = json.loads(arguments.get("system_params") or "{}")
    except ValueError as exc:
        raise LaunchArgumentError(f"system_params is not valid JSON: {exc}") from None
    try:
        build_profile(params, reference_joint_spec())
    except (ProfileError, TypeError, AttributeError) as exc:
        raise LaunchArgumentError(f"system_params: {exc}") from None
