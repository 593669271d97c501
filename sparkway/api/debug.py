"""``pw.debug``: small tables from text or pandas, and computing a table right away."""

from __future__ import annotations

import datetime
import functools
import json
import os
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from sparkway.api import graph
from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.connectors.base import OutputBatch
from sparkway.connectors.memory import MemorySink, MemorySource
from sparkway.core import changes
from sparkway.core import dtypes as dt
from sparkway.core.changes import DIFF, ID
from sparkway.core.dtypes import DType
from sparkway.core.text import pointer_text
from sparkway.errors import PlanTypeError, UnknownColumnError, traced, warn_user
from sparkway.plan import nodes as n

# A hidden column holding each row's label (its markdown label, pandas index, or position):
# as in Pathway, a row's id is ``pointer_from(label)``.
_LABEL = "_pw_label"

#: the time Pathway gives to changes made when the input ended (2**64 - 2)
END_OF_INPUT_TIME = 18446744073709551614


# cells read as None, and as booleans (pandas' defaults, which Pathway's parser uses)
_MISSING = frozenset(("", "None", "NaN", "nan", "NA", "NULL"))
_BOOLEANS = {"True": True, "TRUE": True, "true": True, "False": False, "FALSE": False, "false": False}


def _parse_cell(text: str) -> Any:
    if text in _MISSING:
        return None
    if text in _BOOLEANS:
        return _BOOLEANS[text]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def _split_rows(lines: list[str], split_on_whitespace: bool = True) -> list[list[str]]:
    """The cells of each line: split at ``|`` (or, when a line has none, at spaces
    unless not ``split_on_whitespace``: then the line is one cell).

    A line may start with ``|`` (the header of a labelled table does: its first cell is
    empty); when every line also ends with ``|``, the table is a full markdown table
    and the outer pipes are dropped.
    """
    framed = all(line.startswith("|") and line.endswith("|") and len(line) > 1 for line in lines)
    out = []
    for line in lines:
        if framed:
            line = line[1:-1]
        if "|" in line:
            cells = [c.strip() for c in line.split("|")]
        else:
            cells = line.split() if split_on_whitespace else [line]
        out.append(cells)
    return out


def _parse_json_cell(text: str | None) -> Any:
    if text is None or text in ("", "None"):
        return None
    return dt.Json(json.loads(text))  # wrapped: JSON null is a value, not a missing one


def _column_type(values: list[Any]) -> DType:
    present = [v for v in values if v is not None]
    kinds = {type(v) for v in present}
    if not kinds:
        base = dt.ANY  # only None: a column that takes any type, as None does
    elif kinds == {bool}:
        base = dt.BOOL
    elif kinds <= {int}:
        base = dt.INT
    elif kinds <= {int, float}:
        base = dt.FLOAT
    elif kinds <= {dict, dt.Json}:  # pandas cells holding JSON objects
        base = dt.JSON
    elif all(isinstance(v, datetime.datetime) for v in present):  # pandas Timestamps too
        base = dt.dtype_of_value(present[0])  # naive or UTC, by the first value
    elif all(isinstance(v, datetime.timedelta) for v in present):
        base = dt.DURATION
    elif kinds <= {list, tuple}:
        base = _sequence_type(present)
    elif kinds <= {np.ndarray}:  # numpy arrays: the dimensions and element type they share
        base = functools.reduce(dt.unify, (dt.dtype_of_value(v) for v in present))
    else:
        base = dt.STR
    return base.with_optional(len(present) < len(values))


def _sequence_type(values: list[Any]) -> DType:
    """The type of a column of lists and tuples, from all its values: tuples of one
    length give a tuple type, anything else a list of what the items have in common
    (as Pathway infers them)."""
    if all(isinstance(v, tuple) for v in values) and len({len(v) for v in values}) == 1:
        return DType("tuple", tuple(_common_type([v[i] for v in values]) for i in range(len(values[0]))))
    return DType("list", (_common_type([item for v in values for item in v]),))


def _common_type(values: list[Any]) -> DType:
    """The type holding all the values (Any when they have none in common)."""
    kinds = [dt.dtype_of_value(v) for v in values]
    try:
        return functools.reduce(dt.unify, kinds) if kinds else dt.ANY
    except PlanTypeError:
        return dt.ANY


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
    if base.is_array:
        return dt.array_from_python(value, base.items[0])
    if base.name in ("list", "tuple") or base in (dt.ANY, dt.PY_OBJECT, *_TIMES):  # stored as their types are
        return dt.from_python(base)(value)
    return value


_TIMES = (dt.DATE_TIME_NAIVE, dt.DATE_TIME_UTC, dt.DURATION)


class _DebugSource(MemorySource):
    """A debug table's transactions, each with its ``__time__``.

    The debug tables of a run share one clock, as in Pathway: a source offers its next
    transaction only when no other open debug source has an earlier one pending, so that
    the changes of several tables at one ``__time__`` form one step, in time order.
    """

    def __init__(
        self, columns: dict[str, DType], transactions: list[pa.Table], times: list[int], key_columns: list[str]
    ) -> None:
        super().__init__(columns, transactions, key_columns=key_columns)
        self.times = times
        self.append_only = all(pc.all(pc.greater(t.column(DIFF), 0)).as_py() is not False for t in transactions)

    def open(self, storage: Any) -> None:
        super().open(storage)
        if self not in _OPEN_SOURCES:
            _OPEN_SOURCES.append(self)

    def close(self) -> None:
        if self in _OPEN_SOURCES:
            _OPEN_SOURCES.remove(self)

    def pending_time(self) -> int | None:
        return self.times[self.next] if self.next < len(self.times) else None

    def time_of(self, segments: list[Any]) -> int | None:
        return self.times[segments[0]["transaction"]] if segments else None

    def discover(self) -> list[Any]:
        mine = self.pending_time()
        if mine is None:
            return []
        earlier = [t for s in _OPEN_SOURCES if s is not self and (t := s.pending_time()) is not None and t < mine]
        return [] if earlier else super().discover()


_OPEN_SOURCES: list[_DebugSource] = []  # the debug sources of the run in progress


def _transactions(columns: dict[str, DType], rows: list[dict[str, Any]]) -> list[tuple[int, pa.Table]]:
    """Rows grouped by ``__time__`` into transactions, in time order: (time, changes)."""
    by_time: dict[int, list[int]] = {}
    for position, row in enumerate(rows):
        by_time.setdefault(int(row.get("__time__") or 0), []).append(position)
    if any(time < 0 for time in by_time):
        raise ValueError("Column __time__ cannot contain negative times.")  # Pathway's words
    if any(time % 2 for time in by_time):  # as Pathway: its times of data are even
        warn_user("timestamps are required to be even; all timestamps will be doubled")
        by_time = {2 * time: positions for time, positions in by_time.items()}
    out = []
    for time in sorted(by_time):
        picked = by_time[time]
        data = {ID: pa.array([0] * len(picked), pa.int64())}  # made from the key by the engine
        for name, kind in columns.items():
            data[name] = pa.array([_convert(rows[p].get(name), kind) for p in picked], kind.arrow_type())
        data[DIFF] = pa.array([int(rows[p].get("__diff__") or 1) for p in picked], pa.int64())
        out.append((time, pa.table(data)))
    return out or [(0, changes.arrow_schema(columns).empty_table())]


def _rows_table(
    columns: dict[str, DType], rows: list[dict[str, Any]], id_from: list[str] | None, labels: list[Any]
) -> Table:
    """The table of the rows, whose ids come from the ``id_from`` columns or else the labels."""
    if id_from:
        missing = [c for c in id_from if c not in columns]
        if missing:
            raise UnknownColumnError(f"id_from names no column {missing}; the columns are {list(columns)}")
        keys, stored = list(id_from), columns
    else:
        keys, stored = [_LABEL], {**columns, _LABEL: _column_type(labels).with_optional(False)}
        rows = [{**row, _LABEL: label} for row, label in zip(rows, labels)]
    timed = _transactions(stored, rows)
    source = _DebugSource(stored, [t for _, t in timed], [time for time, _ in timed], keys)
    stream = ("__time__", "__diff__")
    ids_key = tuple(sorted(repr([row.get(k) for k in (*keys, *stream)]) for row in rows))
    table = graph.table_from_source(source, ids_key=(tuple(keys) if id_from else None, ids_key))
    if stored is columns:
        return table
    # ids made from labels are ids of any origin, as Pathway's debug tables' are
    return table.select(*(table[c] for c in columns)).update_id_type(dt.Pointer)


@traced
def table_from_markdown(
    text: str, id_from: list[str] | None = None, schema: type[Schema] | None = None,
    split_on_whitespace: bool = True, unsafe_trusted_ids: bool = False, _stacklevel: int = 1,
    _new_universe: bool = False,
) -> Table:
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
    # markdown rulers go; a line of bars only is a row of None values
    lines = [line for line in lines if not (set(line) <= set("-|: ") and "-" in line)]
    rows = _split_rows(lines, split_on_whitespace)
    header = rows[0]
    # as in Pathway: an unnamed (or "id") first header cell makes the first column row
    # labels; so do rows that all have one cell more than a space-separated header
    named_labels = header[0] in ("", "id")
    labelled = named_labels or (len(rows) > 1 and {len(r) for r in rows[1:]} == {len(header) + 1})
    names = header[1:] if named_labels else header
    records, labels, raw = [], [], []
    for cells in rows[1:]:
        if labelled:
            labels.append(_parse_cell(cells[0]))
            cells = cells[1:]
        raw.append(dict(zip(names, cells)))
        records.append(dict(zip(names, (_parse_cell(c) for c in cells))))
    data_names = [c for c in names if c not in ("__time__", "__diff__")]
    if schema is not None:
        columns = schema._dtypes()
        id_from = id_from or schema.primary_key_columns() or None  # as Pathway: ids from the primary key
        for name, kind in columns.items():
            if kind.with_optional(False) == dt.JSON:  # a JSON cell is JSON text, not a string
                for record, cells in zip(records, raw):
                    record[name] = _parse_json_cell(cells.get(name))
    else:
        columns = {c: _column_type([r.get(c) for r in records]) for c in data_names}
    return _rows_table(columns, records, id_from, labels if labelled else list(range(len(records))))


@traced
def table_from_rows(schema: type[Schema], rows: list[tuple], unsafe_trusted_ids: bool = False, is_stream: bool = False) -> Table:
    """A table from tuples of values in the order of the schema's columns; with
    ``is_stream``, each tuple ends with the row's ``__time__`` and ``__diff__``. Ids come
    from the schema's primary key, else from the rows' positions.

    >>> import sparkway as pw
    >>> class S(pw.Schema):
    ...     name: str
    ...     age: int
    >>> pw.debug.table_from_rows(S, [("ann", 30), ("bob", 25)]).column_names()
    ['name', 'age']
    """
    names = schema.column_names() + (["__time__", "__diff__"] if is_stream else [])
    records = [dict(zip(names, row)) for row in rows]
    return _rows_table(schema._dtypes(), records, schema.primary_key_columns(), list(range(len(records))))


@traced
def table_from_pandas(
    df: pd.DataFrame, id_from: list[str] | None = None, schema: type[Schema] | None = None,
    unsafe_trusted_ids: bool = False, _stacklevel: int = 1, _new_universe: bool = False,
) -> Table:
    """A table from a pandas DataFrame; ids come from the ``id_from`` columns, the schema's
    primary key, or else the index."""
    if schema is not None and id_from is not None:
        raise ValueError("table_from_pandas: give either `schema` or `id_from`, not both (ids come from the schema's primary key)")
    rows = [{k: _python(v) for k, v in r.items()} for r in df.to_dict("records")]
    names = [c for c in df.columns if c not in ("__time__", "__diff__")]
    if schema is not None:
        columns, id_from = schema._dtypes(), schema.primary_key_columns()
    else:
        columns = {str(c): _column_type([r.get(c) for r in rows]) for c in names}
    return _rows_table(columns, rows, id_from, [_python(i) for i in df.index])


def _python(value: Any) -> Any:
    """A pandas cell as a plain Python value (missing values, NaN too, are None);
    Timestamps and Timedeltas stay, with their nanoseconds."""
    if isinstance(value, float) and value != value:
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    return value.item() if isinstance(value, np.generic) else value


@traced
def table_from_parquet(path: str | os.PathLike, id_from: list[str] | None = None, unsafe_trusted_ids: bool = False) -> Table:
    """A table from a Parquet file (read with pandas, as ``table_from_pandas`` reads a frame).

    >>> import sparkway as pw, tempfile, os, pandas as pd
    >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
    >>> pd.DataFrame({"a": [1, 2]}).to_parquet(path)
    >>> pw.debug.compute_and_print(pw.debug.table_from_parquet(path), include_id=False)
    a
    1
    2
    """
    return table_from_pandas(pd.read_parquet(path), id_from=id_from)


def table_to_parquet(table: Table, filename: str | os.PathLike) -> None:
    """Writes the table's contents after all its input was processed to a Parquet file
    (through pandas; ids are not written).

    >>> import sparkway as pw, tempfile, os, pandas as pd
    >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
    >>> pw.debug.table_to_parquet(pw.debug.table_from_markdown("a\\n1"), path)
    >>> pd.read_parquet(path)["a"].tolist()
    [1]
    """
    table_to_pandas(table, include_id=False).to_parquet(filename)


@traced
def compute(table: Table, **run_kwargs: Any) -> list[OutputBatch]:
    """Runs just what ``table`` needs and returns its batches of changes, time by time."""
    return _compute_tables([table], **run_kwargs)[0]


def _compute_tables(tables: list[Table], **run_kwargs: Any) -> list[list[OutputBatch]]:
    """The batches of each table, from one run computing them all."""
    from sparkway.api.run import run_outputs

    sinks = [MemorySink() for _ in tables]
    run_outputs([n.Output(dict(t._node.columns), t._node, sink) for t, sink in zip(tables, sinks)], **run_kwargs)
    return [sink.batches for sink in sinks]


class _Error:
    """An Error value (a run with ``terminate_on_error=False``), printed as Pathway does."""

    def __repr__(self) -> str:
        return "Error"


ERROR = _Error()


def batch_rows(batch: OutputBatch, columns: dict[str, DType]) -> list[dict[str, Any]]:
    """The batch's rows as dicts of Python values (their diffs are ``batch.diffs``)."""
    convert = {name: dt.to_python(kind) for name, kind in columns.items()}
    rows = [{k: (convert[k](v) if k in convert else v) for k, v in row.items()} for row in batch.table.to_pylist()]
    if batch.errors is not None:
        for row, errors in zip(rows, batch.errors.to_pylist()):
            row.update({name: ERROR for name in errors or ()})
    return rows


def _final_state(batches: list[OutputBatch], columns: dict[str, DType]) -> dict[int, tuple[dict[str, Any], int]]:
    """Per id, the row a table holds after its changes, with its multiplicity.

    Two rows under one id (``concat`` of tables whose ids meet, ``with_id_from`` values
    that repeat) fail here, as in Pathway: with a ``KeyError``, or, in a run keeping
    Error values, a warning and a row of Error values.  (Nothing else holds a whole
    table, so nothing else can tell; operators keyed by id check their own inputs.)
    """
    state: dict[int, tuple[dict[str, Any], int]] = {}
    for batch in batches:
        changes = zip(batch.ids.to_pylist(), batch_rows(batch, columns), batch.diffs.to_pylist())
        for row_id, row, diff in sorted(changes, key=lambda change: change[2] > 0):  # deletions first
            _, count = state.get(row_id, (row, 0))
            if diff > 0 and count > 0:
                row = _duplicated(row_id, row, batch.errors is not None)
            if count + diff == 0:
                state.pop(row_id, None)
            else:
                state[row_id] = (row if diff > 0 else state[row_id][0], count + diff)
    return state


def _duplicated(row_id: int, row: dict[str, Any], keeps_errors: bool) -> dict[str, Any]:
    message = f"duplicated entries for key {pointer_text(row_id)}"
    if not keeps_errors:
        raise KeyError(message)
    warn_user(message)
    return {name: ERROR for name in row}


@traced
def table_to_pandas(table: Table, *, include_id: bool = True, **run_kwargs: Any) -> pd.DataFrame:
    """The table's contents after all its input was processed.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a\\n1\\n2")
    >>> sorted(pw.debug.table_to_pandas(t)["a"])  # doctest: +SKIP
    [1, 2]
    """
    types = table.schema._dtypes()
    # rows in the order of their ids, as Pathway gives them
    state = dict(sorted(_final_state(compute(table, **run_kwargs), types).items()))
    values = {name: [row[name] for row, _ in state.values()] for name in types}
    frame = pd.DataFrame(
        {name: pd.Series(v, dtype=_pandas_dtype(types[name])) for name, v in values.items()},
        columns=table.column_names(),
    )
    if include_id:
        frame.index = pd.Index(list(state.keys()))  # unnamed, as Pathway's
    return frame


@traced
def table_to_dicts(table: Table, **run_kwargs: Any) -> tuple[list[int], dict[str, dict[int, Any]]]:
    """The table's contents after all its input was processed: its ids, and per column
    a dict from id to value.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a\\n1\\n2")
    >>> ids, columns = pw.debug.table_to_dicts(t)
    >>> sorted(columns["a"][i] for i in ids)
    [1, 2]
    """
    state = _final_state(compute(table, **run_kwargs), table.schema._dtypes())
    ids = list(state)
    return ids, {name: {i: state[i][0][name] for i in ids} for name in table.column_names()}


def _pandas_dtype(kind: DType) -> Any:
    """The pandas dtype of a column, as Pathway's: optional ints are pandas' nullable
    ``Int64`` (exact, with ``<NA>``; not floats with NaN), pointers Python objects (64-bit
    ids do not survive floats); other columns as pandas infers them."""
    if kind == dt.INT.with_optional():
        return pd.Int64Dtype()
    return object if kind.is_pointer else None


def _printed(row: dict[str, Any], table: Table) -> list[Any]:
    """The row's values in column order; pointers as Pathway prints them (``^`` and digits),
    and so the values of method columns (the ids of the rows whose method they call)."""
    pointers = {c for c, kind in table.schema._dtypes().items() if kind.name == "Callable" or kind.is_pointer}
    return [pointer_text(row[c], short=True) if c in pointers and row[c] is not None else row[c] for c in table.column_names()]


def _cell_text(value: Any) -> str:
    """A printed value, as Pathway prints it (durations in pandas' notation)."""
    if value is None:
        return ""
    if isinstance(value, datetime.timedelta):
        return str(pd.Timedelta(value))
    return str(value)


def _print_rows(names: list[str], rows: list[list[Any]]) -> None:
    # as Pathway's: a None is blank, unless it is the row's only cell (one column, no id)
    cells = [names] + [["None"] if len(row) == 1 and row[0] is None else [_cell_text(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(names))]
    for r in cells:
        print(" | ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())


def _order(row: list[Any]) -> tuple:
    """A sort key for printed rows: None first, values of one column by their order, and
    values that have none (Json, Any) by their text."""
    def key(value: Any) -> tuple:
        if value is None:
            return (0, "", "")
        if isinstance(value, (int, float, str, bytes, datetime.date, datetime.timedelta)):
            return (1, type(value).__name__, value)
        return (2, type(value).__name__, str(value))
    return tuple(key(v) for v in row)


@traced
def compute_and_print(
    *tables: Table, include_id: bool = True, short_pointers: bool = True, n_rows: int | None = None, **run_kwargs: Any
) -> None:
    """Prints each table's final contents, one row per line, sorted (all computed in one run)."""
    for table, batches in zip(tables, _compute_tables(list(tables), **run_kwargs)):
        state = _final_state(batches, table.schema._dtypes())
        rows = [([pointer_text(i, short=True)] if include_id else []) + _printed(row, table) for i, (row, _) in state.items()]
        rows.sort(key=_order)
        _print_rows(([""] if include_id else []) + table.column_names(), rows[:n_rows] if n_rows else rows)


@traced
def compute_and_print_update_stream(
    *tables: Table, include_id: bool = True, short_pointers: bool = True, n_rows: int | None = None, **run_kwargs: Any
) -> None:
    """Prints every change of each table: its rows with ``__time__`` and ``__diff__``."""
    for table, batches in zip(tables, _compute_tables(list(tables), **run_kwargs)):
        _print_update_stream(table, batches, include_id, n_rows)


def _print_update_stream(table: Table, batches: list[OutputBatch], include_id: bool, n_rows: int | None) -> None:
    rows = []
    for batch in batches:
        rows_of = batch_rows(batch, table.schema._dtypes())
        for row_id, row, diff in zip(batch.ids.to_pylist(), rows_of, batch.diffs.to_pylist()):
            time = END_OF_INPUT_TIME if batch.end_of_input else batch.time
            rows.append(([pointer_text(row_id, short=True)] if include_id else []) + _printed(row, table) + [time, diff])
    # as Pathway prints them: by time, then diff, then values
    rows.sort(key=lambda r: (r[-2], r[-1], _order(r[1:-2] if include_id else r[:-2])))
    _print_rows(([""] if include_id else []) + table.column_names() + ["__time__", "__diff__"], rows[:n_rows] if n_rows else rows)
