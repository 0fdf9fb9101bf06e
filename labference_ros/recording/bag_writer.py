"""One episode's rosbag2 directory (MCAP storage, metadata.yaml version 9).

Messages are written as the exact CDR bytes that came off the wire, into zstd
MCAP chunks with each camera's images in chunks of their own
(recording/mcap_chunks.py), so the evaluator's topics read without touching an
image. Connections are added lazily (a topic that never published in the
episode is not in the bag), each with the QoS its publishers offered, so `ros2
bag play` recreates them faithfully (a latched tare stays latched), and with
its RIHS01 type hash in the channel metadata (`topic_type_hash`) and in
metadata.yaml (`type_description_hash`), as rosbag2 writes them. The
episode's identity is an MCAP metadata record from the first bytes on, so a
bag whose writer was killed can still be audited and rewritten closed
(recording/mcap_recover.py).
"""
from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass

from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

from .topics import typestore

CUSTOM_PREFIX = "labference."


@dataclass(frozen=True)
class OfferedQos:
    """A publisher's offered QoS as plain ints (rclpy and rosbag2 share the enum values)."""
    history: int = 3
    depth: int = 0
    reliability: int = 1
    durability: int = 2
    liveliness: int = 1

    def to_rosbags(self) -> Qos:
        infinite = QosTime(0x7FFFFFFF, 0xFFFFFFFF)
        return Qos(QosHistory(self.history), self.depth, QosReliability(self.reliability),
                   QosDurability(self.durability), infinite, infinite, QosLiveliness(self.liveliness),
                   infinite, False)


ROS_DISTRO = "kilted"
MCAP_FILE = "bag.mcap"
# The MCAP metadata record that carries custom_data while the bag is open.
START_METADATA = "labference"


def chunk_group(topic: str) -> str:
    """Each camera's images chunk alone; what the referee scores from and what it and
    the tested system said (the replay audit's topics) share one chunk stream, and the
    robot's streams and commands another, so an audit decompresses neither."""
    from .topics import EVALUATOR_TOPICS, camera_of, matches_any

    cam = camera_of(topic)
    if cam:
        return f"camera:{cam}"
    return "evaluator" if matches_any(topic, EVALUATOR_TOPICS) else "default"


def yaml_text(data) -> str:
    import io

    from ruamel.yaml import YAML

    yaml = YAML(typ="safe")
    yaml.default_flow_style = False
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


@dataclass
class Topic:
    name: str
    msgtype: str
    channel_id: int
    type_hash: str
    qos: list
    count: int = 0


class EpisodeBag:
    def __init__(self, path: str | pathlib.Path, custom_data: dict[str, object]):
        from .mcap_chunks import GroupedChunkWriter

        self.path = pathlib.Path(path)
        self.path.mkdir(parents=True, exist_ok=False)  # never write into someone else's bag
        self.custom: dict[str, str] = {}
        for key, value in custom_data.items():
            self.set_custom(key, value)
        self.file = open(self.path / MCAP_FILE, "xb")
        self.writer = GroupedChunkWriter(self.file)
        self.writer.add_metadata(START_METADATA, dict(self.custom))
        self.store = typestore()
        self.topics: dict[str, Topic] = {}
        self.schemas: dict[str, int] = {}
        self.connections = self.topics  # topic -> its channel (kept name: the recorder checks membership)
        self.counts: dict[str, int] = {}
        self.start_ns: int | None = None
        self.end_ns = 0
        self.closed = False

    def set_custom(self, key: str, value: object) -> None:
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        self.custom[CUSTOM_PREFIX + key] = text

    def has_type(self, msgtype: str) -> bool:
        return msgtype in self.store.fielddefs

    def add_topic(self, topic: str, msgtype: str, offered: list[OfferedQos] | tuple = (),
                  type_hash: str = "", msgdef: bytes | None = None, qos_dicts: list | None = None) -> None:
        """``type_hash``: RIHS01 as the publishers announced it; computed from the type otherwise.
        ``msgdef``/``qos_dicts``: taken as they are (rewriting another bag's channel)."""
        from rosbags.rosbag2.metadata import dump_qos_v9

        if topic in self.topics:
            return
        if msgtype not in self.schemas:
            if msgdef is None:
                msgdef = self.store.generate_msgdef(msgtype, ros_version=2)[0].encode()
            self.schemas[msgtype] = self.writer.add_schema(msgtype, "ros2msg", msgdef)
        qos = qos_dicts if qos_dicts is not None else dump_qos_v9([q.to_rosbags() for q in offered])
        type_hash = type_hash or self.store.hash_rihs01(msgtype)
        channel_id = self.writer.add_channel(topic, self.schemas[msgtype],
                                             {"offered_qos_profiles": yaml_text(qos).strip() if qos else "[]",
                                              "topic_type_hash": type_hash},
                                             group=chunk_group(topic))
        self.topics[topic] = Topic(topic, msgtype, channel_id, type_hash, qos)
        self.counts[topic] = 0

    def write(self, topic: str, log_time_ns: int, data: bytes) -> None:
        self.writer.add_message(self.topics[topic].channel_id, log_time_ns, data)
        self.counts[topic] += 1
        if self.start_ns is None or log_time_ns < self.start_ns:
            self.start_ns = log_time_ns
        self.end_ns = max(self.end_ns, log_time_ns)

    def info(self) -> dict:
        """metadata.yaml's rosbag2_bagfile_information (version 9)."""
        start = self.start_ns or 0
        duration = max(0, self.end_ns - start)
        total = sum(self.counts.values())
        return {
            "version": 9,
            "storage_identifier": "mcap",
            "relative_file_paths": [MCAP_FILE],
            "duration": {"nanoseconds": duration},
            "starting_time": {"nanoseconds_since_epoch": start},
            "message_count": total,
            "topics_with_message_count": [
                {"topic_metadata": {"name": t.name, "type": t.msgtype, "serialization_format": "cdr",
                                    "offered_qos_profiles": t.qos, "type_description_hash": t.type_hash},
                 "message_count": self.counts[t.name]}
                for t in self.topics.values()],
            # Chunk compression lives inside the storage (as rosbag2's zstd MCAP presets do).
            "compression_format": "",
            "compression_mode": "",
            "files": [{"path": MCAP_FILE, "starting_time": {"nanoseconds_since_epoch": start},
                       "duration": {"nanoseconds": duration}, "message_count": total}],
            "custom_data": dict(self.custom) or None,
            "ros_distro": ROS_DISTRO,
        }

    def close(self, **custom_data) -> None:
        """Write the MCAP summary and metadata.yaml; idempotent."""
        if self.closed:
            return
        for key, value in custom_data.items():
            self.set_custom(key, value)
        info = self.info()
        # rosbag2 keeps a copy of the bag's metadata inside the MCAP file too.
        self.writer.add_metadata("rosbag2", {"serialized_metadata": yaml_text(info).strip()})
        self.writer.finish()
        self.file.close()
        tmp = self.path / "metadata.yaml.tmp"
        tmp.write_text(yaml_text({"rosbag2_bagfile_information": info}), encoding="utf-8")
        tmp.replace(self.path / "metadata.yaml")
        self.closed = True


def custom_data(metadata: dict) -> dict[str, str]:
    """Our keys from a parsed metadata.yaml, prefix removed."""
    raw = (metadata.get("rosbag2_bagfile_information") or {}).get("custom_data") or {}
    return {k[len(CUSTOM_PREFIX):]: v for k, v in raw.items() if k.startswith(CUSTOM_PREFIX)}
