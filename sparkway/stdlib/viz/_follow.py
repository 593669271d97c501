"""A table's rows kept for a widget, changed at the end of every time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparkway.api.live import follow
from sparkway.api.table import Table


class Followed:
    """The rows of ``table`` by id, and (``keep_changes``) every change, as of its last
    finished time; ``refresh(followed)`` is called after each time.  ``bounded``: the table
    was computed at once (all its sources are static); else it changes during ``pw.run``.
    Changes are kept only when asked: a live widget of current rows would otherwise hold
    every change of a long run."""

    def __init__(self, table: Table, refresh: Callable[["Followed"], Any], keep_changes: bool = False) -> None:
        self.rows: dict[int, dict[str, Any]] = {}
        self.changes: list[tuple[int, dict[str, Any], int, int]] = []  # (id, row, time, diff)
        self._refresh = refresh
        self._keep_changes = keep_changes
        self._pending: list[tuple[int, dict[str, Any], int, int]] = []
        self.bounded = follow(table, self._on_change, self._on_time_end)

    def _on_change(self, key: int, row: dict[str, Any], time: int, is_addition: bool) -> None:
        self._pending.append((key, row, time, 1 if is_addition else -1))

    def _on_time_end(self, time: int) -> None:
        # an update is a removal and an addition of one id: the removal goes first
        for key, row, _, diff in sorted(self._pending, key=lambda change: change[3]):
            if diff > 0:
                self.rows[key] = row
            else:
                self.rows.pop(key, None)
        if self._keep_changes:
            self.changes += self._pending
        self._pending = []
        self._refresh(self)


def header(bounded: bool) -> Any:
    """The line above a widget: whether it shows a static preview or a live table."""
    import panel as pn

    if bounded:
        return pn.Row("Static preview", pn.widgets.TooltipIcon(value="The table reads only static input: computed now"))
    return pn.Row("Streaming mode", pn.widgets.TooltipIcon(value="The table reads streaming input: updated while pw.run() runs"))
