"""Reading tables in tests: final rows, ids and per-time changes as plain Python values."""

from __future__ import annotations

import math
import threading
from typing import Any

import pandas as pd

import sparkway as pw
from sparkway.core import dtypes


class EveryType(pw.Schema):
    """A column of every type a table sink writes (the table sinks' round-trip tests)."""

    i: int
    f: float
    s: str
    b: bool
    raw: bytes
    j: pw.Json
    naive: pw.DateTimeNaive
    utc: pw.DateTimeUtc
    span: pw.Duration
    opt: int | None
    ints: list[int]
    pair: tuple[str, int]


#: a row of ``EveryType``, by column
EVERY_TYPE_ROW = {"i": 42, "f": 3.25, "s": "hello", "b": True, "raw": b"\x00\xff", "j": pw.Json({"a": 1}),
                  "naive": pd.Timestamp("2026-01-15 10:30:45.123456"),
                  "utc": pd.Timestamp("2026-01-15 10:30:45.5", tz="UTC"), "span": pd.Timedelta(microseconds=1500),
                  "opt": None, "ints": [1, 2, 3], "pair": ("x", 7)}


def plain(value: Any) -> Any:
    """A pandas cell as a plain Python value (NaN -> None, numpy scalars -> Python)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    # Timestamps and Timedeltas with nanoseconds stay (Python's types have microseconds)
    if isinstance(value, pd.Timestamp) and value.nanosecond == 0:
        return value.to_pydatetime()
    if isinstance(value, pd.Timedelta) and value.nanoseconds == 0:
        return value.to_pytimedelta()
    if value is pd.NaT or value is pd.NA:
        return None
    return value.item() if hasattr(value, "item") and not isinstance(value, (tuple, list)) else value


def sorted_rows(items: list[tuple]) -> list[tuple]:
    return sorted(items, key=repr)


def frame_rows(frame: pd.DataFrame) -> dict[int, tuple]:
    """Row id -> the row as a tuple of plain values."""
    return {i: tuple(plain(v) for v in r) for i, r in zip(frame.index, frame.itertuples(index=False))}


def rows(table: pw.Table) -> list[tuple]:
    """The table's final rows as tuples (ids ignored), sorted."""
    return sorted_rows(list(frame_rows(pw.debug.table_to_pandas(table)).values()))


def assert_rows(table: pw.Table, expected: list[tuple]) -> None:
    assert rows(table) == sorted_rows(expected)


def ids_of(table: pw.Table) -> dict[Any, int]:
    """First column value -> row id, for a table whose first column names its rows."""
    frame = pw.debug.table_to_pandas(table)
    return {plain(v): i for i, v in zip(frame.index, frame.iloc[:, 0])}


def changes(table: pw.Table) -> list[list[tuple]]:
    """Per output time: the changes as sorted (columns..., diff) tuples."""
    # date-times and durations (stored as nanoseconds) as Python's values; others as stored
    times = {c: _time_value(kind) for c, kind in table.schema._dtypes().items()}
    out = []
    for batch in pw.debug.compute(table):
        names = table.column_names()
        data = zip(batch.table.to_pylist(), batch.diffs.to_pylist())
        out.append(sorted_rows([tuple(times[c](r[c]) for c in names) + (diff,) for r, diff in data]))
    return out


def _time_value(kind: dtypes.DType) -> Any:
    if kind.with_optional(False) in (dtypes.DATE_TIME_NAIVE, dtypes.DATE_TIME_UTC, dtypes.DURATION):
        as_python = dtypes.to_python(kind)
        return lambda v: plain(as_python(v))
    return lambda v: v


def assert_changes(table: pw.Table, expected: list[list[tuple]]) -> None:
    """The table's changes, time by time, are the expected ones (in any order within a time)."""
    assert changes(table) == [sorted_rows(batch) for batch in expected]


#: a table's changes over three times (2, 4, 6), with a row updated and one deleted: what
#: the output connectors' tests write (``pw.debug.table_from_markdown(CHANGES)``)
CHANGES = """
  id | k | v | __time__ | __diff__
  1  | a | 1 | 2        | 1
  2  | b | 2 | 2        | 1
  1  | a | 1 | 4        | -1
  1  | a | 3 | 4        | 1
  3  | c | 5 | 4        | 1
  2  | b | 2 | 6        | -1
"""


class Subscribed:
    """The changes of ``table`` while a run goes on (``pw.io.subscribe``): ``seen`` holds
    the ``columns``' values of each change and whether it is an addition, ``times`` its
    time.  For tests that change a streaming input from another thread and wait for it."""

    def __init__(self, table: pw.Table, *columns: str, timeout: float = 120) -> None:
        self.seen: list[tuple] = []
        self.times: list[int] = []
        self.columns, self.timeout = columns, timeout
        self._changed = threading.Condition()
        pw.io.subscribe(table, on_change=self._on_change)

    def _on_change(self, key: Any, row: dict, time: int, is_addition: bool) -> None:
        with self._changed:
            self.seen.append((*(row[c] for c in self.columns), is_addition))
            self.times.append(time)
            self._changed.notify_all()

    def wait_for(self, count: int) -> None:
        """Until ``count`` changes were seen (fails after ``timeout`` seconds)."""
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.seen) >= count, timeout=self.timeout), self.seen


def large_steps(monkeypatch: Any, writer: type) -> list[int]:
    """Makes every step large, its output made in 4 pieces by Spark's tasks, and returns
    the times of the pieces that this process's ``writer`` (a ``PieceWriter`` class)
    wrote: Spark's Python workers are processes of their own, whose writes it never sees."""
    monkeypatch.setattr("sparkway.engine.runner.LARGE_STEP_ROWS", 0)
    monkeypatch.setattr("sparkway.engine.runner.collect_parts", lambda tables, partitions: 4)
    here: list[int] = []
    write_piece = writer.write_piece

    def recorded(self: Any, batch: Any) -> Any:
        here.append(batch.time)
        return write_piece(self, batch)

    monkeypatch.setattr(writer, "write_piece", recorded)
    return here


def take_with_a_second_attempt(sink: Any, pieces: list[Any], time: int) -> None:
    """Does each piece as a Spark task would, and the first one a second time (a task
    retried, or a speculative copy) whose result never reaches the driver; then the
    ``sink`` takes the first attempts' pieces and ends the time."""
    writer = sink.piece_writer()
    taken = [writer.write_piece(piece) for piece in pieces]
    writer.write_piece(pieces[0])
    for piece in taken:
        sink.take_piece(time, piece)
    sink.end_time(time)
