"""Parquet input: a whole file at a time, read column by column with ``pyarrow.parquet``.

A Parquet file is only readable once it is complete (its footer, which ends with the
magic bytes ``PAR1``, is written last), so a file without its footer is waited for in
streaming mode and is an error in static mode.  The columns are matched by name
(``Column.input_name``); a column of the schema missing from the file takes its default,
or None when it is optional, else the file does not fit the schema.  Values are
converted as ``formats.arrow`` says.  A row with a null in a column that may not hold one
is skipped, with a warning naming the file, the row and the column.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkway.connectors.formats.arrow import stored_column
from sparkway.connectors.formats.values import MAX_ROW_WARNINGS, ParsedRows, SchemaMismatchError, stored_default
from sparkway.core.columns import Column

log = logging.getLogger("sparkway")

MAGIC = b"PAR1"


def is_complete(read: Callable[[int, int], bytes], size: int) -> bool:
    """Whether the ``size`` bytes that ``read(start, end)`` gives are a whole Parquet file
    (starting and ending with ``PAR1``), not one being written.

    >>> data = b"PAR1...PAR1"
    >>> is_complete(lambda s, e: data[s:e], 11), is_complete(lambda s, e: data[s:e], 7)
    (True, False)
    """
    return size >= 8 and read(0, 4) == MAGIC and read(size - 4, size) == MAGIC


def _pq():  # type: ignore[no-untyped-def]
    import pyarrow.parquet as pq  # 25 ms: loaded by the programs that read Parquet only

    return pq


def _schema(source: bytes | Any, path: str) -> pa.Schema:
    """The schema of a Parquet file's bytes, or of a file object (read at its footer)."""
    pq = _pq()
    try:
        return pq.read_schema(pa.BufferReader(source) if isinstance(source, bytes) else source)
    except (pa.ArrowInvalid, OSError) as error:
        raise SchemaMismatchError(f"{path}: not a readable Parquet file ({error})") from None


def check_parquet_schema(path: str, source: bytes | Any, columns: dict[str, Column]) -> None:
    """Raises ``SchemaMismatchError`` naming the file and the column when the file lacks
    a column the schema needs, or holds one of a type the schema's type cannot read.
    ``source``: the file's bytes, or a file object."""
    schema = _schema(source, path)
    missing = []
    for name, column in columns.items():
        index = schema.get_field_index(column.input_name)
        if index < 0:
            if not (column.has_default or column.dtype.optional):
                missing.append(column.input_name)
            continue
        # the type check alone, on no values
        stored_column(pa.array([], schema.field(index).type), column.dtype, where=path, column=column.input_name)
    if missing:
        raise SchemaMismatchError(
            f"{path}: the Parquet file lacks column(s) {', '.join(map(repr, missing))} required by the schema; "
            f"its columns: {', '.join(schema.names)}"
        )


def parse_parquet(data: bytes, *, path: str, columns: dict[str, Column]) -> ParsedRows:
    """The rows of a whole Parquet file; a row's ordinal is its place in the file.

    >>> import io
    >>> from sparkway.core.dtypes import INT, STR
    >>> import pyarrow.parquet as pq
    >>> buffer = io.BytesIO()
    >>> pq.write_table(pa.table({"n": [1, None, 3], "s": ["a", "b", None]}), buffer)
    >>> rows = parse_parquet(buffer.getvalue(), path="a.parquet",
    ...                      columns={"n": Column("n", INT), "s": Column("s", STR.with_optional())})
    >>> rows.ordinals.tolist(), {name: values.to_pylist() for name, values in rows.columns.items()}, rows.skipped
    ([0, 2], {'n': [1, 3], 's': ['a', None]}, 1)
    """
    check_parquet_schema(path, data, columns)
    names = {c.input_name for c in columns.values()}
    present = [n for n in _schema(data, path).names if n in names]
    pq = _pq()
    try:
        table = pq.read_table(pa.BufferReader(data), columns=present)
    except (pa.ArrowInvalid, OSError) as error:
        raise SchemaMismatchError(f"{path}: not a readable Parquet file ({error})") from None
    rows = table.num_rows
    values: dict[str, pa.Array] = {}
    for name, column in columns.items():
        if column.input_name in table.column_names:
            values[name] = stored_column(table.column(column.input_name), column.dtype, where=path,
                                         column=column.input_name)
        else:
            values[name] = pa.array([stored_default(column)] * rows, column.dtype.arrow_type())
    keep = np.ones(rows, dtype=bool)
    for name, column in columns.items():
        if not column.dtype.optional and values[name].null_count:
            nulls = np.asarray(values[name].is_null())
            for row in np.flatnonzero(nulls & keep)[:MAX_ROW_WARNINGS]:
                log.warning("%s: row %d: column %r is null, which its type %s does not allow; row skipped",
                            path, row, column.input_name, column.dtype)
            keep &= ~nulls
    skipped = int(rows - keep.sum())
    if skipped:
        mask = pa.array(keep)
        values = {name: pc.filter(array, mask) for name, array in values.items()}
    return ParsedRows(np.flatnonzero(keep), values, skipped=skipped)  # type: ignore[arg-type]


__all__ = ["check_parquet_schema", "is_complete", "parse_parquet"]
