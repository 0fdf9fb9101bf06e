"""One episode's rosbag2 directory (MCAP storage, metadata.yaml version 9).

Messages are written as the exact CDR bytes that came off the wire. Connections
are added lazily (a topic that never published in the episode is not in the
bag), each with the QoS its publishers offered, so `ros2 bag play` recreates
them faithfully (a latched tare stays latched).
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


class EpisodeBag:
    def __init__(self, path: str | pathlib.Path, custom_data: dict[str, object]):
        from rosbags.rosbag2 import StoragePlugin, Writer

        self.path = pathlib.Path(path)
        self.writer = Writer(self.path, version=9, storage_plugin=StoragePlugin.MCAP)
        for key, value in custom_data.items():
            self.set_custom(key, value)
        self.writer.open()
        self.store = typestore()
        self.connections: dict[str, object] = {}
        self.counts: dict[str, int] = {}
        self.closed = False

    def set_custom(self, key: str, value: object) -> None:
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        self.writer.set_custom_data(CUSTOM_PREFIX + key, text)

    def has_type(self, msgtype: str) -> bool:
        return msgtype in self.store.fielddefs

    def add_topic(self, topic: str, msgtype: str, offered: list[OfferedQos] | tuple = ()) -> None:
        if topic in self.connections:
            return
        self.connections[topic] = self.writer.add_connection(
            topic, msgtype, typestore=self.store, offered_qos_profiles=[q.to_rosbags() for q in offered])
        self.counts[topic] = 0

    def write(self, topic: str, log_time_ns: int, data: bytes) -> None:
        self.writer.write(self.connections[topic], log_time_ns, data)
        self.counts[topic] += 1

    def close(self, **custom_data) -> None:
        """Write the MCAP summary and metadata.yaml; idempotent."""
        if self.closed:
            return
        for key, value in custom_data.items():
            self.set_custom(key, value)
        self.writer.close()
        self.closed = True


def custom_data(metadata: dict) -> dict[str, str]:
    """Our keys from a parsed metadata.yaml, prefix removed."""
    raw = (metadata.get("rosbag2_bagfile_information") or {}).get("custom_data") or {}
    return {k[len(CUSTOM_PREFIX):]: v for k, v in raw.items() if k.startswith(CUSTOM_PREFIX)}
