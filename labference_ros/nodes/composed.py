"""Several nodes in one process, one executor: what a component container does for
C++ nodes. The embedded launcher starts this for the nodes a graph description puts
in one `process` (graphs/graph.py): lab_sim and the balance in simulation, whose
100 Hz wrench and reading then stay in the process instead of crossing shared
memory and waking another process for every message.

    python -m labference_ros.nodes.composed NAME '[{"name": ..., "executable": ..., "arguments": [...]}, ...]'

Each node gets its own ROS arguments (`--ros-args -r __node:=NAME -p key:=value ...`),
not the process's: a process-wide `__node:=` would rename every node in it. A node
module that can share a process names its node class NODE.
"""
from __future__ import annotations

import importlib
import json
import os
import sys

from labference_ros.nodes.runtime import run_node

EXIT_USAGE = 2


def parse_spec(text: str) -> list[dict]:
    """The nodes to build, checked: a list of {name, executable, arguments}."""
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the node list is not JSON: {exc}") from None
    if not isinstance(spec, list) or not spec:
        raise ValueError("the node list must be a non-empty JSON list")
    for entry in spec:
        if not isinstance(entry, dict) or set(entry) != {"name", "executable", "arguments"}:
            raise ValueError(f"each node needs exactly name, executable and arguments: {entry!r}")
        if not isinstance(entry["arguments"], list) or not all(isinstance(a, str) for a in entry["arguments"]):
            raise ValueError(f"node {entry['name']!r}: arguments must be a list of strings")
    return spec


def node_class(executable: str):
    module = importlib.import_module(f"labference_ros.nodes.{executable}")
    cls = getattr(module, "NODE", None)
    if cls is None:
        raise ValueError(f"node executable {executable!r} cannot share a process (its module names no NODE)")
    return cls


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or argv[0].startswith("-"):
        print("usage: python -m labference_ros.nodes.composed NAME NODE_LIST_JSON [--ros-args ...]", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)
    name, text = argv[0], argv[1]
    os.environ.setdefault("MUJOCO_GL", "egl")  # before a node module imports MuJoCo
    try:
        classes = [(entry, node_class(entry["executable"])) for entry in parse_spec(text)]
    except (ValueError, ImportError) as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None

    def make_nodes():
        # use_global_arguments=False: each node takes only its own name and parameters.
        return tuple(cls(cli_args=entry["arguments"], use_global_arguments=False) for entry, cls in classes)

    raise SystemExit(run_node(make_nodes, [sys.argv[0], *argv[2:]], what=name))


if __name__ == "__main__":
    main()
