"""``pw.debug``: small tables from text or pandas, and computing a table right away."""

from __future__ import annotations

import hashlib
import struct
from typing import Any

import pandas as pd
import pyarrow as pa

from sparkway.api import dtypes as dt
from sparkway.api.dtypes import DType
from sparkway.api.graph import next_source_sequence
from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.connectors.base import OutputBatch
from sparkway.connectors.memory import MemorySink, MemorySource
from sparkway.plan import nodes as n


def table_from_source(source: Any, columns: dict[str, DType], label: str = "table") -> Table:
    """The table a source feeds (every connector's ``read`` ends here)."""
    source.sequence = next_source_sequence()
    return Table(n.Input(dict(columns), source), label)


def label_id(label: Any) -> int:
    """The row id of a labelled debug row (stable across runs)."""
    digest = hashlib.blake2b(repr(label).encode(), digest_size=8).digest()
    return struct.unpack(">q", digest)[0]


def _parse_cell(text: str) -> Any:
    if text in ("", "None"):
        return None
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def _column_type(values: list[Any]) -> DType:
    present = [v for v in values if v is not None]
    kinds = {type(v) for v in present}
    if not kinds:
        base = dt.STR
    elif kinds == {bool}:
        base = dt.BOOL
    elif kinds <= {int}:
        base = dt.INT
    elif kinds <= {int, float}:
        base = dt.FLOAT
    else:
        base = dt.STR
    return base.with_optional(len(present) < len(values))


def _convert(value: Any, kind: DType) -> Any:
    base = kind.with_optional(False)
    if value is None:
        return None
    if base == dt.STR and not isinstance(value, str):
        return str(value)
    if base == dt.FLOAT:
        return float(value)
    if base == dt.JSON:
        return dt.Json.dumps(value)
    return value


def _transactions(columns: dict[str, DType], rows: list[dict[str, Any]], ids: list[int]) -> list[pa.Table]:
    """Rows grouped by ``__time__`` into transactions, in time order."""
    by_time: dict[int, list[int]] = {}
    for position, row in enumerate(rows):
        by_time.setdefault(int(row.get("__time__") or 0), []).append(position)
    out = []
    for time in sorted(by_time):
        picked = by_time[time]
        data = {"_id": pa.array([ids[p] for p in picked], pa.int64())}
        for name, kind in columns.items():
            data[name] = pa.array([_convert(rows[p].get(name), kind) for p in picked], kind.arrow_type())
        data["_diff"] = pa.array([int(rows[p].get("__diff__") or 1) for p in picked], pa.int64())
        out.append(pa.table(data))
    return out or [pa.table({"_id": pa.array([], pa.int64()),
                             **{k: pa.array([], v.arrow_type()) for k, v in columns.items()},
                             "_diff": pa.array([], pa.int64())})]


def _rows_table(columns: dict[str, DType], rows: list[dict[str, Any]], ids: list[int]) -> Table:
    source = MemorySource(columns, _transactions(columns, rows, ids))
    return table_from_source(source, columns)


def table_from_markdown(text: str, id_from: list[str] | None = None, schema: type[Schema] | None = None, **_: Any) -> Table:
    """A table from a markdown-like text; the header names the columns.

    An unnamed first column holds row labels (ids); ``__time__`` and ``__diff__``
    columns make an update stream (rows grouped into transactions by time).

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown('''
    ...   | name  | age
    ... 1 | Alice | 30
    ... 2 | Bob   | 25
    ... ''')
    >>> t.column_names()
    ['name', 'age']
    """
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    lines = [line for line in lines if not set(line) <= set("-|: ")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")] if lines[0].startswith("|") else [c.strip() for c in lines[0].split("|")]
    labelled = header[0] == ""
    names = header[1:] if labelled else header
    records, labels = [], []
    for line in lines[1:]:
        cells = [c.strip() for c in line.split("|")]
        if line.startswith("|"):
            cells = cells[1:]
        if labelled:
            labels.append(cells[0])
            cells = cells[1:]
        records.append(dict(zip(names, (_parse_cell(c) for c in cells))))
    data_names = [c for c in names if c not in ("__time__", "__diff__")]
    if schema is not None:
        columns = schema.typehints()
    else:
        columns = {c: _column_type([r.get(c) for r in records]) for c in data_names}
    if labelled:
        ids = [label_id(label) for label in labels]
    elif id_from:
        ids = [label_id(tuple(r.get(c) for c in id_from)) for r in records]
    elif "__diff__" in names:
        ids = [label_id(tuple(r.get(c) for c in data_names)) for r in records]
    else:
        ids = [label_id(("row", i)) for i in range(len(records))]
    return _rows_table(columns, records, ids)


def table_from_pandas(df: pd.DataFrame, id_from: list[str] | None = None, schema: type[Schema] | None = None, **_: Any) -> Table:
    """A table from a pandas DataFrame; ids come from the index (or ``id_from`` columns)."""
    records = df.to_dict("records")
    records = [{k: (None if _is_nan(v) else v) for k, v in r.items()} for r in records]
    names = [c for c in df.columns if c not in ("__time__", "__diff__")]
    if schema is not None:
        columns = schema.typehints()
    else:
        columns = {str(c): _column_type([_python(r.get(c)) for r in records]) for c in names}
    if id_from:
        ids = [label_id(tuple(r.get(c) for c in id_from)) for r in records]
    else:
        ids = [label_id(i) for i in df.index]
    return _rows_table(columns, [{k: _python(v) for k, v in r.items()} for r in records], ids)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def _python(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def compute(table: Table, **run_kwargs: Any) -> list[OutputBatch]:
    """Runs just what ``table`` needs and returns its batches of changes, time by time."""
    from sparkway.api.run import run_outputs

    sink = MemorySink()
    run_outputs([n.Output(dict(table._node.columns), table._node, sink)], **run_kwargs)
    return sink.batches


def _final_state(batches: list[OutputBatch]) -> dict[int, tuple[dict[str, Any], int]]:
    state: dict[int, tuple[dict[str, Any], int]] = {}
    for batch in batches:
        for row_id, row in zip(batch.ids.to_pylist(), batch.table.to_pylist()):
            diff = row.pop("diff")
            row.pop("time")
            _, count = state.get(row_id, (row, 0))
            if count + diff == 0:
                state.pop(row_id, None)
            else:
                state[row_id] = (row if diff > 0 else state[row_id][0], count + diff)
    return state


def table_to_pandas(table: Table, *, include_id: bool = True, **run_kwargs: Any) -> pd.DataFrame:
    """The table's contents after all its input was processed.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a\\n1\\n2")
    >>> sorted(pw.debug.table_to_pandas(t)["a"])  # doctest: +SKIP
    [1, 2]
    """
    state = _final_state(compute(table, **run_kwargs))
    frame = pd.DataFrame([row for row, _ in state.values()], columns=table.column_names())
    if include_id:
        frame.index = pd.Index(list(state.keys()), name="id")
    return frame


def _short(row_id: int) -> str:
    return "^" + format(row_id & 0xFFFFFFFFFFFFFFFF, "016X")[:8]


def _print_rows(names: list[str], rows: list[list[Any]]) -> None:
    cells = [names] + [[("" if v is None else str(v)) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(names))]
    for r in cells:
        print(" | ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())


def compute_and_print(table: Table, *, include_id: bool = True, short_pointers: bool = True, n_rows: int | None = None, **run_kwargs: Any) -> None:
    """Prints the table's final contents, one row per line, sorted."""
    state = _final_state(compute(table, **run_kwargs))
    names = table.column_names()
    rows = sorted(([_short(i)] if include_id else []) + [row[c] for c in names] for i, (row, _) in state.items())
    _print_rows(([""] if include_id else []) + names, rows[:n_rows] if n_rows else rows)


def compute_and_print_update_stream(table: Table, *, include_id: bool = True, short_pointers: bool = True, n_rows: int | None = None, **run_kwargs: Any) -> None:
    """Prints every change of the table: its rows with ``__time__`` and ``__diff__``."""
    names = table.column_names()
    rows = []
    for batch in compute(table, **run_kwargs):
        for row_id, row in zip(batch.ids.to_pylist(), batch.table.to_pylist()):
            rows.append(([_short(row_id)] if include_id else []) + [row[c] for c in names] + [row["time"], row["diff"]])
    _print_rows(([""] if include_id else []) + names + ["__time__", "__diff__"], rows[:n_rows] if n_rows else rows)
