"""A source of the current time: one row ``timestamp_utc`` every ``refresh_rate``
(``pw.temporal.utc_now``).  It never ends: a program reading it runs until stopped, as
Pathway's does.

A tick is a segment naming its time, so a replayed step reads the same row.  The step
loop asks ``due_in()`` how long to wait for the next tick, so that a tick comes on time
even when it is due sooner than the loop's poll interval.
"""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa

from sparkway.connectors.base import Segment, Source, record_ids
from sparkway.core import changes
from sparkway.core import dtypes as dt


class ClockSource(Source):
    """Ticks: a row with the current UTC time, every ``refresh_s`` seconds (the first one
    ``initial_delay_s`` after the run starts)."""

    connector_label = "ClockReader"
    append_only = True
    synchronizable = False  # the clock of pw.temporal, not a table the user read

    def __init__(self, refresh_s: float, initial_delay_s: float = 0.0, name: str | None = None) -> None:
        if refresh_s <= 0:
            raise ValueError(f"utc_now needs a positive refresh_rate, got {refresh_s} s")
        self.columns = {"timestamp_utc": dt.DATE_TIME_UTC}
        self.refresh_s, self.initial_delay_s = refresh_s, initial_delay_s
        self.name = name
        self.ticks = 0  # ticks read so far, in this run and the ones before
        self.next_at = 0.0  # time.monotonic() of the next tick

    def open(self, storage: Any) -> None:
        self.next_at = time.monotonic() + self.initial_delay_s

    def discover(self) -> list[Segment]:
        if time.monotonic() < self.next_at:
            return []
        return [{"tick": self.ticks, "at_ns": time.time_ns()}]

    def due_in(self) -> float | None:
        return max(0.0, self.next_at - time.monotonic())

    def read(self, segments: list[Segment]) -> pa.Table:
        schema = changes.arrow_schema(self.columns)
        moments = [s["at_ns"] for s in segments]  # date-times are nanoseconds since the epoch
        ids = record_ids(self.name or "clock", "ticks", [s["tick"] for s in segments])
        return pa.table([pa.array(ids, pa.int64()), pa.array(moments, schema.field(1).type),
                         pa.array([1] * len(segments), pa.int64())], schema=schema)

    def advance(self, segments: list[Segment]) -> None:
        if segments:
            self.ticks = segments[-1]["tick"] + 1
            self.next_at = time.monotonic() + self.refresh_s

    def position(self) -> dict[str, Any]:
        return {"ticks": self.ticks}

    def restore(self, position: dict[str, Any]) -> None:
        self.ticks = position["ticks"]
