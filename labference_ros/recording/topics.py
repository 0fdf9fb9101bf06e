"""What the recorder records, and the type store that describes it.

The bag carries each type's .msg text and RIHS01 hash, so `ros2 bag info/play`
on a full ROS 2 install can use our custom types without this package.
"""
from __future__ import annotations

import fnmatch
import functools
import pathlib
import sys

# Fixed topics of the weighing graph (subscribed from the start, so a publisher
# that appears mid-episode cannot lose its first messages to discovery).
RECORDED_TOPICS: dict[str, str] = {
    "/clock": "rosgraph_msgs/msg/Clock",
    "/joint_states": "sensor_msgs/msg/JointState",
    "/balance/wrench": "geometry_msgs/msg/WrenchStamped",
    "/balance/tare": "geometry_msgs/msg/WrenchStamped",
    "/balance/reading": "labference/msg/BalanceReading",
    "/evaluator/world_state": "labference/msg/WorldState",
    # A real cell's: the world estimator's checked reading (the referee's there) and its marker input.
    "/evaluator/balance_reading": "labference/msg/BalanceReading",
    "/markers/poses": "labference/msg/MarkerDetections",
    "/referee/events": "labference/msg/RefereeEvent",
    "/referee/legal_set": "labference/msg/LegalSet",
    "/referee/opportunities": "labference/msg/DecisionOpportunity",
    "/referee/scores": "labference/msg/ScoreSnapshot",
    "/referee/receipts": "labference/msg/DeliveryReceipt",
    "/policy/receipts": "labference/msg/DeliveryReceipt",
    "/policy/action_chunks": "labference/msg/ActionChunk",
    "/panda_arm_controller/joint_trajectory": "trajectory_msgs/msg/JointTrajectory",
    "/panda_gripper/command": "labference/msg/GripperCommand",
    # The 3D scene for MCAP viewers (monitor:=true; lab_sim's /tf_static always).
    "/robot_description": "std_msgs/msg/String",
    "/tf": "tf2_msgs/msg/TFMessage",
    "/tf_static": "tf2_msgs/msg/TFMessage",
    "/referee/markers": "visualization_msgs/msg/MarkerArray",
}
CAMERAS = ("front", "wrist", "display")
for _cam in CAMERAS:
    RECORDED_TOPICS[f"/cameras/{_cam}/image_raw"] = "sensor_msgs/msg/Image"
    RECORDED_TOPICS[f"/cameras/{_cam}/camera_info"] = "sensor_msgs/msg/CameraInfo"

# Topics discovered at run time (type taken from the graph): extra cameras, Oracle outputs.
RECORDED_PATTERNS = ("/cameras/*", "/oracle/*", "/policy/*", "/referee/*", "/evaluator/*")

# What the referee scores from and what the evaluation's nodes said (the replay
# audit's inputs among them): chunked apart from the robot's streams and the
# cameras (bag_writer.chunk_group). The monitor's /referee/markers are a view.
EVALUATOR_TOPICS = ("/evaluator/*", "/balance/reading", "/policy/*", "/oracle/*", "/referee/events",
                    "/referee/legal_set", "/referee/opportunities", "/referee/scores", "/referee/receipts")

# Publishers that keep their last sample for late joiners (the tare, the robot
# description, static transforms).
LATCHED_TOPICS = ("/balance/tare", "/robot_description", "/tf_static")
# Latched topics that describe one episode: lab_sim publishes its tare and the static
# frames of the episode's layout at each reset, and the monitor its robot's static
# frames at the first joint state of each timeline. The recorder writes none of an
# earlier episode's samples into a later episode's bag.
EPISODE_LATCHED_TOPICS = ("/balance/tare", "/tf_static")

# Topics the audit re-scores from, published transient local (nodes.matching.
# measurement_qos, the receipts). The recorder asks for transient local too: DDS
# matches writer and reader separately, and a volatile reader loses what a writer
# sent before the writer side had matched it (under load, an episode's first second).
DURABLE_TOPICS = ("/balance/wrench", "/balance/reading", "/evaluator/world_state", "/evaluator/balance_reading",
                  "/policy/receipts", "/referee/receipts")


def wanted(topic: str) -> bool:
    return topic in RECORDED_TOPICS or matches_any(topic, RECORDED_PATTERNS)


def matches_any(topic: str, patterns) -> bool:
    return any(fnmatch.fnmatchcase(topic, p) for p in patterns)


def msg_dirs() -> list[pathlib.Path]:
    """Where our .msg sources live: the installed share dir first, then the source tree."""
    candidates = [pathlib.Path(sys.prefix) / "share" / "labference" / "msg",
                  pathlib.Path(__file__).resolve().parents[2] / "msg"]
    return [d for d in candidates if d.is_dir()]


@functools.lru_cache(maxsize=1)
def typestore():
    """ROS 2 Kilted standard types plus labference/msg/* registered from their .msg text."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_KILTED)
    dirs = msg_dirs()
    if not dirs:
        raise FileNotFoundError("labference .msg sources not found (share/labference/msg or msg/)")
    types: dict = {}
    for path in sorted(dirs[0].glob("*.msg")):
        types.update(get_types_from_msg(path.read_text(encoding="utf-8"), f"labference/msg/{path.stem}"))
    store.register(types)
    return store


def camera_of(topic: str) -> str | None:
    """'/cameras/front/image_raw' -> 'front'."""
    parts = topic.strip("/").split("/")
    if len(parts) == 3 and parts[0] == "cameras" and parts[2] == "image_raw":
        return parts[1]
    return None
