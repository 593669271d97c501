"""``pw.demo``: artificial streams for examples and tests, produced by a Python
connector that emits one row every ``1 / input_rate`` seconds."""

from __future__ import annotations

import random
import time
from typing import Any, Callable

from sparkway.api.schema import Schema, column_definition
from sparkway.api.table import Table
from sparkway.io import python

__all__ = ["generate_custom_stream", "noisy_linear_stream", "range_stream"]


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
