"""numpy arrays in msgpack, encoded the way msgpack-numpy (and OpenPI's
copy of it) does, so OpenPI servers can decode our requests:
{b"__ndarray__": True, b"data": bytes, b"dtype": str, b"shape": tuple}."""
from __future__ import annotations

import msgpack
import numpy as np


def _encode(obj):
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in ("V", "O", "c"):
            raise TypeError(f"unsupported dtype {obj.dtype}")
        return {b"__ndarray__": True, b"data": np.ascontiguousarray(obj).tobytes(),
                b"dtype": obj.dtype.str, b"shape": obj.shape}
    if isinstance(obj, np.generic):
        return {b"__npgeneric__": True, b"data": obj.item(), b"dtype": obj.dtype.str}
    return obj


def _decode(obj):
    if b"__ndarray__" in obj:
        return np.ndarray(buffer=obj[b"data"], dtype=np.dtype(obj[b"dtype"]),
                          shape=tuple(obj[b"shape"])).copy()
    if b"__npgeneric__" in obj:
        return np.dtype(obj[b"dtype"]).type(obj[b"data"])
    return obj


def packb(obj) -> bytes:
    return msgpack.packb(obj, default=_encode, use_bin_type=True)


def unpackb(data: bytes, max_array_len: int = -1):
    """max_array_len bounds every msgpack array (msgpack raises ValueError "... exceeds max_array_len")."""
    return msgpack.unpackb(data, object_hook=_decode, raw=False, strict_map_key=False, max_array_len=max_array_len)
