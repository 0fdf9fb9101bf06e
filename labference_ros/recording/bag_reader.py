"""Reading an episode bag back with rosbags (no rclpy, no simulator).

Every failure becomes a BagError whose message names the file and, where the
MCAP structure tells it, the byte offset: a killed recorder leaves an MCAP
without summary/footer and no metadata.yaml; a cut copy leaves a record that
runs past the end of the file.
"""
from __future__ import annotations

import functools
import importlib
import pathlib
import struct
from collections.abc import Iterator

from .bag_writer import custom_data
from .topics import typestore

MCAP_MAGIC = b"\x89MCAP0\r\n"
OPCODES = {0x01: "header", 0x02: "footer", 0x03: "schema", 0x04: "channel", 0x05: "message", 0x06: "chunk",
           0x07: "message index", 0x08: "chunk index", 0x09: "attachment", 0x0B: "statistics",
           0x0C: "metadata", 0x0D: "metadata index", 0x0E: "summary offset", 0x0F: "data end"}
OP_FOOTER = 0x02


class BagError(Exception):
    """A bag that cannot be read; the message is meant for a person."""


class BagAltered(BagError):
    """A bag whose content is not what its writer wrote: bytes that fail their CRC, or
    a closed bag (metadata.yaml written) holding less than its metadata records."""


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
                return (f"{path}: truncated at byte {size}: incomplete record header at byte {offset} "
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


def _shortfall(recorded: dict[str, int], held: dict[str, int]) -> str:
    """Per topic, what the file holds against what metadata.yaml records."""
    short = [f"{t} {held.get(t, 0)} of {n}" for t, n in sorted(recorded.items()) if held.get(t, 0) < n]
    extra = [f"{t} {n} not recorded" if t not in recorded else f"{t} {n} of {recorded[t]}"
             for t, n in sorted(held.items()) if n > recorded.get(t, 0)]
    missing = sum(max(0, n - held.get(t, 0)) for t, n in recorded.items())
    parts = []
    if short:
        parts.append(f"missing {missing} messages ({', '.join(short)})")
    if extra:
        parts.append(f"more than recorded ({', '.join(extra)})")
    return "; ".join(parts) or "every recorded message is still there"


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


def load_yaml(text: str):
    """Safe YAML with libyaml's C parser when present (a bag's metadata.yaml is long)."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def read_metadata(bag_dir: pathlib.Path) -> dict:
    """The parsed metadata.yaml of a bag whose files are intact."""
    meta_path = bag_dir / "metadata.yaml"
    if not meta_path.exists():
        raise BagError(f"{meta_path}: missing (the recorder did not close this bag)")
    try:
        meta = load_yaml(meta_path.read_text(encoding="utf-8"))
    except Exception as exc:
        raise BagError(f"{meta_path}: unreadable YAML: {exc}") from None
    if not isinstance(meta, dict) or "rosbag2_bagfile_information" not in meta:
        raise BagError(f"{meta_path}: not a rosbag2 metadata file")
    return meta


def _single_mcap(bag_dir: pathlib.Path) -> pathlib.Path:
    mcaps = sorted(bag_dir.glob("*.mcap"))
    if not mcaps:
        raise BagError(f"{bag_dir}: no .mcap file in the bag directory")
    if len(mcaps) > 1:
        raise BagError(f"{bag_dir}: {len(mcaps)} .mcap files; an episode bag has one")
    return mcaps[0]


@functools.lru_cache(maxsize=None)
def rclpy_class(msgtype: str):
    """The generated rclpy message class of 'pkg/msg/Name' (C deserialization)."""
    pkg, kind, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{pkg}.{kind}"), name)


class EpisodeBagReader:
    """Messages of one episode bag, in log-time order.

    A closed bag's bytes are checked first (CRCs; a bag whose bytes were altered
    is refused naming the chunk) and its message counts against metadata.yaml's.
    A bag whose writer was killed (no footer and no metadata.yaml) is read up to
    its last complete record; ``truncated`` then says what was lost. A bag without
    footer whose metadata.yaml says it was closed was cut or overwritten after
    the fact: refused (BagAltered), naming the messages it lacks.
    Only the chunks that hold the requested topics are decompressed.
    """

    def __init__(self, path: str | pathlib.Path, verify: bool = True):
        from .mcap_recover import IntegrityError, read_unclosed, verify_integrity

        self.dir = resolve_bag(path)
        self.mcap = _single_mcap(self.dir)
        self.truncated = ""
        self.unclosed = None
        self.summary = None
        problem = scan_mcap(self.mcap)
        try:
            if problem and "not an MCAP file" in problem:
                raise BagError(problem)
            if problem and (self.dir / "metadata.yaml").exists():
                raise BagAltered(self._closed_but_cut(problem, read_unclosed))
            if problem:
                self.unclosed = read_unclosed(self.mcap)
                if not self.unclosed.channels:
                    raise BagError(f"{problem} (no channel was written: nothing to read)")
                self.truncated = f"{problem}; {self.unclosed.describe()}"
            elif verify:
                self.summary = verify_integrity(self.mcap)
        except IntegrityError as exc:
            raise BagAltered(str(exc)) from None
        if self.unclosed is not None:
            from .bag_writer import START_METADATA

            start = self.unclosed.metadata.get(START_METADATA, {})
            self.metadata = {"rosbag2_bagfile_information": {"custom_data": start, "topics_with_message_count": [
                {"topic_metadata": {"name": c.topic, "type": self.unclosed.schemas[c.schema_id].name,
                                    "type_description_hash": c.metadata.get("topic_type_hash", "")}}
                for c in self.unclosed.channels.values() if c.schema_id in self.unclosed.schemas]}}
        else:
            self.metadata = read_metadata(self.dir)  # its one MCAP's framing was scanned above
            if self.summary is not None:
                self._check_counts(self.summary)
        self.custom = custom_data(self.metadata)

    def _recorded_counts(self) -> dict[str, int]:
        info = read_metadata(self.dir)["rosbag2_bagfile_information"]
        return {t["topic_metadata"]["name"]: int(t.get("message_count") or 0)
                for t in info.get("topics_with_message_count") or []}

    def _closed_but_cut(self, problem: str, read_unclosed) -> str:
        """What a closed bag whose file lost its end (a cut, or bytes overwritten) lacks."""
        recorded = self._recorded_counts()
        try:
            u = read_unclosed(self.mcap)
            held: dict[str, int] = {}
            for channel_id, *_rest in u.messages:
                channel = u.channels.get(channel_id)
                if channel is not None:
                    held[channel.topic] = held.get(channel.topic, 0) + 1
            what = _shortfall(recorded, held)
        except Exception as exc:  # noqa: BLE001 - the altered bytes may not even parse
            what = f"its records cannot be read past the damage ({type(exc).__name__}: {exc})"
        return (f"{problem}; but {self.dir / 'metadata.yaml'} says the recorder closed this bag with "
                f"{sum(recorded.values())} messages: the bag was cut or overwritten after it was written; {what}")

    def _check_counts(self, summary) -> None:
        """metadata.yaml's message counts are the MCAP summary's (a rewritten file would differ)."""
        stats = getattr(summary, "statistics", None)
        if stats is None:
            return
        held: dict[str, int] = {}
        for channel_id, n in stats.channel_message_counts.items():
            channel = summary.channels.get(channel_id)
            if channel is not None:
                held[channel.topic] = held.get(channel.topic, 0) + n
        recorded = self._recorded_counts()
        if any(held.get(t, 0) != n for t, n in recorded.items()) or set(held) - set(recorded):
            raise BagAltered(f"{self.mcap}: its messages are not those {self.dir / 'metadata.yaml'} records "
                             f"({sum(held.values())} held, {sum(recorded.values())} recorded); "
                             f"{_shortfall(recorded, held)}; the bag was altered after it was written")

    def topics(self) -> dict[str, str]:
        info = self.metadata["rosbag2_bagfile_information"]
        return {t["topic_metadata"]["name"]: t["topic_metadata"]["type"]
                for t in info.get("topics_with_message_count") or []}

    def raw_messages(self, topics: set[str] | None = None) -> Iterator[tuple[str, str, int, bytes]]:
        """(topic, msgtype, log_time_ns, cdr bytes) for the chosen topics."""
        if self.unclosed is not None:
            u = self.unclosed
            for channel_id, log_time, _pub, data in u.messages:
                channel = u.channels.get(channel_id)
                if channel is None or (topics is not None and channel.topic not in topics):
                    continue
                yield channel.topic, u.schemas[channel.schema_id].name, log_time, data
            return
        from mcap.reader import make_reader

        from .mcap_recover import indexed_messages

        try:
            summary = self.summary
            if summary is None:
                with open(self.mcap, "rb") as f:
                    summary = self.summary = make_reader(f).get_summary()
            if summary is None or not summary.chunk_indexes:
                raise BagError(f"{self.mcap}: no chunk index (not written by a rosbag2 MCAP writer)")
            messages = indexed_messages(self.mcap, summary, topics)
        except BagError:
            raise
        except Exception as exc:  # corrupt data raises many kinds; one clear message
            raise BagError(f"{self.mcap}: cannot read: {type(exc).__name__}: {exc}") from None
        names = {s.id: s.name for s in summary.schemas.values()}
        for channel_id, log_time, _pub, data in messages:
            channel = summary.channels[channel_id]
            yield channel.topic, names.get(channel.schema_id, ""), log_time, data

    def messages(self, topics: set[str] | None = None, decoder: str = "rclpy",
                 direct: dict | None = None) -> Iterator[tuple[str, int, object]]:
        """(topic, log_time_ns, message). ``decoder``: 'rclpy' (the C type support: rclpy
        message objects) or 'rosbags' (pure Python, no ROS install needed). ``direct``
        maps type names to functions of the CDR bytes used instead (the audit's
        decoders straight to core measurements, labference_ros/cdr_views.py)."""
        direct = direct or {}
        if decoder == "rclpy":
            from rclpy.serialization import deserialize_message

            def decode(data, msgtype):
                return deserialize_message(data, rclpy_class(msgtype))
        else:
            store = typestore()

            def decode(data, msgtype):
                return store.deserialize_cdr(data, msgtype)
        for topic, msgtype, t, data in self.raw_messages(topics):
            try:
                reader = direct.get(msgtype)
                msg = reader(data) if reader is not None else decode(data, msgtype)
            except Exception as exc:  # noqa: BLE001 - undecodable bytes: name the message
                raise BagError(f"{self.mcap}: {topic} at log time {t}: cannot decode {msgtype}: "
                               f"{type(exc).__name__}: {exc}") from None
            yield topic, t, msg
