"""Several nodes in one process, one executor: what a component container does for
C++ nodes. The embedded launcher starts this for the nodes a graph description puts
in one `process` (graphs/graph.py): their messages to each other then stay in the
process instead of crossing shared memory and waking another process. The weighing
graph runs lab_sim and the balance so (graphs/weighing_sim.py); every publisher of the
process then shares one shared-memory segment, the camera frames' too.

    python -m labference_ros.nodes.composed NAME '[{"name": ..., "executable": ..., "arguments": [...]}, ...]'

Each node gets its own ROS arguments (`--ros-args -r __node:=NAME -p key:=value ...`),
not the process's: a process-wide `__node:=` would rename every node in it. A node
module that can share a process names its node class NODE.
"""
from __future__ import annotations

import importlib
import json
import os
import re
import sys

from labference_ros.errorlog import describe
from labference_ros.nodes.runtime import EXIT_NODE_FAILED, run_node

EXIT_USAGE = 2
EXECUTABLE = re.compile(r"[a-z_][a-z0-9_]*")  # a module name in labference_ros.nodes


def parse_spec(text: str) -> list[dict]:
    """The nodes to build, checked: a list of {name, executable, arguments}, names unique.

    A node's arguments may remap topics, but only for a node without sampled inputs
    (nodes/sampled.py: their reader node takes process-wide arguments only, and this
    process has none); graph descriptions give shared nodes no remappings (launcher/plan.py).
    """
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the node list is not JSON: {exc}") from None
    if not isinstance(spec, list) or not spec:
        raise ValueError("the node list must be a non-empty JSON list")
    for entry in spec:
        if not isinstance(entry, dict) or set(entry) != {"name", "executable", "arguments"}:
            raise ValueError(f"each node needs exactly name, executable and arguments: {entry!r}")
        if not isinstance(entry["name"], str) or not entry["name"]:
            raise ValueError(f"a node's name must be a non-empty string: {entry['name']!r}")
        if not isinstance(entry["executable"], str) or not EXECUTABLE.fullmatch(entry["executable"]):
            raise ValueError(f"node {entry['name']!r}: executable must name a module of labference_ros.nodes "
                             f"(e.g. 'balance'), got {entry['executable']!r}")
        if not isinstance(entry["arguments"], list) or not all(isinstance(a, str) for a in entry["arguments"]):
            raise ValueError(f"node {entry['name']!r}: arguments must be a list of strings")
    names = [entry["name"] for entry in spec]
    if len(set(names)) != len(names):
        raise ValueError(f"node names must be unique in a process: {names}")
    return spec


def node_class(executable: str):
    module_name = f"labference_ros.nodes.{executable}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise  # the module exists but lacks a dependency: not a usage error
        raise ValueError(f"no node executable {executable!r}") from None
    cls = getattr(module, "NODE", None)
    if cls is None:
        raise ValueError(f"node executable {executable!r} cannot share a process (its module names no NODE)")
    return cls


def build(classes) -> tuple:
    """The nodes, in order; when one cannot be built, those built before it are closed and
    destroyed (last first) before the error goes on."""
    built = []
    try:
        for entry, cls in classes:
            # use_global_arguments=False: each node takes only its own name and parameters.
            built.append(cls(cli_args=entry["arguments"], use_global_arguments=False))
    except BaseException:
        for node in reversed(built):
            close = getattr(node, "close", None)
            try:
                if callable(close):
                    close()
                node.destroy_node()
            except Exception:  # the construction error is the one to report
                pass
        raise
    return tuple(built)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0].startswith("-"):
        # No process-wide ROS arguments either: they would reach only the nodes' sampled
        # input readers, not the nodes themselves.
        print("usage: python -m labference_ros.nodes.composed NAME NODE_LIST_JSON\n"
              '  NODE_LIST_JSON: [{"name": "lab_sim", "executable": "lab_sim", '
              '"arguments": ["--ros-args", "-r", "__node:=lab_sim", "-p", "camera_rate:=10.0"]}, ...]',
              file=sys.stderr)
        raise SystemExit(EXIT_USAGE)
    name, text = argv
    os.environ.setdefault("MUJOCO_GL", "egl")  # before a node module imports MuJoCo
    try:
        classes = [(entry, node_class(entry["executable"])) for entry in parse_spec(text)]
    except ValueError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None
    except Exception as exc:  # a node module that fails to import: its traceback goes to the log
        print(describe(name, exc), file=sys.stderr)
        raise SystemExit(EXIT_NODE_FAILED) from None
    raise SystemExit(run_node(lambda: build(classes), [sys.argv[0]], what=name))


if __name__ == "__main__":
    main()
