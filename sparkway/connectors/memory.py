"""In-memory connectors: a source of given transactions, and a sink that keeps batches.

The debug helpers (``pw.debug``) build tables and read results with them.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from sparkway.connectors.base import OutputBatch, Segment, Sink, Source
from sparkway.core.dtypes import DType


class MemorySource(Source):
    """Input given up front as transactions (Arrow tables ``_id, <columns>, _diff``),
    one per step, in order."""

    connector_label = "MemoryReader"
    synchronizable = False  # rows given up front (pw.debug), not read by a connector

    def __init__(
        self, columns: dict[str, DType], transactions: list[pa.Table], name: str | None = None,
        key_columns: list[str] | None = None,
    ) -> None:
        self.columns = columns
        self.transactions = transactions
        self.name = name
        self.key_columns = list(key_columns or [])
        self.next = 0

    def open(self, storage: Any) -> None:
        self.next = 0  # every run reads from the start unless a position is restored

    def discover(self) -> list[Segment]:
        return [{"transaction": self.next}] if self.next < len(self.transactions) else []

    def read(self, segments: list[Segment]) -> pa.Table:
        parts = [self.transactions[s["transaction"]] for s in segments]
        return pa.concat_tables(parts) if parts else self.transactions[0].slice(0, 0)

    def advance(self, segments: list[Segment]) -> None:
        for segment in segments:
            self.next = max(self.next, segment["transaction"] + 1)

    def position(self) -> dict[str, Any]:
        return {"next": self.next}

    def restore(self, position: dict[str, Any]) -> None:
        self.next = position["next"]

    @property
    def is_finished(self) -> bool:
        return self.next >= len(self.transactions)

    def read_to_end(self, segments: list[Segment]) -> bool:
        return max((s["transaction"] for s in segments), default=self.next - 1) + 1 >= len(self.transactions)

    @property
    def bounded(self) -> bool:
        return True


class MemorySink(Sink):
    """Keeps every batch it receives, in order (Error values too)."""

    keeps_errors = True

    def __init__(self) -> None:
        self.batches: list[OutputBatch] = []

    def write(self, batch: OutputBatch) -> None:
        self.batches.append(batch)
