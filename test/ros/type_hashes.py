"""Type hashes of an interface package built into the embedded environment, two ways:
as the middleware announces them (rclpy's type support, in a probe process) and as an
independent implementation (rosbags) computes them from the definition files."""
from __future__ import annotations

import hashlib
import pathlib
import re
import subprocess
import sys

from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.msg import get_types_from_msg

from labference_ros.rosenv import loopback_environ

ENV = pathlib.Path(__file__).resolve().parents[2] / "env"
PARTS = {"srv": ("Request", "Response"), "action": ("Goal", "Result", "Feedback")}

# What the middleware announces for a publisher of each type (the hash rclpy's type support carries).
PROBE = """
import importlib, sys
from labference_ros.nodes.runtime import init_ros
rclpy = init_ros([])
node = rclpy.create_node("type_hash_probe")
for i, name in enumerate(sys.argv[1:]):
    package, kind, rest = name.split("/")
    base, _, part = rest.partition("_")
    cls = getattr(importlib.import_module(f"{package}.{kind}"), base)
    cls = getattr(cls, part) if part else cls
    topic = f"/hash_probe_{i}"
    node.create_publisher(cls, topic, 1)
    print("hash", name, node.get_publishers_info_by_topic(topic)[0].topic_type_hash)
"""


def files_digest(package: str) -> str:
    """sha256 over `sha256sum`'s lines for env/<package>'s msg/, srv/ and action/ files (sorted paths)."""
    folder = ENV / package
    lines = []
    for path in sorted(p for d in ("msg", "srv", "action") if (folder / d).is_dir() for p in (folder / d).iterdir()):
        lines.append(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.relative_to(folder).as_posix()}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def definitions(package: str) -> dict[str, str]:
    """Message type name -> its definition, for env/<package>: each msg, each service's request
    and response, each action's goal, result and feedback."""
    folder = ENV / package
    types = {}
    for path in sorted((folder / "msg").glob("*.msg")):
        types[f"{package}/msg/{path.stem}"] = path.read_text()
    for kind, names in PARTS.items():
        for path in sorted((folder / kind).glob(f"*.{kind}")):
            sections = re.split(r"^---[ \t]*$", path.read_text(), flags=re.MULTILINE)
            assert len(sections) == len(names), path
            for part, text in zip(names, sections):
                types[f"{package}/{kind}/{path.stem}_{part}"] = text
    return types


def computed_hashes(types: dict[str, str]) -> dict[str, str]:
    """RIHS01 hashes rosbags computes from the definitions."""
    store = get_typestore(Stores.ROS2_KILTED)
    for name, text in types.items():
        # Parsed as a msg of the package (rosbags resolves the package's own types so), registered
        # under its own name: the type name is part of the hash.
        package, _kind, base = name.split("/")
        (fields,) = get_types_from_msg(text, f"{package}/msg/{base}").values()
        store.register({name: fields})
    return {name: store.hash_rihs01(name) for name in types}


def announced_hashes(names) -> dict[str, str]:
    """The hashes rclpy announces for publishers of these types."""
    out = subprocess.run([sys.executable, "-c", PROBE, *names], env=loopback_environ(), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return dict(line.split(" ", 2)[1:] for line in out.stdout.splitlines() if line.startswith("hash "))
