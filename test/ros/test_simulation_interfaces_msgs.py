"""simulation_interfaces built into the embedded environment: the 2.1.0 release's exact
definitions (env/simulation_interfaces), and every type's hash as the middleware
announces it equals the hash of those definitions computed independently (rosbags)."""
from __future__ import annotations

import hashlib
import pathlib
import re
import subprocess
import sys

from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.msg import get_types_from_msg

from labference_ros.rosenv import loopback_environ

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "env" / "simulation_interfaces"
# sha256 over `sha256sum` of msg/, srv/ and action/ (sorted paths) at the 2.1.0 release
# (ros-simulation/simulation_interfaces commit 172a1b1c1b3ced62b99cddae9b4143e5bcddee8a).
RELEASE_DIGEST = "d91f7dd3d645e20096ba3c30285e4219f0013fa690adc40d3dfdb2a93911f690"

# What the middleware announces for a publisher of each type (the hash rclpy's type support carries).
PROBE = """
import importlib, sys
from labference_ros.nodes.runtime import init_ros
rclpy = init_ros([])
node = rclpy.create_node("simulation_interfaces_hash_probe")
for i, name in enumerate(sys.argv[1:]):
    package, kind, rest = name.split("/")
    base, _, part = rest.partition("_")
    cls = getattr(importlib.import_module(f"{package}.{kind}"), base)
    cls = getattr(cls, part) if part else cls
    topic = f"/hash_probe_{i}"
    node.create_publisher(cls, topic, 1)
    print(name, node.get_publishers_info_by_topic(topic)[0].topic_type_hash)
"""


def release_digest() -> str:
    lines = []
    for path in sorted(p for d in ("msg", "srv", "action") for p in (PACKAGE / d).iterdir()):
        rel = path.relative_to(PACKAGE).as_posix()
        lines.append(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {rel}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def definitions() -> dict[str, str]:
    """Message type name -> its definition: each msg, each service's request and response,
    each action's goal, result and feedback."""
    types = {}
    for path in sorted((PACKAGE / "msg").glob("*.msg")):
        types[f"simulation_interfaces/msg/{path.stem}"] = path.read_text()
    parts = {"srv": ("Request", "Response"), "action": ("Goal", "Result", "Feedback")}
    for kind, names in parts.items():
        for path in sorted((PACKAGE / kind).glob(f"*.{kind}")):
            sections = re.split(r"^---[ \t]*$", path.read_text(), flags=re.MULTILINE)
            assert len(sections) == len(names), path
            for part, text in zip(names, sections):
                types[f"simulation_interfaces/{kind}/{path.stem}_{part}"] = text
    return types


def test_the_definitions_are_the_releases():
    assert release_digest() == RELEASE_DIGEST


def test_every_type_hash_equals_the_definitions():
    store = get_typestore(Stores.ROS2_KILTED)
    types = definitions()
    for name, text in types.items():
        # Parsed as a msg of the package (rosbags resolves the package's own types so), registered
        # under its own name: the type name is part of the hash.
        package, _kind, base = name.split("/")
        (fields,) = get_types_from_msg(text, f"{package}/msg/{base}").values()
        store.register({name: fields})
    expected = {name: store.hash_rihs01(name) for name in types}
    out = subprocess.run([sys.executable, "-c", PROBE, *types], env=loopback_environ(), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    announced = dict(line.split(" ", 1) for line in out.stdout.splitlines() if line.startswith("simulation_"))
    assert announced == expected
    assert len(announced) == 15 + 2 * 22 + 3
