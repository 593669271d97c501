"""``pw.io.postgres``: a table's changes, or its live snapshot, in a PostgreSQL table.

See docs/postgres.md for the table layouts, the type mapping and the guarantees.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sparkway.api import graph
from sparkway.api.table import Table
from sparkway.connectors.base import META_COLUMNS, SNAPSHOT, STREAM_OF_CHANGES
from sparkway.connectors.postgres import INIT_MODES, PostgresSink, sql_type
from sparkway.errors import PlanError, PlanTypeError, traced
from sparkway.io._common import snapshot_primary_key

__all__ = ["write", "write_snapshot"]


@traced
def write(
    table: Table,
    postgres_settings: dict,
    table_name: str,
    *,
    max_batch_size: int | None = None,
    init_mode: str = "default",
    output_table_type: str = STREAM_OF_CHANGES,
    primary_key: list[Any] | None = None,
    name: str | None = None,
    sort_by: Iterable[Any] | None = None,
) -> None:
    """Writes ``table`` to the PostgreSQL table ``table_name``, exactly once.

    ``output_table_type="stream_of_changes"`` appends every change as a row: the columns,
    then ``time`` (BIGINT) and ``diff`` (SMALLINT, 1 or -1).  ``"snapshot"`` keeps one row
    per ``primary_key`` (column references or names) holding the latest value (the
    columns only); a retracted row is deleted.

    ``postgres_settings`` are libpq connection parameters (``host``, ``port``, ``dbname``,
    ``user``, ``password``, ...).  ``init_mode``: ``"default"`` (the table must exist),
    ``"create_if_not_exists"`` or ``"replace"`` (drop and create).  ``max_batch_size``
    splits a step's rows into several statements, all in the step's one transaction.
    ``name`` identifies the sink's progress (default: ``table_name``). ``sort_by``
    (columns) orders the rows of one time.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("word | count\\n a | 2")
    >>> settings = {"host": "localhost", "port": 5432, "dbname": "db", "user": "me", "password": "pw"}
    >>> pw.io.postgres.write(t, settings, "counts", output_table_type="snapshot",
    ...                      primary_key=[t.word], init_mode="create_if_not_exists")
    >>> pw.run()   # doctest: +SKIP
    """
    if output_table_type not in (STREAM_OF_CHANGES, SNAPSHOT):
        raise PlanError(f"output_table_type must be {STREAM_OF_CHANGES!r} or {SNAPSHOT!r}, not {output_table_type!r}")
    _write(table, postgres_settings, table_name, max_batch_size, init_mode, output_table_type, primary_key, name,
           sort_by, with_time_columns=output_table_type == STREAM_OF_CHANGES)


def _write(
    table: Table, postgres_settings: dict, table_name: str, max_batch_size: int | None, init_mode: str,
    output_table_type: str, primary_key: list[Any] | None, name: str | None, sort_by: Iterable[Any] | None, *,
    with_time_columns: bool,
) -> None:
    if init_mode not in INIT_MODES:
        raise PlanError(f"init_mode must be one of {list(INIT_MODES)}, not {init_mode!r}")
    if max_batch_size is not None and max_batch_size < 1:
        raise PlanError(f"max_batch_size must be a positive number of rows, not {max_batch_size}")
    columns = table.schema._dtypes()
    _check_columns(columns, with_time_columns)
    key = snapshot_primary_key(table, primary_key, output_table_type)
    sink = PostgresSink(postgres_settings, table_name, columns, table_type=output_table_type, primary_key=key,
                        init_mode=init_mode, max_batch_size=max_batch_size, name=name,
                        with_time_columns=with_time_columns)
    _check_distinct_progress(sink)
    graph.write_to_sink(table, sink, sort_by)


@traced
def write_snapshot(
    table: Table,
    postgres_settings: dict,
    table_name: str,
    primary_key: list[Any],
    *,
    max_batch_size: int | None = None,
    init_mode: str = "default",
    name: str | None = None,
    sort_by: Iterable[Any] | None = None,
) -> None:
    """Keeps the live snapshot of ``table`` in ``table_name``, as ``write`` with
    ``output_table_type="snapshot"`` does, with two more columns, as Pathway's
    ``write_snapshot`` keeps them: ``time`` of each row's last change and ``diff`` (1).

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("user_id | requests\\n ann | 3")
    >>> settings = {"host": "localhost", "port": 5432, "dbname": "db", "user": "me", "password": "pw"}
    >>> pw.io.postgres.write_snapshot(t, settings, "user_stats", ["user_id"])
    >>> pw.run()   # doctest: +SKIP
    """
    _write(table, postgres_settings, table_name, max_batch_size, init_mode, SNAPSHOT, primary_key, name, sort_by,
           with_time_columns=True)


def _check_columns(columns: dict[str, Any], with_time_columns: bool) -> None:
    taken = [c for c in columns if c.lower() in META_COLUMNS] if with_time_columns else []
    if taken:
        raise PlanError(f"column(s) {taken} collide with the 'time' and 'diff' columns the PostgreSQL table "
                         "gets: rename them (table.rename(...)) before writing")
    for column, dtype in columns.items():
        try:
            sql_type(dtype)
        except TypeError as error:
            raise PlanTypeError(f"column {column!r}: {error}") from None


def _check_distinct_progress(sink: PostgresSink) -> None:
    """Two sinks with one progress record would skip each other's batches."""
    for output in graph.outputs():
        other = output.sink
        if isinstance(other, PostgresSink) and other.progress_id == sink.progress_id and other.settings == sink.settings:
            raise PlanError(f"two PostgreSQL outputs of this program are both named {sink.progress_id!r}: give "
                             "each a distinct name= (it keys the output's progress record)")
