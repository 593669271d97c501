"""Types and values in the forms Pathway's ``Schema.to_json_serializable_dict`` writes:
a type as a JSON object (``{"type": "OPTIONAL", "wrapped": {"type": "INT"}}``), a value
as the bytes of Pathway's binary value format (little-endian; a 4-byte kind, then the
value: 8-byte integers, floats and nanoseconds, 8-byte lengths before texts, bytes and
sequences), base64-encoded, so that schemas pass between the two.

>>> encode_value(("x", None)) == "BwAAAAIAAAAAAAAABQAAAAEAAAAAAAAAeAAAAAA="
True
>>> decode_value(encode_value(("x", None)))
('x', None)
"""

from __future__ import annotations

import base64
import datetime
import json
import struct
from typing import Any

import numpy as np
import pandas as pd

from sparkway.core import dtypes as dt
from sparkway.core.dtypes import DType

_SIMPLE = {
    dt.INT: "INT", dt.FLOAT: "FLOAT", dt.STR: "STR", dt.BOOL: "BOOL", dt.BYTES: "BYTES", dt.ANY: "ANY",
    dt.POINTER: "POINTER", dt.DATE_TIME_NAIVE: "DATE_TIME_NAIVE", dt.DATE_TIME_UTC: "DATE_TIME_UTC",
    dt.DURATION: "DURATION", dt.JSON: "Json", dt.PY_OBJECT: "PY_OBJECT_WRAPPER",
}
_SIMPLE_BY_NAME = {name: kind for kind, name in _SIMPLE.items()}

# kinds of Pathway's binary values (their order in its engine)
_NONE, _BOOL, _INT, _FLOAT, _POINTER, _STRING, _BYTES, _TUPLE = range(8)
_INT_ARRAY, _FLOAT_ARRAY, _NAIVE, _UTC, _DURATION, _JSON = range(8, 14)


def dtype_to_json(kind: DType) -> dict[str, Any]:
    """A type as a JSON object; pointers lose what they point to (as in Pathway)."""
    if kind.optional:
        return {"type": "OPTIONAL", "wrapped": dtype_to_json(kind.with_optional(False))}
    if kind.is_pointer:
        return {"type": "POINTER"}
    if kind.name == "tuple":
        return {"type": "TUPLE", "wrapped": [dtype_to_json(item) for item in kind.items]}
    if kind.name == "list":
        return {"type": "LIST", "wrapped": dtype_to_json(kind.items[0])}
    if kind.is_array:
        return {"type": "ARRAY", "n_dim": kind.n_dim, "wrapped": dtype_to_json(kind.items[0])}
    if kind not in _SIMPLE:
        raise TypeError(f"a column of type {kind} cannot be serialized")
    return {"type": _SIMPLE[kind]}


def dtype_from_json(data: dict[str, Any]) -> DType:
    """The type a ``dtype_to_json`` object describes."""
    name = data["type"]
    if name == "OPTIONAL":
        return dtype_from_json(data["wrapped"]).with_optional(True)
    if name == "TUPLE":
        return DType("tuple", tuple(dtype_from_json(item) for item in data["wrapped"]))
    if name == "LIST":
        return DType("list", (dtype_from_json(data["wrapped"]),))
    if name == "ARRAY":
        return DType("Array", (dtype_from_json(data["wrapped"]),), n_dim=data.get("n_dim"))
    if name not in _SIMPLE_BY_NAME:
        raise ValueError(f"unknown serialized type {name!r}")
    return _SIMPLE_BY_NAME[name]


def encode_value(value: Any) -> str:
    """A column's value (a default) in Pathway's binary value format, base64-encoded."""
    return base64.b64encode(_encode(value)).decode()


def decode_value(text: str) -> Any:
    """The value ``encode_value`` (or Pathway) wrote."""
    value, _ = _decode(base64.b64decode(text), 0)
    return value


def _kind(kind: int) -> bytes:
    return struct.pack("<I", kind)


def _sized(data: bytes) -> bytes:
    return struct.pack("<Q", len(data)) + data


def _encode(value: Any) -> bytes:
    if value is None:
        return _kind(_NONE)
    if isinstance(value, (bool, np.bool_)):
        return _kind(_BOOL) + bytes([bool(value)])
    if isinstance(value, (int, np.integer)):
        return _kind(_INT) + struct.pack("<q", int(value))
    if isinstance(value, (float, np.floating)):
        return _kind(_FLOAT) + struct.pack("<d", float(value))
    if isinstance(value, str):
        return _kind(_STRING) + _sized(value.encode())
    if isinstance(value, bytes):
        return _kind(_BYTES) + _sized(value)
    if isinstance(value, (tuple, list)):
        return _kind(_TUPLE) + struct.pack("<Q", len(value)) + b"".join(_encode(v) for v in value)
    if isinstance(value, np.ndarray):
        return _encode_array(value)
    if isinstance(value, dt.Json):
        return _kind(_JSON) + _sized(json.dumps(value.value, separators=(",", ":")).encode())
    if isinstance(value, datetime.datetime):
        kind = _NAIVE if pd.Timestamp(value).tz is None else _UTC
        return _kind(kind) + struct.pack("<q", pd.Timestamp(value).value)
    if isinstance(value, datetime.timedelta):
        return _kind(_DURATION) + struct.pack("<q", pd.Timedelta(value).value)
    raise TypeError(f"a value of type {type(value).__name__} cannot be serialized")


def _encode_array(array: np.ndarray) -> bytes:
    """An array: Pathway's engine writes a 16-byte hash of it first, which is not
    computed here (written as zeros; reading skips it)."""
    ints = np.issubdtype(array.dtype, np.integer)
    data = array.astype("<i8" if ints else "<f8").ravel()
    shape = struct.pack("<Q", array.ndim) + b"".join(struct.pack("<Q", n) for n in array.shape)
    return (
        _kind(_INT_ARRAY if ints else _FLOAT_ARRAY) + bytes(16) + b"\x01" + shape
        + struct.pack("<Q", data.size) + data.tobytes()
    )


def _decode(data: bytes, at: int) -> tuple[Any, int]:
    (kind,) = struct.unpack_from("<I", data, at)
    at += 4
    if kind == _NONE:
        return None, at
    if kind == _BOOL:
        return bool(data[at]), at + 1
    if kind in (_INT, _NAIVE, _UTC, _DURATION):
        (number,) = struct.unpack_from("<q", data, at)
        return _timed(kind, number), at + 8
    if kind == _FLOAT:
        return struct.unpack_from("<d", data, at)[0], at + 8
    if kind in (_STRING, _BYTES, _JSON):
        (size,) = struct.unpack_from("<Q", data, at)
        raw = data[at + 8 : at + 8 + size]
        value = raw if kind == _BYTES else raw.decode()
        return (dt.Json(json.loads(value)) if kind == _JSON else value), at + 8 + size
    if kind == _TUPLE:
        (size,) = struct.unpack_from("<Q", data, at)
        at += 8
        items = []
        for _ in range(size):
            item, at = _decode(data, at)
            items.append(item)
        return tuple(items), at
    if kind in (_INT_ARRAY, _FLOAT_ARRAY):
        return _decode_array(data, at + 16, "<i8" if kind == _INT_ARRAY else "<f8")
    raise ValueError(f"cannot read a serialized value of kind {kind}")


def _timed(kind: int, number: int) -> Any:
    if kind == _NAIVE:
        return dt.DateTimeNaive(number)
    if kind == _UTC:
        return dt.DateTimeUtc(number, tz="UTC")
    if kind == _DURATION:
        return dt.Duration(number)
    return number


def _decode_array(data: bytes, at: int, item: str) -> tuple[np.ndarray, int]:
    at += 1  # the array format's version
    (ndim,) = struct.unpack_from("<Q", data, at)
    shape = struct.unpack_from(f"<{ndim}Q", data, at + 8)
    at += 8 + 8 * ndim
    (size,) = struct.unpack_from("<Q", data, at)
    values = np.frombuffer(data, dtype=item, count=size, offset=at + 8)
    return values.reshape(shape).astype(item[1:]), at + 8 + 8 * size
