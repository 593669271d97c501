"""Columns of typed input and output (Parquet files, Spark DataFrames and tables) and the
values sparkway stores for each column type (see ``formats.values``).

Reading (``stored_column``): an Arrow column of a file or a DataFrame becomes the stored
values of a schema column, or a ``SchemaMismatchError`` that names the input and the
column when its type does not fit:

========================  ===========================================================
column type               Arrow (Parquet, Spark) types it is read from
========================  ===========================================================
int                       any integer (Spark: TINYINT..BIGINT), decimal of scale 0
float                     float, double, any integer, decimal
str                       string
bool                      boolean
bytes, Any                binary (an Any column: pickled values)
Json                      string holding JSON; struct, map or list (as JSON)
DateTimeNaive             timestamp without time zone (Spark: TIMESTAMP_NTZ), date
DateTimeUtc               timestamp with a time zone (Spark: TIMESTAMP)
Duration                  duration (Spark: INTERVAL DAY TO SECOND); integer microseconds
Pointer                   integer, or the text ``^`` + 16 hex digits
list[T]                   list of values that T reads
tuple[T1, T2, ...]        struct with as many fields, in order
========================  ===========================================================

Writing (``output_column``) uses the same types back: date-times as timestamps in
microseconds (the digits below a microsecond are cut: Parquet's and Spark's timestamps
hold microseconds), durations as integer microseconds, Pointers as ``^`` + 16 hex digits,
Json as its text, tuples as structs with fields ``_0``, ``_1``..., and numpy arrays as a
struct ``{shape, elements}``.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkway.connectors.formats.values import SchemaMismatchError
from sparkway.core import dtypes
from sparkway.core.dtypes import DType
from sparkway.core.text import pointer_text
from sparkway.errors import PlanTypeError

_INT64_MAX = 2**63 - 1


def _plain(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    return array


def _is_text(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)


def _is_binary(kind: pa.DataType) -> bool:
    t = pa.types
    return t.is_binary(kind) or t.is_large_binary(kind) or t.is_binary_view(kind) or t.is_fixed_size_binary(kind)


def _is_list(kind: pa.DataType) -> bool:
    t = pa.types
    return t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind) or t.is_list_view(kind)


def _mask(array: pa.Array) -> pa.Array | None:
    return array.is_null() if array.null_count else None


def stored_column(array: pa.Array | pa.ChunkedArray, dtype: DType, *, where: str, column: str) -> pa.Array:
    """An input column as sparkway stores the values of ``dtype`` (nulls kept: the caller
    decides about nulls in a column that may not hold them).  ``where`` names the input
    (a file) in the error raised when the column's type does not fit ``dtype``.

    >>> stored_column(pa.array([1, 2], pa.int32()), dtypes.FLOAT, where="a.parquet", column="x").to_pylist()
    [1.0, 2.0]
    >>> stored_column(pa.array(["a"]), dtypes.INT, where="a.parquet", column="x")
    Traceback (most recent call last):
    ...
    sparkway.connectors.formats.values.SchemaMismatchError: a.parquet: column 'x' holds values of type string, which cannot be read as the schema's type int
    """
    array = _plain(array)
    kind = array.type

    def wrong(reason: str = "") -> SchemaMismatchError:
        return SchemaMismatchError(f"{where}: column {column!r} holds values of type {kind}, which cannot be read "
                                   f"as the schema's type {dtype}{reason}")

    if pa.types.is_null(kind):
        return pa.nulls(len(array), dtype.arrow_type())
    try:
        converted = _stored(array, dtype.with_optional(False), dtype, where, column)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError, ValueError) as error:
        if isinstance(error, SchemaMismatchError):
            raise
        raise wrong(f" ({error})") from None
    if converted is None:
        raise wrong()
    return converted


def _stored(array: pa.Array, base: DType, dtype: DType, where: str, column: str) -> pa.Array | None:
    """The stored values, or None when the Arrow type cannot hold values of ``base``."""
    kind, name, t = array.type, base.name, pa.types
    if name == "int":
        if t.is_integer(kind) or (t.is_decimal(kind) and kind.scale == 0):
            return array.cast(pa.int64())  # a safe cast: a value out of range is an error
        return None
    if name == "float":
        return array.cast(pa.float64()) if t.is_floating(kind) or t.is_integer(kind) or t.is_decimal(kind) else None
    if name == "str":
        return array.cast(pa.string()) if _is_text(kind) else None
    if name == "bool":
        return array if t.is_boolean(kind) else None
    if name in ("bytes", "Any", "PyObjectWrapper"):
        return array.cast(pa.binary()) if _is_binary(kind) else None
    if name == "Json":
        if _is_text(kind):
            texts = array.cast(pa.string()).to_pylist()
            return pa.array([None if v is None else json.dumps(json.loads(v)) for v in texts], pa.string())
        if t.is_struct(kind) or t.is_map(kind) or _is_list(kind):
            values = array.to_pylist()
            if t.is_map(kind):
                values = [None if v is None else dict(v) for v in values]
            return pa.array([None if v is None else json.dumps(v) for v in values], pa.string())
        return None
    if name in ("DateTimeNaive", "DateTimeUtc"):
        zoned = name == "DateTimeUtc"
        if t.is_timestamp(kind) and (kind.tz is not None) == zoned:
            return array.cast(pa.timestamp("ns", tz=kind.tz)).cast(pa.int64())
        if t.is_date(kind) and not zoned:
            return array.cast(pa.timestamp("ns")).cast(pa.int64())
        return None
    if name == "Duration":
        if t.is_duration(kind):
            return array.cast(pa.duration("ns")).cast(pa.int64())
        if t.is_integer(kind):
            return pc.multiply_checked(array.cast(pa.int64()), 1000)  # microseconds, as written
        return None
    if name == "Pointer":
        if t.is_integer(kind):
            return array.cast(pa.int64())
        if _is_text(kind):
            return pa.array([None if v is None else _pointer(v) for v in array.cast(pa.string()).to_pylist()],
                            pa.int64())
        return None
    if name == "list":
        if not _is_list(kind):
            return None
        if t.is_fixed_size_list(kind) or t.is_list_view(kind):
            array = array.cast(pa.list_(kind.value_type))
        items = stored_column(array.flatten(), base.items[0], where=where, column=column)
        offsets = array.offsets
        if array.offset or len(offsets) and offsets[0].as_py():
            offsets = pc.subtract(offsets, offsets[0])
        return pa.ListArray.from_arrays(offsets.cast(pa.int32()), items, type=dtype.arrow_type(), mask=_mask(array))
    if name == "tuple":
        if not t.is_struct(kind) or kind.num_fields != len(base.items):
            return None
        children = [stored_column(array.field(i), item, where=where, column=column)
                    for i, item in enumerate(base.items)]
        return pa.StructArray.from_arrays(children, fields=list(dtype.arrow_type()), mask=_mask(array))
    if name == "Array":
        if not t.is_struct(kind) or {"shape", "elements"} - {f.name for f in kind}:
            return None
        floats = t.is_floating(kind.field("elements").type.value_type)
        rows = [None if v is None else {"shape": v["shape"], "ints": None if floats else v["elements"],
                                        "floats": v["elements"] if floats else None} for v in array.to_pylist()]
        return pa.array(rows, dtype.arrow_type())
    return None


def _pointer(text: str) -> int:
    value = int(text[1:] if text.startswith("^") else text, 16)
    return value - (1 << 64) if value > _INT64_MAX else value


def output_type(dtype: DType) -> pa.DataType:
    """The Arrow type a column of ``dtype`` is written as.

    >>> output_type(dtypes.DATE_TIME_UTC), output_type(dtypes.DType("list", (dtypes.DURATION,)))
    (TimestampType(timestamp[us, tz=UTC]), ListType(list<item: int64>))
    """
    base = dtype.with_optional(False)
    name = base.name
    if name in ("DateTimeNaive", "DateTimeUtc"):
        return pa.timestamp("us", tz="UTC" if name == "DateTimeUtc" else None)
    if name == "Duration":
        return pa.int64()
    if name == "Pointer":
        return pa.string()
    if name == "list":
        return pa.list_(output_type(base.items[0]))
    if name == "tuple":
        return pa.struct([(f"_{i}", output_type(item)) for i, item in enumerate(base.items)])
    if name == "Array":
        element = base.items[0].with_optional(False).name if base.items else "Any"
        elements = pa.int64() if element == "int" else pa.float64()
        return pa.struct([("shape", pa.list_(pa.int64())), ("elements", pa.list_(elements))])
    if name in ("Callable", "Future"):
        raise PlanTypeError(f"a column of type {dtype} cannot be written: compute its values first")
    return dtype.arrow_type()


def output_column(array: pa.Array | pa.ChunkedArray, dtype: DType) -> pa.Array:
    """A column as sparkway stores it -> as it is written (``output_type``).

    >>> output_column(pa.array([1_500, -1_500]), dtypes.DURATION).to_pylist()   # microseconds
    [1, -1]
    """
    array = _plain(array)
    base = dtype.with_optional(False)
    name = base.name
    target = output_type(dtype)
    if name in ("DateTimeNaive", "DateTimeUtc"):  # nanoseconds -> microseconds, toward the past
        values = np.floor_divide(np.asarray(array.fill_null(0), dtype=np.int64), 1000)
        return pa.array(values, type=target, mask=np.asarray(array.is_null()) if array.null_count else None)
    if name == "Duration":
        return pc.divide(array.cast(pa.int64()), 1000)  # integer division: toward zero
    if name == "Pointer":
        return pa.array([None if v is None else pointer_text(v) for v in array.to_pylist()], pa.string())
    if name == "list":
        items = output_column(array.flatten(), base.items[0])
        offsets = array.offsets
        if array.offset or len(offsets) and offsets[0].as_py():
            offsets = pc.subtract(offsets, offsets[0])
        return pa.ListArray.from_arrays(offsets, items, type=target, mask=_mask(array))
    if name == "tuple":
        children = [output_column(array.field(i), item) for i, item in enumerate(base.items)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=_mask(array))
    if name == "Array":
        rows = [None if v is None else {"shape": v["shape"], "elements": v["ints"] if v["ints"] is not None
                                        else v["floats"]} for v in array.to_pylist()]
        return pa.array(rows, target)
    return array.cast(target)


def output_table(table: pa.Table, columns: dict[str, DType]) -> pa.Table:
    """The columns of ``table`` as they are written."""
    return pa.Table.from_arrays([output_column(table.column(c), t) for c, t in columns.items()],
                                schema=pa.schema([pa.field(c, output_type(t), nullable=t.optional)
                                                  for c, t in columns.items()]))


__all__ = ["output_column", "output_table", "output_type", "stored_column"]
