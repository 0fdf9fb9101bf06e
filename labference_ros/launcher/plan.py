"""From a graph description and its arguments to the command line of each node process."""
from __future__ import annotations

import sys
from dataclasses import dataclass

from labference_ros.graphs.graph import Graph, resolve_parameters


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
    out = []
    for node in graph.started(arguments):
        target = substitutes.get(node.executable, node.module)
        # -u: unbuffered, so the prefixed output interleaves in the order it happened.
        head = [python, "-u", target] if target.endswith(".py") else [python, "-u", "-m", target]
        argv = head + ros_args(node.name, resolve_parameters(node, arguments), node.remappings)
        out.append(NodeProcess(node.name, tuple(argv), node.ends_graph))
    return out
