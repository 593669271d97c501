"""The program being built: the tables that sources feed, and the outputs ``pw.run`` computes.

Every connector's ``read`` ends in ``table_from_source`` and every ``write`` in
``write_to_sink``, so that sources and sinks enter the plan in one way.
"""

from __future__ import annotations

import itertools

from sparkway.api.table import Table
from sparkway.connectors.base import Sink, Source
from sparkway.plan import nodes as n

_outputs: list[n.Output] = []
_source_sequence = itertools.count()


def table_from_source(source: Source, label: str = "table") -> Table:
    """The table ``source`` feeds, with the source's columns.

    Sources without a persistent id are named in the order they were created, so the
    source is numbered here.
    """
    source.sequence = next(_source_sequence)
    return Table(n.Input(dict(source.columns), source), label)


def write_to_sink(table: Table, sink: Sink) -> None:
    """Makes ``sink`` receive every change of ``table`` when the program runs."""
    _outputs.append(n.Output(dict(table._node.columns), table._node, sink))


def outputs() -> list[n.Output]:
    """Every output defined so far, in the order they were defined."""
    return list(_outputs)


def clear() -> None:
    """Forget every output defined so far (tests build several programs in one process)."""
    _outputs.clear()
