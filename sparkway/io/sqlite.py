"""``pw.io.sqlite``: read a SQLite table as it changes; write a table's changes, or its
live snapshot, to a SQLite table.

See docs/sqlite.md for the identities of read rows, the value mapping and the guarantees.
"""

from __future__ import annotations

import os
from typing import Any

from sparkway.api import graph
from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.connectors.base import META_COLUMNS, SNAPSHOT, STREAM_OF_CHANGES
from sparkway.connectors.sqlite import INIT_MODES, SqliteSink, SqliteSource
from sparkway.errors import PlanError, traced
from sparkway.io._common import snapshot_primary_key

__all__ = ["read", "write"]


@traced
def read(
    path: str | os.PathLike,
    table_name: str,
    schema: type[Schema],
    *,
    autocommit_duration_ms: int | None = 1500,
    name: str | None = None,
    max_backlog_size: int | None = None,
    debug_data: Any = None,
) -> Table:
    """The rows of the SQLite table (or view) ``table_name``, kept up to date: the table
    is polled every ``autocommit_duration_ms`` and its inserted, updated and deleted rows
    become insertions, updates and retractions.

    A row is identified by the schema's primary key columns
    (``pw.column_definition(primary_key=True)``), which must be a UNIQUE or PRIMARY KEY
    constraint of the table (a view's key is trusted), or else by SQLite's ``_rowid_``.
    The run never ends by itself.  Persistence is not supported (the table keeps no
    history to resume from).

    >>> import sparkway as pw
    >>> class User(pw.Schema):
    ...     id: int = pw.column_definition(primary_key=True)
    ...     name: str
    >>> users = pw.io.sqlite.read("app.db", "users", User, autocommit_duration_ms=100)
    >>> users.column_names()
    ['id', 'name']
    """
    if not isinstance(schema, type) or not issubclass(schema, Schema):
        raise PlanError(f"pw.io.sqlite.read needs a pw.Schema class as schema, got {schema!r}")
    _reject_directory(path)
    source = SqliteSource(path, table_name, schema.columns(), autocommit_duration_ms=autocommit_duration_ms,
                          name=name)
    return graph.table_from_source(source)


@traced
def write(
    table: Table,
    path: str | os.PathLike,
    table_name: str,
    *,
    max_batch_size: int | None = None,
    init_mode: str = "default",
    output_table_type: str = STREAM_OF_CHANGES,
    primary_key: list[Any] | None = None,
    name: str | None = None,
) -> None:
    """Writes ``table`` to the table ``table_name`` of the SQLite database ``path``
    (created if missing), each time's changes in one transaction, exactly once.

    ``output_table_type="stream_of_changes"`` appends every change as a row: the columns,
    then ``time`` and ``diff`` (1 or -1).  ``"snapshot"`` keeps the live rows, one per
    ``primary_key`` (column references): an insertion is an upsert, a retraction deletes.
    ``init_mode``: ``"default"`` (the table must exist), ``"create_if_not_exists"`` or
    ``"replace"`` (drop and create).  ``max_batch_size`` is accepted for Pathway's sake:
    a time's changes always go in one transaction.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("owner | pet\\n Alice | dog")
    >>> pw.io.sqlite.write(t, "pets.db", "pets", output_table_type="snapshot",
    ...                    primary_key=[t.owner], init_mode="create_if_not_exists")
    >>> pw.run()   # doctest: +SKIP
    """
    if output_table_type not in (STREAM_OF_CHANGES, SNAPSHOT):
        raise PlanError(f"output_table_type must be {STREAM_OF_CHANGES!r} or {SNAPSHOT!r}, not {output_table_type!r}")
    if init_mode not in INIT_MODES:
        raise PlanError(f"init_mode must be one of {list(INIT_MODES)}, not {init_mode!r}")
    if max_batch_size is not None and max_batch_size < 1:
        raise PlanError(f"max_batch_size must be a positive number of rows, not {max_batch_size}")
    _reject_directory(path)
    columns = table.schema._dtypes()
    _check_column_names(list(columns), output_table_type)
    key = snapshot_primary_key(table, primary_key, output_table_type)
    sink = SqliteSink(path, table_name, columns, table_type=output_table_type, primary_key=key,
                      init_mode=init_mode, name=name)
    _check_distinct_progress(sink)
    graph.write_to_sink(table, sink)


def _check_distinct_progress(sink: SqliteSink) -> None:
    """Two sinks with one progress record in one file would skip each other's times."""
    for output in graph.outputs():
        other = output.sink
        if (isinstance(other, SqliteSink) and other.progress_id == sink.progress_id
                and os.path.abspath(other.path) == os.path.abspath(sink.path)):
            raise PlanError(f"two SQLite outputs of this program to {sink.path!r} are both named "
                            f"{sink.progress_id!r}: give each a distinct name= (it keys the output's progress record)")


def _reject_directory(path: str | os.PathLike) -> None:
    if os.path.isdir(path):
        raise PlanError(f"{os.fspath(path)!r} is an existing directory, not a SQLite database file: "
                        "give the path of a database file")


def _check_column_names(names: list[str], output_table_type: str) -> None:
    """SQLite matches names without case: ``A`` and ``a`` would be one column."""
    lowered = [c.lower() for c in names]
    clashing = sorted({c for c in names if lowered.count(c.lower()) > 1})
    if clashing:
        raise PlanError(f"the table has column names that differ only in case, {clashing}, which SQLite takes "
                        "for one column: rename them (table.rename(...)) before writing")
    taken = [c for c in names if c.lower() in META_COLUMNS]
    if output_table_type == STREAM_OF_CHANGES and taken:
        raise PlanError(f"column(s) {taken} collide with the 'time' and 'diff' metadata columns appended in "
                        "stream_of_changes mode: rename them (table.rename(...)) before writing")


