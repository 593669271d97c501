"""``pw.io.subscribe``: Python callbacks on a table's changes."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sparkway.api import graph
from sparkway.api.table import Table
from sparkway.connectors.callbacks import CallbackSink
from sparkway.errors import traced


@traced
def subscribe(
    table: Table,
    on_change: Callable[..., Any] | None = None,
    on_end: Callable[[], Any] | None = None,
    on_time_end: Callable[[int], Any] | None = None,
    *,
    name: str | None = None,
    sort_by: Iterable[Any] | None = None,
) -> None:
    """Calls ``on_change(key, row, time, is_addition)`` for every change of ``table``.

    An update of a row is a removal (``is_addition=False``) then an addition at the same
    ``time``; ``row`` maps column names to values.  ``on_time_end(time)`` follows the
    last change of each time, and ``on_end()`` is called once the input is over.
    ``sort_by`` (columns) orders the changes of one time.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a\\n1")
    >>> pw.io.subscribe(t, on_change=lambda key, row, time, is_addition: print(row))
    >>> pw.run(monitoring_level=pw.MonitoringLevel.NONE)  # doctest: +SKIP
    {'a': 1}
    """
    sink = CallbackSink(dict(table._node.columns), on_change, on_time_end, on_end)
    graph.write_to_sink(table, sink, sort_by)
