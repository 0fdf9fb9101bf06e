"""GR00T N1.6/N1.7 policy-server wire format (gr00t/policy/server_client.py).

A request is one msgpack map {"endpoint": name, "data": {...}} (plus
"api_token" when the server wants one); a reply is one msgpack value. Numpy
arrays travel as {"__ndarray_class__": True, "as_npy": <.npy bytes>} and
are read back with np.load(allow_pickle=False): no pickle either way. A
ModalityConfig travels as {"__ModalityConfig_class__": True, "as_json":
{...}} and is kept here as its plain map (delta_indices, modality_keys, ...).
A reply {"error": "..."} is the server's error report. Pure: msgpack and
numpy only.
"""
from __future__ import annotations

import io

import msgpack
import numpy as np

NDARRAY = "__ndarray_class__"
MODALITY_CONFIG = "__ModalityConfig_class__"


class WireError(ValueError):
    """Bytes that are not a GR00T message."""


def _encode(obj):
    if isinstance(obj, np.ndarray):
        buf = io.BytesIO()
        np.save(buf, obj, allow_pickle=False)
        return {NDARRAY: True, "as_npy": buf.getvalue()}
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"cannot encode {type(obj).__name__}")


def _decode(obj):
    if isinstance(obj, dict):
        if obj.get(NDARRAY) is True and "as_npy" in obj:
            try:
                return np.load(io.BytesIO(obj["as_npy"]), allow_pickle=False)
            except (ValueError, OSError, EOFError) as e:
                raise WireError(f"an array that is not a plain .npy (objects would need pickle): {e}") from e
        if obj.get(MODALITY_CONFIG) is True and "as_json" in obj:
            return dict(obj["as_json"])
    return obj


def packb(obj) -> bytes:
    return msgpack.packb(obj, default=_encode, use_bin_type=True)


def unpackb(data: bytes, max_bin_len: int = 1 << 26):
    try:
        return msgpack.unpackb(data, object_hook=_decode, raw=False, strict_map_key=False,
                               max_bin_len=max_bin_len)
    except WireError:
        raise
    except Exception as e:  # msgpack raises several unrelated types
        raise WireError(f"not valid msgpack: {e}") from e


def request(endpoint: str, data: dict | None = None, api_token: str | None = None) -> bytes:
    message: dict = {"endpoint": endpoint}
    if data is not None:
        message["data"] = data
    if api_token:
        message["api_token"] = api_token
    return packb(message)
