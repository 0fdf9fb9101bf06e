"""Reading an episode bag back with rosbags (no rclpy, no simulator).

Every failure becomes a BagError whose message names the file and, where the
MCAP structure tells it, the byte offset: a killed recorder leaves an MCAP
without summary/footer and no metadata.yaml; a cut copy leaves a record that
runs past the end of the file.
"""
from __future__ import annotations

import pathlib
import struct
from collections.abc import Iterator

from ruamel.yaml import YAML

from .bag_writer import custom_data
from .topics import typestore

MCAP_MAGIC = b"\x89MCAP0\r\n"
OPCODES = {0x01: "header", 0x02: "footer", 0x03: "schema", 0x04: "channel", 0x05: "message", 0x06: "chunk",
           0x07: "message index", 0x08: "chunk index", 0x09: "attachment", 0x0B: "statistics",
           0x0C: "metadata", 0x0D: "metadata index", 0x0E: "summary offset", 0x0F: "data end"}
OP_FOOTER = 0x02


class BagError(Exception):
    """A bag that cannot be read; the message is meant for a person."""


def scan_mcap(path: pathlib.Path) -> str:
    """Walk the MCAP record framing; '' when intact, else what is wrong and where."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        if f.read(8) != MCAP_MAGIC:
            return f"{path}: byte 0: not an MCAP file (bad magic)"
        offset = 8
        while True:
            head = f.read(9)
            if len(head) < 9:
                return (f"{path}: truncated at byte {offset} of {size}: incomplete record header "
                        f"(no footer; the last complete record ends at byte {offset})")
            op, length = head[0], struct.unpack("<Q", head[1:])[0]
            if offset + 9 + length > size:
                kind = OPCODES.get(op, "unknown")
                return (f"{path}: truncated at byte {size}: {kind} record (opcode 0x{op:02x}) at byte {offset} "
                        f"declares {length} bytes but only {size - offset - 9} remain")
            f.seek(length, 1)
            offset += 9 + length
            if op == OP_FOOTER:
                if f.read(8) != MCAP_MAGIC:
                    return f"{path}: byte {offset}: footer not followed by the closing magic"
                return ""


def resolve_bag(path: str | pathlib.Path) -> pathlib.Path:
    """A rosbag2 directory from a bag dir, an episode dir (with bag/) or an .mcap file."""
    p = pathlib.Path(path)
    if p.is_file() and p.suffix == ".mcap":
        return p.parent
    if (p / "bag").is_dir():
        return p / "bag"
    if p.is_dir() and ((p / "metadata.yaml").exists() or any(p.glob("*.mcap"))):
        return p
    raise BagError(f"{p}: no rosbag2 directory here (expected metadata.yaml or *.mcap)")


def check_bag(bag_dir: pathlib.Path) -> dict:
    """Structural check before reading; returns the parsed metadata.yaml."""
    mcaps = sorted(bag_dir.glob("*.mcap"))
    if not mcaps:
        raise BagError(f"{bag_dir}: no .mcap file in the bag directory")
    for m in mcaps:
        problem = scan_mcap(m)
        if problem:
            raise BagError(problem)
    meta_path = bag_dir / "metadata.yaml"
    if not meta_path.exists():
        raise BagError(f"{meta_path}: missing (the recorder did not close this bag)")
    try:
        meta = YAML(typ="safe").load(meta_path.read_text(encoding="utf-8"))
    except Exception as exc:
        raise BagError(f"{meta_path}: unreadable YAML: {exc}") from None
    if not isinstance(meta, dict) or "rosbag2_bagfile_information" not in meta:
        raise BagError(f"{meta_path}: not a rosbag2 metadata file")
    return meta


class EpisodeBagReader:
    """Deserialized messages of one episode bag, in log-time order."""

    def __init__(self, path: str | pathlib.Path):
        self.dir = resolve_bag(path)
        self.metadata = check_bag(self.dir)
        self.custom = custom_data(self.metadata)

    def topics(self) -> dict[str, str]:
        info = self.metadata["rosbag2_bagfile_information"]
        return {t["topic_metadata"]["name"]: t["topic_metadata"]["type"]
                for t in info.get("topics_with_message_count") or []}

    def messages(self, topics: set[str] | None = None) -> Iterator[tuple[str, int, object]]:
        """(topic, log_time_ns, message) for the chosen topics."""
        from rosbags.highlevel import AnyReader

        where = f"{self.dir}"
        try:
            with AnyReader([self.dir], default_typestore=typestore()) as reader:
                conns = [c for c in reader.connections if topics is None or c.topic in topics]
                n = 0
                for conn, t, raw in reader.messages(connections=conns):
                    n += 1
                    where = f"{self.dir}: message {n} on {conn.topic} (log time {t})"
                    yield conn.topic, t, reader.deserialize(raw, conn.msgtype)
        except BagError:
            raise
        except Exception as exc:  # rosbags raises many kinds on corrupt data; one clear message
            raise BagError(f"{where}: cannot read: {type(exc).__name__}: {exc}") from None

    def raw_messages(self, topics: set[str] | None = None) -> Iterator[tuple[str, str, int, bytes]]:
        """(topic, msgtype, log_time_ns, cdr bytes)."""
        from rosbags.highlevel import AnyReader

        try:
            with AnyReader([self.dir], default_typestore=typestore()) as reader:
                conns = [c for c in reader.connections if topics is None or c.topic in topics]
                for conn, t, raw in reader.messages(connections=conns):
                    yield conn.topic, conn.msgtype, t, raw
        except Exception as exc:
            raise BagError(f"{self.dir}: cannot read: {type(exc).__name__}: {exc}") from None
