"""franka_msgs built into the embedded environment (env/franka_msgs, franka_ros2's own
definition files) has the type hashes a robot PC's franka_msgs announces: the hash rclpy's
type support carries equals the one computed from the definitions by an independent
implementation (rosbags), for every message and every action part the project uses."""
from __future__ import annotations

import json
import re
import pathlib
import subprocess
import sys

from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from labference_ros.rosenv import loopback_environ

DEFINITIONS = pathlib.Path(__file__).resolve().parents[2] / "env" / "franka_msgs"
MESSAGES = ("CollisionIndicators", "Elbow", "Errors", "GraspEpsilon", "FrankaRobotState")
ACTIONS = ("Grasp", "Homing", "Move")
PARTS = ("Goal", "Result", "Feedback")

# What the middleware announces for a publisher of each type.
PROBE = """
import json, importlib
from labference_ros.nodes.runtime import init_ros
rclpy = init_ros([])
node = rclpy.create_node("franka_msgs_hash_probe")
hashes = {}
for i, name in enumerate(%r):
    package, kind, rest = name.split("/")
    module = importlib.import_module(f"{package}.{kind}")
    cls = getattr(module, rest) if kind == "msg" else getattr(getattr(module, rest.split("_")[0]), rest.split("_")[1])
    topic = f"/franka_msgs_hash_probe_{i}"
    node.create_publisher(cls, topic, 1)
    hashes[name] = str(node.get_publishers_info_by_topic(topic)[0].topic_type_hash)
print(json.dumps(hashes))
"""


def independent_hashes() -> dict[str, str]:
    store = get_typestore(Stores.ROS2_KILTED)
    types = {}
    for name in MESSAGES:
        types.update(get_types_from_msg((DEFINITIONS / "msg" / f"{name}.msg").read_text(),
                                        f"franka_msgs/msg/{name}"))
    for name in ACTIONS:
        sections = re.split(r"^---[ \t]*$", (DEFINITIONS / "action" / f"{name}.action").read_text(), flags=re.M)
        for part, text in zip(PARTS, sections):
            # rosidl resolves a bare type in an action to the package's msg/ (rosbags to action/)
            text = re.sub(rf"^({'|'.join(MESSAGES)})\b", r"franka_msgs/msg/\1", text, flags=re.M)
            types.update(get_types_from_msg(text, f"franka_msgs/action/{name}_{part}"))
    store.register(types)
    return {name: store.hash_rihs01(name) for name in types}


def test_every_franka_msgs_type_hash_equals_the_one_computed_from_franka_ros2s_definitions():
    expected = independent_hashes()
    assert len(expected) == len(MESSAGES) + len(ACTIONS) * len(PARTS)
    out = subprocess.run([sys.executable, "-c", PROBE % (sorted(expected),)], env=loopback_environ(),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    announced = json.loads(out.stdout.strip().splitlines()[-1])
    assert announced == expected


def test_the_hash_computation_tells_a_changed_definition_apart():
    # The comparison above could not pass by accident: one field more is another hash.
    store = get_typestore(Stores.ROS2_KILTED)
    text = (DEFINITIONS / "msg" / "GraspEpsilon.msg").read_text()
    store.register(get_types_from_msg(text, "franka_msgs/msg/GraspEpsilon"))
    other = get_typestore(Stores.ROS2_KILTED)
    other.register(get_types_from_msg(text + "\nfloat64 extra\n", "franka_msgs/msg/GraspEpsilon"))
    assert store.hash_rihs01("franka_msgs/msg/GraspEpsilon") != other.hash_rihs01("franka_msgs/msg/GraspEpsilon")
