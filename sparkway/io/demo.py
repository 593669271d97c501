"""``pw.demo``: artificial streams for examples and tests, produced by a Python
connector that emits one row every ``1 / input_rate`` seconds."""

from __future__ import annotations

import csv
import random
import time
from typing import Any, Callable, Iterator

from sparkway.api.schema import Schema, column_definition
from sparkway.api.table import Table
from sparkway.io import python

__all__ = ["generate_custom_stream", "noisy_linear_stream", "range_stream", "replay_csv", "replay_csv_with_time"]


class _GeneratedRows(python.ConnectorSubject):
    """Emits row ``i`` (``i`` = 0, 1, ...) made by the value generators, ``nb_rows`` of
    them (None: without end)."""

    def __init__(self, generators: dict[str, Callable[[int], Any]], nb_rows: int | None, input_rate: float) -> None:
        super().__init__()
        self.generators, self.nb_rows, self.input_rate = generators, nb_rows, input_rate

    def run(self) -> None:
        i = 0
        while self.nb_rows is None or i < self.nb_rows:
            self.next(**{name: make(i) for name, make in self.generators.items()})
            i += 1
            time.sleep(1.0 / self.input_rate)


def generate_custom_stream(
    value_generators: dict[str, Callable[[int], Any]], *, schema: type[Schema], nb_rows: int | None = None,
    autocommit_duration_ms: int = 1000, input_rate: float = 1.0, name: str | None = None,
) -> Table:
    """A stream of ``nb_rows`` rows (None: without end), ``input_rate`` per second; row
    ``i``'s column ``c`` is ``value_generators[c](i)``.

    >>> import sparkway as pw
    >>> class S(pw.Schema):
    ...     number: int
    >>> pw.demo.generate_custom_stream({"number": lambda i: i + 1}, schema=S, nb_rows=3).column_names()
    ['number']
    """
    if nb_rows is not None and nb_rows < 0:
        raise ValueError("demo.generate_custom_stream error: nb_rows should be None or strictly positive.")
    subject = _GeneratedRows(value_generators, nb_rows, input_rate)
    return python.read(subject, schema=schema, autocommit_duration_ms=autocommit_duration_ms, name=name)


def range_stream(
    nb_rows: int = 30, offset: int = 0, input_rate: float = 1.0, autocommit_duration_ms: int = 1000,
) -> Table:
    """A stream of one float column ``value``: ``offset``, ``offset + 1``, ... (``nb_rows`` rows).

    >>> import sparkway as pw
    >>> pw.demo.range_stream(nb_rows=5, offset=10).typehints()["value"]
    <class 'float'>
    """
    if nb_rows < 0:
        raise ValueError("demo.range_stream error: nb_rows should be strictly positive.")

    class RangeSchema(Schema):
        value: float

    return generate_custom_stream(
        {"value": lambda i: float(i + offset)}, schema=RangeSchema, nb_rows=nb_rows,
        autocommit_duration_ms=autocommit_duration_ms, input_rate=input_rate,
    )


def noisy_linear_stream(nb_rows: int = 10, input_rate: float = 1.0) -> Table:
    """Rows ``x`` = 0.0, 1.0, ... (the primary key) and ``y`` = ``x`` plus noise in
    [-0.1, 0.1) (the same noise in every run).

    >>> import sparkway as pw
    >>> pw.demo.noisy_linear_stream(nb_rows=4).column_names()
    ['x', 'y']
    """
    if nb_rows < 0:
        raise ValueError("demo.noisy_linear_stream error: nb_rows should be strictly positive.")
    noise = random.Random(0)

    class LinearSchema(Schema):
        x: float = column_definition(primary_key=True)
        y: float

    return generate_custom_stream(
        {"x": float, "y": lambda i: float(i + (2 * noise.random() - 1) / 10)}, schema=LinearSchema,
        nb_rows=nb_rows, autocommit_duration_ms=1000, input_rate=input_rate,
    )


class _ReplayedRows(python.ConnectorSubject):
    """Emits the rows of a CSV file (the schema's columns, as text), each once
    ``delay_before(row)`` says it is due."""

    def __init__(self, path: str, columns: list[str], delay_before: Callable[[dict[str, str]], float]) -> None:
        super().__init__()
        self.path, self.columns, self.delay_before = path, columns, delay_before

    def run(self) -> None:
        for row in self._rows():
            wait = self.delay_before(row)
            if wait > 0:
                time.sleep(wait)
            self.next(**row)

    def _rows(self) -> Iterator[dict[str, str]]:
        with open(self.path, newline="") as file:
            for row in csv.DictReader(file):
                yield {name: row[name] for name in self.columns}


def _replayed(subject: _ReplayedRows, schema: type[Schema], autocommit_ms: int) -> Table:
    text = schema.with_types(**{name: str for name in schema.column_names()})
    rows = python.read(subject, schema=text, autocommit_duration_ms=autocommit_ms)
    return rows.cast_to_types(**schema.typehints())


def replay_csv(path: str, *, schema: type[Schema], input_rate: float = 1.0) -> Table:
    """The rows of a CSV file as a stream, ``input_rate`` rows per second.

    >>> import sparkway as pw
    >>> class S(pw.Schema):
    ...     k: int
    ...     v: str
    >>> pw.demo.replay_csv("input.csv", schema=S, input_rate=100).column_names()
    ['k', 'v']
    """
    subject = _ReplayedRows(path, schema.column_names(), lambda row: 1.0 / input_rate)
    return _replayed(subject, schema, int(1000.0 / input_rate))


_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def replay_csv_with_time(
    path: str, *, schema: type[Schema], time_column: str, unit: str = "s", autocommit_ms: int = 100,
    speedup: float = 1,
) -> Table:
    """The rows of a CSV file as a stream, each at the moment its ``time_column`` says
    (counted from the first row's time, in ``unit``: "s", "ms", "us" or "ns"), ``speedup``
    times faster.

    >>> import sparkway as pw
    >>> class S(pw.Schema):
    ...     v: str
    ...     time: int
    >>> pw.demo.replay_csv_with_time("input.csv", schema=S, time_column="time", unit="ms").column_names()
    ['v', 'time']
    """
    if schema.typehints().get(time_column) not in (int, float):
        raise ValueError(f"Invalid schema. Time columns must be int or float; {time_column!r} is not.")
    if unit not in _PER_SECOND:
        raise ValueError("demo.replay_csv_with_time: unit should be either 's', 'ms, 'us', or 'ns'.")
    per_second = _PER_SECOND[unit] * speedup
    clock: dict[str, float] = {}

    def delay_before(row: dict[str, str]) -> float:
        at = float(row[time_column])
        if not clock:  # the first row sets the start, in the file's time and in real time
            clock.update(first=at, start=time.monotonic())
        return (at - clock["first"]) / per_second - (time.monotonic() - clock["start"])

    return _replayed(_ReplayedRows(path, schema.column_names(), delay_before), schema, autocommit_ms)
