"""A sink that hands every change to Python callbacks (``pw.io.subscribe``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparkway.connectors.base import OutputBatch, Sink
from sparkway.core.dtypes import DType, to_python


class CallbackSink(Sink):
    """Calls ``on_change`` per changed row (retractions first), ``on_time_end`` after
    each time, ``on_end`` when the input is over."""

    name = "subscribe"

    def __init__(
        self,
        columns: dict[str, DType],
        on_change: Callable[..., Any] | None,
        on_time_end: Callable[[int], Any] | None,
        on_end: Callable[[], Any] | None,
    ) -> None:
        self.converters = {c: to_python(d) for c, d in columns.items()}
        self.on_change = on_change
        self.on_time_end = on_time_end
        self.on_end = on_end

    def write(self, batch: OutputBatch) -> None:
        if self.on_change is not None and batch.table.num_rows:
            values = {c: [convert(v) for v in batch.table.column(c).to_pylist()] for c, convert in self.converters.items()}
            ids = batch.ids.to_pylist() if batch.ids is not None else [None] * batch.table.num_rows
            diffs = batch.diffs.to_pylist()
            for i in range(len(diffs)):
                row = {c: column[i] for c, column in values.items()}
                self.on_change(key=ids[i], row=row, time=batch.time, is_addition=diffs[i] > 0)
        if self.on_time_end is not None:
            self.on_time_end(batch.time)

    def close(self) -> None:
        if self.on_end is not None:
            self.on_end()
