"""Integrity and recovery of episode MCAP files.

`verify_integrity` checks a closed file's bytes: the data section against the
CRC in its DataEnd record (one pass over the compressed bytes) and the summary
against the footer's CRC; when the data section differs it decompresses each
chunk to name the one whose bytes were altered.

`read_unclosed` reads a file whose writer died (no summary, no footer, maybe a
record cut short) up to its last complete record: schemas, channels, metadata
and every complete chunk, each chunk's CRC checked.
"""
from __future__ import annotations

import io
import pathlib
import struct
import zlib
from dataclasses import dataclass, field

from mcap.data_stream import ReadDataStream
from mcap.records import Channel, Chunk, Metadata, Schema

MAGIC = b"\x89MCAP0\r\n"
OP_SCHEMA, OP_CHANNEL, OP_MESSAGE, OP_CHUNK, OP_METADATA, OP_DATA_END, OP_FOOTER = 0x03, 0x04, 0x05, 0x06, 0x0C, \
    0x0F, 0x02
FOOTER_BYTES = 9 + 20 + 8
DATA_END_BYTES = 9 + 4


class IntegrityError(Exception):
    """Bytes that are not what the writer wrote; the message names where."""


def _chunk_messages(chunk: Chunk, channels: set[int] | None = None) -> list[tuple[int, int, int, bytes]]:
    """(channel_id, log_time, publish_time, data) of the messages inside a chunk, of the
    given channels only when ``channels`` is set (the others are stepped over unread)."""
    raw = decompress(chunk)
    out = []
    pos = 0
    end = len(raw)
    record_head = struct.Struct("<BQ")
    message_head = struct.Struct("<HIQQ")
    while pos + 9 <= end:
        op, length = record_head.unpack_from(raw, pos)
        body = pos + 9
        if op == OP_MESSAGE:
            channel_id, _seq, log_time, publish_time = message_head.unpack_from(raw, body)
            if channels is None or channel_id in channels:
                out.append((channel_id, log_time, publish_time, bytes(raw[body + 22:body + length])))
        pos = body + length
    return out


def decompress(chunk: Chunk) -> bytes:
    if chunk.compression == "zstd":
        import zstandard

        raw = zstandard.ZstdDecompressor().decompress(chunk.data, max_output_size=chunk.uncompressed_size)
    elif chunk.compression == "lz4":
        import lz4.frame

        raw = lz4.frame.decompress(chunk.data)
    elif chunk.compression == "":
        raw = chunk.data
    else:
        raise IntegrityError(f"unknown chunk compression {chunk.compression!r}")
    if len(raw) != chunk.uncompressed_size:
        raise IntegrityError(f"decompresses to {len(raw)} bytes, not the {chunk.uncompressed_size} it declares")
    if chunk.uncompressed_crc and zlib.crc32(raw) != chunk.uncompressed_crc:
        raise IntegrityError(f"CRC mismatch (stored {chunk.uncompressed_crc:08x}, bytes give {zlib.crc32(raw):08x})")
    return raw


def _read_chunk_at(f, offset: int) -> Chunk:
    f.seek(offset)
    head = f.read(9)
    if len(head) < 9 or head[0] != OP_CHUNK:
        raise IntegrityError("no chunk record at its indexed offset")
    (length,) = struct.unpack_from("<Q", head, 1)
    return Chunk.read(ReadDataStream(io.BytesIO(f.read(length))))


def _chunk_check(f, offset: int) -> str:
    """'' when the chunk at ``offset`` reads back intact; else what is wrong."""
    try:
        decompress(_read_chunk_at(f, offset))
    except IntegrityError as exc:
        return str(exc)
    except Exception as exc:  # zstd and record parsing raise their own kinds on altered bytes
        return f"{type(exc).__name__}: {exc}"
    return ""


def _topics(summary, chunk_index) -> str:
    names = sorted({summary.channels[c].topic for c in chunk_index.message_index_offsets if c in summary.channels})
    return ", ".join(names) or "no indexed topics"


def verify_integrity(path: pathlib.Path):
    """The file's summary; IntegrityError naming the chunk (or section) whose bytes were altered."""
    from mcap.reader import make_reader

    size = path.stat().st_size
    with open(path, "rb") as f:
        f.seek(size - FOOTER_BYTES)
        footer = f.read(FOOTER_BYTES)
        summary_start, summary_offset_start, summary_crc = struct.unpack_from("<QQI", footer, 9)
        if summary_start:
            f.seek(summary_start)
            summary_bytes = f.read(size - FOOTER_BYTES - summary_start)
            crc = zlib.crc32(summary_bytes)
            crc = zlib.crc32(footer[:9 + 16], crc)
            if summary_crc and crc != summary_crc:
                raise IntegrityError(f"{path}: summary section (bytes {summary_start}..{size - FOOTER_BYTES}) "
                                     f"fails its CRC: the bag's bytes were altered")
        try:
            f.seek(0)
            summary = make_reader(f).get_summary()
        except Exception as exc:  # an altered summary that still passed (no CRC): unreadable
            raise IntegrityError(f"{path}: summary unreadable: {type(exc).__name__}: {exc}") from None
        if summary is None:
            raise IntegrityError(f"{path}: no summary section (index) to check the chunks against")
        data_end = summary_start - DATA_END_BYTES if summary_start else 0
        stored = 0
        if data_end > 0:
            f.seek(data_end)
            record = f.read(DATA_END_BYTES)
            if record[0] == OP_DATA_END:
                (stored,) = struct.unpack_from("<I", record, 9)
        if stored:
            f.seek(0)
            crc = 0
            left = data_end
            while left > 0:
                block = f.read(min(left, 1 << 22))
                crc = zlib.crc32(block, crc)
                left -= len(block)
            if crc == stored:
                return summary
        # Without a data CRC, or to say where it differs: every chunk on its own.
        for n, chunk_index in enumerate(summary.chunk_indexes):
            problem = _chunk_check(f, chunk_index.chunk_start_offset)
            if problem:
                raise IntegrityError(
                    f"{path}: chunk {n} at byte {chunk_index.chunk_start_offset} ({_topics(summary, chunk_index)}): "
                    f"{problem}; the bag's bytes were altered")
        if stored:
            raise IntegrityError(f"{path}: data section CRC mismatch outside the chunks (a schema, channel, "
                                 f"metadata or message index record was altered)")
    return summary


def indexed_messages(path: pathlib.Path, summary, topics: set[str] | None):
    """(channel_id, log_time, publish_time, data) of the chosen topics, in log-time order
    (stable for equal times, chunk by chunk), decompressing only the chunks that hold them."""
    wanted = None if topics is None else {c.id for c in summary.channels.values() if c.topic in topics}
    out = []
    with open(path, "rb") as f:
        for index in sorted(summary.chunk_indexes, key=lambda i: i.chunk_start_offset):
            if wanted is not None and index.message_index_offsets and wanted.isdisjoint(index.message_index_offsets):
                continue
            out += _chunk_messages(_read_chunk_at(f, index.chunk_start_offset), wanted)
    out.sort(key=lambda m: m[1])
    return out


@dataclass
class Unclosed:
    """What a file without footer still holds, and what it lost."""
    path: pathlib.Path
    size: int
    schemas: dict[int, Schema] = field(default_factory=dict)
    channels: dict[int, Channel] = field(default_factory=dict)
    metadata: dict[str, dict[str, str]] = field(default_factory=dict)
    messages: list[tuple[int, int, int, bytes]] = field(default_factory=list)  # sorted by log time
    chunks: int = 0
    complete_until: int = 0  # end of the last complete record
    cut_record: str = ""  # the record the file ends inside, if any

    def describe(self) -> str:
        last = max((m[1] for m in self.messages), default=0)
        lost = self.size - self.complete_until
        cut = f"; lost: {self.cut_record} ({lost} bytes at the end)" if lost else "; no partial record at the end"
        return (f"truncated but readable: {len(self.messages)} messages in {self.chunks} complete chunks up to "
                f"log time {last} ns (byte {self.complete_until} of {self.size}){cut}; messages the writer "
                f"still held in memory were never written")


def read_unclosed(path: pathlib.Path) -> Unclosed:
    """Every complete record of an MCAP file whose writer did not finish it."""
    from .bag_reader import OPCODES

    size = path.stat().st_size
    out = Unclosed(path=path, size=size)
    with open(path, "rb") as f:
        if f.read(8) != MAGIC:
            raise IntegrityError(f"{path}: byte 0: not an MCAP file (bad magic)")
        offset = 8
        out.complete_until = offset
        while True:
            head = f.read(9)
            if len(head) < 9:
                if head:
                    out.cut_record = f"an incomplete record header at byte {offset}"
                break
            op, length = head[0], struct.unpack_from("<Q", head, 1)[0]
            if offset + 9 + length > size:
                out.cut_record = (f"a {OPCODES.get(op, 'unknown')} record at byte {offset} declaring {length} "
                                  f"bytes of which {size - offset - 9} were written")
                break
            body = f.read(length)
            stream = ReadDataStream(io.BytesIO(body))
            if op == OP_SCHEMA:
                schema = Schema.read(stream)
                out.schemas[schema.id] = schema
            elif op == OP_CHANNEL:
                channel = Channel.read(stream)
                out.channels[channel.id] = channel
            elif op == OP_METADATA:
                meta = Metadata.read(stream)
                out.metadata[meta.name] = dict(meta.metadata)
            elif op == OP_CHUNK:
                try:
                    messages = _chunk_messages(Chunk.read(stream))
                except Exception as exc:  # noqa: BLE001 - a complete record whose bytes were altered
                    raise IntegrityError(f"{path}: chunk {out.chunks} at byte {offset}: {exc}; the bag's bytes "
                                         f"were altered") from None
                out.messages += messages
                out.chunks += 1
            elif op == OP_FOOTER:
                break
            offset += 9 + length
            out.complete_until = offset
    out.messages.sort(key=lambda m: m[1])
    return out


def recover_bag(bag_dir: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path, str]:
    """Rewrite the unclosed bag in ``bag_dir`` as a closed one in its place.

    The original directory is kept beside it as ``<name>.unclosed``. Returns
    (closed bag dir, kept original, what was recovered and lost)."""
    from ruamel.yaml import YAML

    from .bag_writer import CUSTOM_PREFIX, START_METADATA, EpisodeBag

    mcaps = sorted(bag_dir.glob("*.mcap"))
    if len(mcaps) != 1:
        raise IntegrityError(f"{bag_dir}: expected one .mcap file, found {len(mcaps)}")
    from .bag_reader import scan_mcap

    problem = scan_mcap(mcaps[0])
    if not problem:
        raise IntegrityError(f"{mcaps[0]}: already closed (it has a footer); nothing to recover")
    if "not an MCAP file" in problem:
        raise IntegrityError(problem)
    u = read_unclosed(mcaps[0])
    if not u.channels:
        raise IntegrityError(f"{problem} (no channel was written: nothing to recover)")
    what = u.describe()
    custom = {k[len(CUSTOM_PREFIX):]: v for k, v in u.metadata.get(START_METADATA, {}).items()
              if k.startswith(CUSTOM_PREFIX)}
    work = bag_dir.with_name(bag_dir.name + ".recovering")
    if work.exists():
        raise IntegrityError(f"{work}: exists (an earlier recovery did not finish); remove it first")
    bag = EpisodeBag(work, custom)
    yaml = YAML(typ="safe")
    for channel in sorted(u.channels.values(), key=lambda c: c.id):
        schema = u.schemas.get(channel.schema_id)
        if schema is None:
            continue
        qos = yaml.load(channel.metadata.get("offered_qos_profiles") or "[]") or []
        bag.add_topic(channel.topic, schema.name, type_hash=channel.metadata.get("topic_type_hash", ""),
                      msgdef=schema.data, qos_dicts=qos)
    for channel_id, log_time, _pub, data in u.messages:
        channel = u.channels.get(channel_id)
        if channel is not None and channel.topic in bag.topics:
            bag.write(channel.topic, log_time, data)
    bag.close(finish={"status": "recovered", "reason": what})
    kept = bag_dir.with_name(bag_dir.name + ".unclosed")
    n = 2
    while kept.exists():
        kept = bag_dir.with_name(f"{bag_dir.name}.unclosed{n}")
        n += 1
    bag_dir.rename(kept)
    work.rename(bag_dir)
    return bag_dir, kept, what
