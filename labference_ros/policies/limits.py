"""Bounds on what a remote policy server may send back.

A reply is checked against a byte limit before it is read into memory or
parsed, and against a row limit before it becomes an array, is logged or is
published. An over-limit reply raises ReplyTooLarge, an
EvaluationValidityError: the bridge ends the episode with one validity event
and nothing of the reply reaches the records or the robot.

Defaults: the row limit is the ActionSpec's max_chunk_length (rows beyond it
could never be executed); the byte limit, 1 MiB, is about 40 times a
50-row JSON chunk of 8 numbers. Both are system parameters
(max_reply_rows, max_reply_bytes).
"""
from __future__ import annotations

from labference_ros.core.rejections import DEFAULT_MAX_REJECTED_S, rejected_chunks_limit
from labference_ros.core.system import EvaluationValidityError

DEFAULT_MAX_REPLY_BYTES = 1 << 20
# msgpack arrays may carry a flattened chunk: rows times up to this many dimensions.
MAX_ROW_DIM = 64


class ReplyTooLarge(EvaluationValidityError):
    """The server's reply is over the byte or row limit (never parsed in full)."""


def reply_limits(params: dict, spec) -> tuple[int, int]:
    """(max_bytes, max_rows) for a system's params, defaults filled in params."""
    params.setdefault("max_reply_bytes", DEFAULT_MAX_REPLY_BYTES)
    params.setdefault("max_reply_rows", int(spec.max_chunk_length))
    return int(params["max_reply_bytes"]), int(params["max_reply_rows"])


def rejection_limit(params: dict, spec) -> int:
    """Consecutive rejected chunks before the episode is invalid (core.rejections):
    `max_rejected_chunks` when above 0, else `max_rejected_s` of sim time (default
    DEFAULT_MAX_REJECTED_S) at one hold interval per refused chunk."""
    params.setdefault("max_rejected_s", DEFAULT_MAX_REJECTED_S)
    params.setdefault("max_rejected_chunks", 0)  # 0: from max_rejected_s
    if int(params["max_rejected_chunks"]) > 0:
        return int(params["max_rejected_chunks"])
    return rejected_chunks_limit(float(params["max_rejected_s"]), spec.control_frequency_hz)


def too_many_bytes(source: str, size: int | None, limit: int) -> ReplyTooLarge:
    told = f"{size} bytes" if size is not None else "body"
    return ReplyTooLarge(f"{source} reply too large: {told} over the limit of {limit} bytes (max_reply_bytes)")


def check_rows(source: str, actions, limit: int) -> None:
    """Refuse an action list or array with more than `limit` rows, before any conversion."""
    shape = getattr(actions, "shape", None)
    if shape is not None:
        rows = int(shape[0]) if len(shape) else 1
    elif isinstance(actions, (list, tuple)):
        rows = len(actions)
    else:
        return  # not a sequence: the caller's type check reports it
    if rows > limit:
        raise ReplyTooLarge(f"{source} reply too large: {rows} action rows over the limit of {limit} "
                            f"(max_reply_rows)")


def read_bounded(resp, source: str, limit: int) -> bytes:
    """An HTTP response body, refused by its Content-Length before reading, and
    never read past limit + 1 bytes when the length is not declared."""
    declared = resp.headers.get("Content-Length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            size = None
        if size is not None and size > limit:
            raise too_many_bytes(source, size, limit)
    raw = resp.read(limit + 1)
    if len(raw) > limit:
        raise too_many_bytes(source, None, limit)
    return raw
