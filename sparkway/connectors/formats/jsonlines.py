"""JSON lines input: one JSON object per line, its keys naming the columns.

A chunk of plain lines (no blank line or carriage return; every value present, not null,
and of its column's JSON type; columns of type int, float, bool or str) is read column by
column by ``pyarrow.json``, without Python per row.  Any other chunk is read line by line
with the ``json`` module, which names the line and column of each bad value.  Both give
the same rows.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json

from sparkway.connectors.formats.values import (
    CONVERSION_ERRORS, ErrorCells, ParsedRows, RowError, SkippedRows, decode, json_converter, pathway_type_name,
    split_lines, stored_default,
)
from sparkway.core.columns import Column


def parse_json_lines(
    data: bytes, *, path: str, first_line: int, columns: dict[str, Column], keep_errors: bool = False,
) -> ParsedRows:
    """Rows of a chunk of JSON lines: one JSON object per line, blank lines ignored.
    ``keep_errors``: a value that does not fit its column is an Error value (see
    ``ParsedRows``), not a skipped row.

    >>> from sparkway.core.dtypes import INT
    >>> parse_json_lines(b'{"n": 1}\\n\\n{"n": 2}\\n', path="a.jsonl", first_line=1,
    ...                  columns={"n": Column("n", INT)}).columns
    {'n': [1, 2]}
    >>> parse_json_lines(b'{"n": "x"}\\n', path="a.jsonl", first_line=1,
    ...                  columns={"n": Column("n", INT)}, keep_errors=True).messages
    {1: ['failed to create a field "n" with type int from json payload: "x"']}
    """
    plain = None if keep_errors else _plain_rows(data, first_line, columns)
    if plain is not None:
        return plain
    return _module_rows(data, path, first_line, columns, keep_errors)


def _module_rows(data: bytes, path: str, first_line: int, columns: dict[str, Column], keep_errors: bool) -> ParsedRows:
    """``parse_json_lines`` of any chunk, line by line with the ``json`` module."""
    skips = SkippedRows(path)
    convs = {name: (c.input_name, json_converter(c.dtype), c) for name, c in columns.items()}
    result = ParsedRows(columns={name: [] for name in columns})
    cells = ErrorCells([name for name, c in columns.items() if c.primary_key]) if keep_errors else None
    for i, line in enumerate(split_lines(decode(data, path, first_line))):
        if not line.strip():
            continue
        row = _json_row(line, first_line + i, convs, skips, cells, len(result.ordinals))
        if row is not None:
            result.ordinals.append(first_line + i)
            for name, value in zip(columns, row):
                result.columns[name].append(value)
    skips.finish()
    if cells is not None:
        result = cells.apply(result.ordinals, result.columns)
    result.skipped += skips.count
    return result


# what each column type is read as by pyarrow.json, which refuses a value of another JSON
# type (a string in an int column...) as the json module's path does
_PLAIN_TYPES = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "str": pa.string()}


def _plain_rows(data: bytes, first_line: int, columns: dict[str, Column]) -> ParsedRows | None:
    """The rows of a plain chunk (see the module's docstring) as Arrow arrays; None for
    any other chunk, which the ``json`` module then reads."""
    kinds = {c.input_name: _PLAIN_TYPES.get(c.dtype.name) for c in columns.values()}
    if not data.strip() or None in kinds.values() or len(kinds) < len(columns):
        return None
    if b"\r" in data:
        return None  # left to the json module
    try:
        table = pa_json.read_json(
            io.BytesIO(data),
            # a line longer than a block (1 MiB) is an error here, and goes to the json module
            read_options=pa_json.ReadOptions(use_threads=False),
            parse_options=pa_json.ParseOptions(explicit_schema=pa.schema(list(kinds.items())),
                                               unexpected_field_behavior="ignore"),
        )
    except (pa.ArrowInvalid, UnicodeDecodeError):  # a value of another type, invalid JSON...
        return None
    if table.num_rows != data.count(b"\n") + (not data.endswith(b"\n")):
        return None  # blank lines, which pyarrow skips: the line numbers would shift
    if any(table.column(name).null_count for name in kinds):
        return None  # a missing key or a null: the json module's path tells them apart
    values = {name: table.column(c.input_name).combine_chunks() for name, c in columns.items()}
    return ParsedRows(list(range(first_line, first_line + table.num_rows)), values)


def _json_row(
    line: str, number: int, convs: dict[str, tuple[str, Callable[[Any], Any], Column]],
    skips: SkippedRows, cells: ErrorCells | None, position: int,
) -> list[Any] | None:
    """The stored values of a line's object; None for a skipped line.  With ``cells``
    (keeping Error values), a value that does not fit is None there, recorded as the
    Error of row ``position``."""
    try:
        obj = json.loads(line.rstrip("\r\n"))  # so that an error at the end is on this line
    except json.JSONDecodeError as exc:
        skips.row(number, exc.colno, f"invalid JSON: {exc.msg}")
        return None
    if not isinstance(obj, dict):
        skips.row(number, 1, f"expected a JSON object, found {type(obj).__name__}")
        return None
    row: list[Any] = []
    for source, conv, column in convs.values():
        if source in obj:
            try:
                row.append(conv(obj[source]))
            except (RowError, *CONVERSION_ERRORS) as exc:
                if cells is None:
                    skips.row(number, _json_value_columns(line).get(source, 1), str(exc), column.name)
                    return None
                row.append(None)
                cells.add(position, column.name, f'failed to create a field "{column.name}" with type '
                                                 f"{pathway_type_name(column.dtype)} from json payload: "
                                                 f"{json.dumps(obj[source])}")
        elif column.has_default:
            row.append(stored_default(column))
        elif cells is None:  # also for an optional column, as Pathway: absent is not null
            skips.row(number, 1, "missing", column.name)
            return None
        else:
            row.append(None)
            cells.add(position, column.name, f'no value for "{column.name}" field and no default specified')
    return row


def _json_value_columns(line: str) -> dict[str, int]:
    """1-based column of the value of each top-level key of a JSON object line."""
    decoder = json.JSONDecoder()
    ws = " \t\r\n"
    out: dict[str, int] = {}
    i = len(line) - len(line.lstrip(ws)) + 1  # after "{"
    try:
        while True:
            while line[i] in ws or line[i] == ",":
                i += 1
            if line[i] == "}":
                return out
            key, i = json.decoder.scanstring(line, i + 1)
            while line[i] in ws or line[i] == ":":
                i += 1
            out.setdefault(key, i + 1)
            _, i = decoder.raw_decode(line, i)
    except (IndexError, ValueError):
        return out
