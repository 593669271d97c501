"""Tables that live widgets follow (``Table.plot``, ``Table.show``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparkway.api import graph
from sparkway.api.run import run_outputs
from sparkway.api.table import Table
from sparkway.connectors.callbacks import CallbackSink
from sparkway.plan import nodes as n


def follow(
    table: Table,
    on_change: Callable[..., Any],
    on_time_end: Callable[[int], Any],
) -> bool:
    """Hands ``table``'s changes to ``pw.io.subscribe``'s callbacks: at once, in a run of
    its own, when every source it reads is static (returns True), else during ``pw.run``
    (returns False), so that a widget shows a static table immediately and a streaming one
    as it changes.

    >>> import sparkway as pw
    >>> seen = []
    >>> t = pw.debug.table_from_markdown("a\\n1\\n2")
    >>> follow(t, lambda key, row, time, is_addition: seen.append(row["a"]), lambda time: None)
    True
    >>> sorted(seen)
    [1, 2]
    """
    sink = CallbackSink(dict(table._node.columns), on_change, on_time_end, None)
    if n.is_bounded(table._node):
        run_outputs([n.Output(dict(table._node.columns), table._node, sink)])
        return True
    graph.write_to_sink(table, sink)
    return False
