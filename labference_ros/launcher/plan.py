"""From a graph description and its arguments to the command line of each node process."""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass

from labference_ros.graphs.graph import Graph, NodeSpec, resolve_parameters

COMPOSED_MODULE = "labference_ros.nodes.composed"


@dataclass(frozen=True)
class NodeProcess:
    name: str
    argv: tuple[str, ...]
    ends_graph: bool = False


def ros_value(value) -> str:
    """A parameter value as `-p name:=value` text that rcl parses back to the same type."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    # Single-quoted YAML: '0', '' and 'true' stay strings.
    return "'" + str(value).replace("'", "''") + "'"


def ros_args(name: str, parameters: dict, remappings) -> list[str]:
    args = ["--ros-args", "-r", f"__node:={name}"]
    for key, value in parameters.items():
        args += ["-p", f"{key}:={ros_value(value)}"]
    for src, dst in remappings:
        args += ["-r", f"{src}:={dst}"]
    return args


def node_processes(graph: Graph, arguments: dict[str, str], substitutes: dict[str, str] | None = None,
                   python: str = sys.executable) -> list[NodeProcess]:
    """``substitutes`` maps an executable to a stand-in (a module name or a .py file), e.g. in tests."""
    substitutes = dict(substitutes or {})
    unknown = set(substitutes) - {n.executable for n in graph.nodes}
    if unknown:
        raise ValueError(f"no node runs executable(s) {', '.join(sorted(unknown))} in {graph.name}")
    started = graph.started(arguments)
    groups: dict[str, list[NodeSpec]] = {}
    for node in started:
        if node.process:
            groups.setdefault(node.process, []).append(node)
    out = []
    for node in started:
        group = groups.get(node.process, [node])
        if len(group) > 1 and not any(n.executable in substitutes for n in group):
            if node is group[0]:
                out.append(_composed_process(group, arguments, python))
            continue
        target = substitutes.get(node.executable, node.module)
        # -u: unbuffered, so the prefixed output interleaves in the order it happened.
        head = [python, "-u", target] if target.endswith(".py") else [python, "-u", "-m", target]
        argv = head + ros_args(node.name, resolve_parameters(node, arguments), node.remappings)
        out.append(NodeProcess(node.name, tuple(argv), node.ends_graph))
    return out


def _composed_process(group: list[NodeSpec], arguments: dict[str, str], python: str) -> NodeProcess:
    """One process for the nodes of ``group`` (nodes/composed.py): its name joins theirs,
    and each node gets its own name and parameters as node arguments, not as the
    process's (a process-wide ``__node:=`` would rename every node in it)."""
    for node in group:
        if node.remappings:
            # A node's sampled inputs (nodes/sampled.py) live on a second node that takes
            # only the process-wide remappings, which a composed process has none of.
            raise ValueError(f"node {node.name} shares process {node.process!r}: "
                             "nodes that share a process take no remappings")
    name = "+".join(n.name for n in group)
    spec = [{"name": n.name, "executable": n.executable,
             "arguments": ros_args(n.name, resolve_parameters(n, arguments), ())} for n in group]
    argv = (python, "-u", "-m", COMPOSED_MODULE, name, json.dumps(spec))
    return NodeProcess(name, argv, any(n.ends_graph for n in group))
