"""ROS-style launch arguments (`name:=value`) checked against a graph description."""
from __future__ import annotations

from collections.abc import Sequence

from labference_ros.graphs.graph import Graph, Param, typed


class LaunchArgumentError(ValueError):
    pass


def parse_launch_arguments(graph: Graph, tokens: Sequence[str]) -> dict[str, str]:
    """Defaults overridden by ``name:=value`` tokens; every value checked before anything starts."""
    values = graph.defaults()
    valid = ", ".join(a.name for a in graph.arguments)
    for token in tokens:
        name, sep, value = token.partition(":=")
        if not sep or not name:
            raise LaunchArgumentError(f"malformed launch argument {token!r}: expected name:=value "
                                      f"(valid names: {valid})")
        if name not in values:
            raise LaunchArgumentError(f"unknown launch argument {name!r} for {graph.launch_file}; "
                                      f"valid names: {valid}")
        choices = graph.argument(name).choices
        if choices and value not in choices:
            raise LaunchArgumentError(f"launch argument {name!r} must be one of {', '.join(choices)}; got {value!r}")
        values[name] = value
    # A value that cannot become its parameter's type fails here, not inside a node.
    for node in graph.nodes:
        for param in node.parameters.values():
            if isinstance(param, Param):
                try:
                    typed(values[param.argument], param.type)
                except ValueError:
                    raise LaunchArgumentError(f"launch argument {param.argument!r} must be {param.type.__name__}; "
                                              f"got {values[param.argument]!r}") from None
    return values


def describe_arguments(graph: Graph) -> str:
    """Like `ros2 launch -s`: every argument with its default and description."""
    lines = [f"Arguments of {graph.launch_file} (pass as name:=value):", ""]
    for arg in graph.arguments:
        lines.append(f"    '{arg.name}':")
        lines.append(f"        {arg.description}")
        if arg.choices:
            lines.append(f"        Valid choices are: {list(arg.choices)}")
        lines.append(f"        (default: '{arg.default}')")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
