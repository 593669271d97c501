"""The program being built: the tables that sources feed, and the outputs ``pw.run`` computes.

Every connector's ``read`` ends in ``table_from_source`` and every ``write`` in
``write_to_sink``, so that sources and sinks enter the plan in one way.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
from collections.abc import Iterable, Iterator
from typing import Any

from sparkway.api import row_transformer
from sparkway.api.schema import Schema
from sparkway.api.table import Table, Universe, built_nodes, forget_built
from sparkway.connectors.base import Sink, Source
from sparkway.connectors.writers import NullSink
from sparkway.core import dtypes as dt
from sparkway.errors import warn_user
from sparkway.plan import nodes as n

_outputs: list[n.Output] = []
_ran: set[int] = set()  # the plan nodes (by identity) a run has computed
_global_error_log: list[Table] = []  # made on first use
_source_sequence = itertools.count()
# static tables with the same ids share one universe (as in Pathway), by a key of their ids
_static_universes: dict[object, Universe] = {}


def table_from_source(source: Source, label: str = "table", ids_key: object = None) -> Table:
    """The table ``source`` feeds, with the source's columns.

    Sources without a persistent id are named in the order they were created, so the
    source is numbered here.  Sources whose rows are known up front give ``ids_key``
    (what their ids are made from): tables with equal keys have the same ids, so their
    columns may be used in each other's operations.
    """
    source.sequence = next(_source_sequence)
    universe = None if ids_key is None else _static_universes.setdefault(ids_key, Universe())
    keys = [source.columns[k] for k in source.key_columns]
    return Table(n.Input(dict(source.columns), source), label, universe=universe, id_type=dt.pointer_to(*keys))


def source_of(table: Table) -> Source | None:
    """The source feeding ``table`` when it is a table as a source gave it (not a
    transformed one), else None."""
    node = table._node
    return node.source if isinstance(node, n.Input) else None


def write_to_sink(table: Table, sink: Sink, sort_by: Iterable[Any] | None = None) -> None:
    """Makes ``sink`` receive every change of ``table`` when the program runs, the changes
    of one time in the order of the ``sort_by`` columns (references or names)."""
    names = [c if isinstance(c, str) else c.name for c in sort_by or ()]
    unknown = [name for name in names if name not in table._node.columns]
    if unknown:
        raise KeyError(f"sort_by: no column {', '.join(map(repr, unknown))} in the table written; "
                       f"its columns: {', '.join(table.column_names())}")
    sink.sort_by = names
    _outputs.append(n.Output(dict(table._node.columns), table._node, sink))


def outputs() -> list[n.Output]:
    """Every output defined so far, in the order they were defined."""
    return list(_outputs)


def outputs_and_unused_tables() -> list[n.Output]:
    """Every output, and an output discarding the changes of each table built that no
    output and no other table reads: what ``pw.run_all`` computes."""
    built = built_nodes()
    read: set[int] = set()
    pending = [i for node in built for i in node.inputs] + [out.input for out in _outputs]
    while pending:
        node = pending.pop()
        if id(node) not in read:
            read.add(id(node))
            pending.extend(node.inputs)
    unused = [node for node in built if id(node) not in read]
    return outputs() + [n.Output(dict(node.columns), node, NullSink()) for node in unused]


def mark_ran(selected: list[n.Output]) -> None:
    """Remembers that a run computes these outputs and everything they read."""
    pending: list[n.Node] = list(selected)
    while pending:
        node = pending.pop()
        if id(node) not in _ran:
            _ran.add(id(node))
            pending.extend(node.inputs)


def warn_if_some_operators_unused() -> None:
    """Warns when tables were built that no run computed (a program that forgot
    ``pw.run()``, or built tables nothing reads), as Pathway does when the program exits."""
    if any(id(node) not in _ran for node in built_nodes()):
        warn_user(  # Pathway's words
            "There are operators in the computation graph that haven't been used. "
            "Use pathway.run() (or similar) to run the computation involving these nodes."
        )


atexit.register(warn_if_some_operators_unused)


class ErrorLogSchema(Schema):
    """The columns of an error log: the operator that failed (its number in the
    program), the error's message, and the program line that built the operator."""

    operator_id: int
    message: str
    trace: str


def global_error_log() -> Table:
    """The errors of a run with ``terminate_on_error=False``: one row per Error value
    made (or row skipped because of one), outside any ``pw.local_error_log()`` block.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a | b\\n4 | 0")
    >>> messages = []
    >>> pw.io.subscribe(t.select(q=pw.this.a // pw.this.b), on_change=lambda **kwargs: None)
    >>> pw.io.subscribe(pw.global_error_log(), on_change=lambda row, **kwargs: messages.append(row["message"]))
    >>> pw.run(terminate_on_error=False, monitoring_level=pw.MonitoringLevel.NONE)
    >>> sorted(messages)
    ['Error value encountered in output, skipping the row', 'division by zero']
    """
    if not _global_error_log:
        _global_error_log.append(Table(n.ErrorLog(_error_log_columns()), "error_log"))
    return _global_error_log[0]


@contextlib.contextmanager
def local_error_log() -> Iterator[Table]:
    """A block whose operators log their errors in a table of their own (not in the
    global log).

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a | b\\n4 | 0")
    >>> with pw.local_error_log() as errors:
    ...     q = t.select(q=pw.this.a // pw.this.b)
    >>> errors.column_names()
    ['operator_id', 'message', 'trace']
    """
    node = n.ErrorLog(_error_log_columns(), local=True)
    with node.collecting():
        yield Table(node, "error_log")


def _error_log_columns() -> dict:
    return dict(ErrorLogSchema._dtypes())


def clear() -> None:
    """Forget every table and output built so far (tests build several programs in one process)."""
    _outputs.clear()
    _ran.clear()
    _static_universes.clear()
    _global_error_log.clear()
    row_transformer.clear()
    forget_built()
