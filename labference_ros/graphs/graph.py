"""The vocabulary of a graph description: launch arguments, parameters and nodes.

One description feeds both the generated ROS 2 launch file (graphs/launchgen.py)
and the embedded launcher (launcher/), so the two cannot drift apart.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LaunchArgument:
    name: str
    default: str  # launch arguments are strings; nodes get them typed via Param
    description: str
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Param:
    """A node parameter taken from a launch argument, converted to ``type``."""

    argument: str
    type: type = str


@dataclass(frozen=True)
class NodeSpec:
    name: str
    executable: str  # console script in lib/labference; module labference_ros.nodes.<executable>
    parameters: dict[str, object] = field(default_factory=dict)  # value: Param or a literal
    remappings: tuple[tuple[str, str], ...] = ()
    # The node whose exit ends the graph and whose exit code is the run's exit code.
    ends_graph: bool = False
    # A boolean launch argument that must be true for the node to start ("" = always).
    when: str = ""
    # Nodes with the same non-empty `process` run in one OS process under the embedded
    # launcher (as components share a container), unless a test substitutes one of them:
    # their messages to each other then stay in the process instead of crossing shared
    # memory and waking another process (launcher/plan.py, nodes/composed.py).
    process: str = ""

    @property
    def module(self) -> str:
        return f"labference_ros.nodes.{self.executable}"


@dataclass(frozen=True)
class Graph:
    name: str
    description: str
    package: str
    arguments: tuple[LaunchArgument, ...]
    nodes: tuple[NodeSpec, ...]
    task: str = ""  # the task family its episodes belong to (labference_ros.tasks)

    def started(self, arguments: dict[str, str]) -> tuple[NodeSpec, ...]:
        """The nodes that start with these (validated) launch argument values."""
        return tuple(n for n in self.nodes if not n.when or typed(arguments[n.when], bool))

    @property
    def launch_file(self) -> str:
        return f"{self.name}.launch.py"

    def argument(self, name: str) -> LaunchArgument:
        for arg in self.arguments:
            if arg.name == name:
                return arg
        raise KeyError(name)

    def defaults(self) -> dict[str, str]:
        return {a.name: a.default for a in self.arguments}


# The nodes that load a task family (their `task` parameter).
TASK_AWARE_NODES = ("lab_sim", "referee", "policy_bridge", "recorder", "episode_runner", "oracle")


def for_task(nodes, task: str, leave_out=()) -> tuple[NodeSpec, ...]:
    """Another family's graph from a graph's nodes: every task-aware node loads `task`,
    the nodes named in leave_out are dropped."""
    out = []
    for node in nodes:
        if node.name in leave_out:
            continue
        if node.name in TASK_AWARE_NODES:
            node = dataclasses.replace(node, parameters={**node.parameters, "task": task})
        out.append(node)
    return tuple(out)


def typed(value: str, kind: type):
    """A launch argument's string as the parameter type a node declares."""
    if kind is bool:
        low = value.strip().lower()
        if low not in ("true", "false"):
            raise ValueError(f"expected true or false, got {value!r}")
        return low == "true"
    if kind is int:
        return int(value)
    if kind is float:
        return float(value)
    return value


def resolve_parameters(node: NodeSpec, arguments: dict[str, str]) -> dict[str, object]:
    """The node's parameters with launch arguments substituted and typed."""
    out = {}
    for key, value in node.parameters.items():
        out[key] = typed(arguments[value.argument], value.type) if isinstance(value, Param) else value
    return out
