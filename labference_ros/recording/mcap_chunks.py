"""An MCAP writer that keeps each camera's images in chunks of their own.

The `mcap` library writes every message into one chunk stream, so a reader
that wants the evaluator's topics decompresses every image too. Here each
chunk group (one per camera, one for the evaluation's topics, one for the
robot's streams: bag_writer.chunk_group) builds its own zstd chunks, which may
overlap in time as the MCAP specification allows; the chunk index names the
channels of each chunk, so a reader asking for the evaluation's topics touches
neither image chunks nor the robot's. Consecutive frames of one camera sit next to
each other in a chunk, which is what lets zstd find the parts that did not
change. Records come from the `mcap` library; only the layout is ours.

Schemas, channels and metadata are written at once, outside chunks, and every
finished chunk is flushed to the file: a killed writer leaves a file whose
complete records (everything but the chunks still being built, at most
MAX_CHUNK_AGE_NS of log time per group) can be recovered (see mcap_recover.py).
"""
from __future__ import annotations

import struct
import zlib
from collections import defaultdict
from typing import BinaryIO

import zstandard
from mcap._chunk_builder import ChunkBuilder
from mcap.data_stream import RecordBuilder
from mcap.opcode import Opcode
from mcap.records import (Channel, Chunk, ChunkIndex, DataEnd, Footer, Header, Message, Metadata, MetadataIndex,
                          Schema, Statistics, SummaryOffset)

MAGIC = b"\x89MCAP0\r\n"
LIBRARY = "labference-ros (mcap records, grouped zstd chunks)"
# A chunk is closed at this many uncompressed bytes or this much log time,
# whichever comes first: large enough for zstd to see several frames of a camera,
# small enough that a killed writer loses about a second of recording.
MAX_CHUNK_BYTES = {"camera": 8 << 20, "default": 1 << 20}
MAX_CHUNK_AGE_NS = 1_000_000_000
ZSTD_LEVEL = 3


class GroupedChunkWriter:
    def __init__(self, stream: BinaryIO, profile: str = "ros2"):
        self.stream = stream
        self.record = RecordBuilder()
        self.data_crc = 0
        self.schemas: dict[int, Schema] = {}
        self.channels: dict[int, Channel] = {}
        self.channel_group: dict[int, str] = {}
        self.builders: dict[str, ChunkBuilder] = {}
        self.chunk_indexes: list[ChunkIndex] = []
        self.metadata_indexes: list[MetadataIndex] = []
        self.stats = Statistics(message_count=0, schema_count=0, channel_count=0, attachment_count=0,
                                metadata_count=0, chunk_count=0, message_start_time=0, message_end_time=0,
                                channel_message_counts=defaultdict(int))
        # Compressing with the frame's content size lets any reader size its buffer.
        self.compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_content_size=True)
        self._write_raw(MAGIC)
        Header(profile=profile, library=LIBRARY).write(self.record)
        self._flush_records()

    # ------------------------------------------------------------ low level
    def _write_raw(self, data: bytes) -> None:
        self.data_crc = zlib.crc32(data, self.data_crc)
        self.stream.write(data)

    def _flush_records(self) -> None:
        self._write_raw(self.record.end())

    def tell(self) -> int:
        return self.stream.tell() + self.record.count

    # --------------------------------------------------------------- API
    def add_schema(self, name: str, encoding: str, data: bytes) -> int:
        schema = Schema(id=len(self.schemas) + 1, name=name, encoding=encoding, data=data)
        self.schemas[schema.id] = schema
        self.stats.schema_count += 1
        schema.write(self.record)
        self._flush_records()
        return schema.id

    def add_channel(self, topic: str, schema_id: int, metadata: dict[str, str], group: str,
                    message_encoding: str = "cdr") -> int:
        channel = Channel(id=len(self.channels) + 1, topic=topic, message_encoding=message_encoding,
                          schema_id=schema_id, metadata=metadata)
        self.channels[channel.id] = channel
        self.channel_group[channel.id] = group
        self.stats.channel_count += 1
        channel.write(self.record)
        self._flush_records()
        self.stream.flush()
        return channel.id

    def add_metadata(self, name: str, data: dict[str, str]) -> None:
        offset = self.tell()
        Metadata(name=name, metadata=data).write(self.record)
        self.metadata_indexes.append(MetadataIndex(offset=offset, length=self.tell() - offset, name=name))
        self.stats.metadata_count += 1
        self._flush_records()
        self.stream.flush()

    def add_message(self, channel_id: int, log_time: int, data: bytes, publish_time: int | None = None) -> None:
        stats = self.stats
        if stats.message_count == 0 or log_time < stats.message_start_time:
            stats.message_start_time = log_time
        stats.message_end_time = max(stats.message_end_time, log_time)
        stats.message_count += 1
        stats.channel_message_counts[channel_id] += 1
        group = self.channel_group[channel_id]
        builder = self.builders.get(group)
        if builder is None:
            builder = self.builders[group] = ChunkBuilder()
        builder.add_message(Message(channel_id=channel_id, sequence=0, log_time=log_time,
                                    publish_time=log_time if publish_time is None else publish_time, data=data))
        limit = MAX_CHUNK_BYTES["camera" if group.startswith("camera") else "default"]
        if builder.count >= limit:
            self._finish_chunk(group)
        # Any group whose oldest message is a second old goes to disk (also the quiet ones).
        for other, b in list(self.builders.items()):
            if b.num_messages and log_time - b.message_start_time >= MAX_CHUNK_AGE_NS:
                self._finish_chunk(other)

    def _finish_chunk(self, group: str) -> None:
        builder = self.builders[group]
        if builder.num_messages == 0:
            return
        raw = builder.end()
        packed = self.compressor.compress(raw)
        chunk = Chunk(message_start_time=builder.message_start_time, message_end_time=builder.message_end_time,
                      uncompressed_size=len(raw), uncompressed_crc=zlib.crc32(raw), compression="zstd", data=packed)
        start = self.tell()
        chunk.write(self.record)
        chunk_length = self.tell() - start
        self._flush_records()
        index_start = self.tell()
        offsets = {}
        for channel_id, index in builder.message_indices.items():
            offsets[channel_id] = self.tell()
            index.write(self.record)
        index_length = self.tell() - index_start
        self._flush_records()
        self.stream.flush()
        self.chunk_indexes.append(ChunkIndex(
            message_start_time=chunk.message_start_time, message_end_time=chunk.message_end_time,
            chunk_start_offset=start, chunk_length=chunk_length, message_index_offsets=offsets,
            message_index_length=index_length, compression="zstd", compressed_size=len(packed),
            uncompressed_size=len(raw)))
        self.stats.chunk_count += 1
        builder.reset()

    def finish(self) -> None:
        """Last chunks, data end (with the data section's CRC), summary, footer."""
        for group in list(self.builders):
            self._finish_chunk(group)
        DataEnd(data_section_crc=self.data_crc).write(self.record)
        self.stream.write(self.record.end())
        summary_start = self.stream.tell()
        summary = RecordBuilder()
        offsets: list[SummaryOffset] = []

        def group_of(opcode: int, records) -> None:
            begin = summary.count
            for r in records:
                r.write(summary)
            if summary.count > begin:
                offsets.append(SummaryOffset(group_opcode=opcode, group_start=summary_start + begin,
                                             group_length=summary.count - begin))

        group_of(Opcode.SCHEMA, self.schemas.values())
        group_of(Opcode.CHANNEL, self.channels.values())
        group_of(Opcode.STATISTICS, [self.stats])
        group_of(Opcode.CHUNK_INDEX, self.chunk_indexes)
        group_of(Opcode.METADATA_INDEX, self.metadata_indexes)
        summary_offset_start = summary_start + summary.count
        for offset in offsets:
            offset.write(summary)
        data = summary.end()
        crc = zlib.crc32(data)
        crc = zlib.crc32(struct.pack("<BQQQ", Opcode.FOOTER, 20, summary_start, summary_offset_start), crc)
        self.stream.write(data)
        Footer(summary_start=summary_start, summary_offset_start=summary_offset_start, summary_crc=crc).write(
            self.record)
        self.stream.write(self.record.end())
        self.stream.write(MAGIC)
        self.stream.flush()
