"""``pw.io.iceberg``: read an Apache Iceberg table as it changes; write a table's
changes, or its live snapshot, to an Iceberg table, one snapshot per time, exactly once.  With the ``pyiceberg``
package, no JVM: ``pip install 'sparkway[iceberg]'``.

See docs/iceberg.md for the catalogs, the value mapping and the guarantees.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sparkway.api import graph
from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.connectors.base import STREAM_OF_CHANGES
from sparkway.connectors.iceberg import (
    GlueCatalog, IcebergChangesSink, IcebergSink, IcebergSource, RestCatalog, SqlCatalog, check_catalog, identifier,
    require_pyiceberg,
)
from sparkway.connectors.formats.arrow import output_type
from sparkway.errors import PlanError, traced
from sparkway.io._common import (
    persistent_name, refuse_a_second_output, refuse_unknown_options, table_sink_columns,
)

__all__ = ["GlueCatalog", "RestCatalog", "SqlCatalog", "read", "write"]

MODES = ("streaming", "static")


@traced
def read(
    catalog: RestCatalog | GlueCatalog | SqlCatalog | Any,
    namespace: list[str],
    table_name: str,
    schema: type[Schema],
    *,
    mode: str = "streaming",
    autocommit_duration_ms: int | None = 1500,
    name: str | None = None,
    max_backlog_size: int | None = None,
    debug_data: Any = None,
    **kwargs: Any,
) -> Table:
    """The rows of the Iceberg table ``namespace``.``table_name`` of ``catalog``.

    ``catalog`` is a ``pw.io.iceberg.RestCatalog`` or ``GlueCatalog`` (as in Pathway),
    or, a sparkway addition that needs no server, a ``pw.io.iceberg.SqlCatalog`` (a SQL
    database, e.g. SQLite, holding the catalog) or any pyiceberg catalog object.
    ``mode="static"`` reads the table's current snapshot and ends; ``"streaming"`` (the
    default) then reads every new snapshot as it is committed, one snapshot at one time:
    the rows of the data files it adds are inserted, the rows of those it deletes are
    retracted.  New snapshots are looked for every ``autocommit_duration_ms``.  Rows are
    identified by the schema's primary key (Pathway requires one; sparkway also reads a
    table without, identifying rows by their data file and place in it).  With
    persistence, the last snapshot read is the source's position (``name=``, or
    ``persistent_id=``): a restart continues with the snapshots committed since.  The
    namespace is created if missing, as Pathway does; the table must exist when the run
    starts.  ``max_backlog_size`` and ``debug_data`` are accepted and ignored.

    >>> import sparkway as pw
    >>> class User(pw.Schema):
    ...     user_id: int = pw.column_definition(primary_key=True)
    ...     name: str
    >>> catalog = pw.io.iceberg.SqlCatalog(uri="sqlite:///catalog.db", warehouse="warehouse")
    >>> users = pw.io.iceberg.read(catalog, ["app"], "users", User, mode="static")
    >>> users.column_names()
    ['user_id', 'name']
    """
    refuse_unknown_options("pw.io.iceberg.read", kwargs, ignored=("persistent_id",))
    if mode not in MODES:
        raise PlanError(f"mode must be one of {list(MODES)}, not {mode!r}")
    require_pyiceberg()
    check_catalog(catalog)
    if not isinstance(schema, type) or not issubclass(schema, Schema):
        raise PlanError(f"pw.io.iceberg.read needs a pw.Schema class as schema, got {schema!r}")
    source = IcebergSource(catalog, identifier(namespace, table_name), schema.columns(), mode=mode,
                           autocommit_duration_ms=autocommit_duration_ms,
                           name=persistent_name(name, kwargs.get("persistent_id")))
    return graph.table_from_source(source)


@traced
def write(
    table: Table,
    catalog: RestCatalog | GlueCatalog | SqlCatalog | Any,
    namespace: list[str],
    table_name: str,
    *,
    timestamp_unit: str = "us",
    min_commit_frequency: int | None = 60_000,
    name: str | None = None,
    sort_by: Iterable[Any] | None = None,
    output_table_type: str = STREAM_OF_CHANGES,
) -> None:
    """Writes ``table`` to the Iceberg table ``namespace``.``table_name`` of ``catalog``
    (see ``read`` for the catalogs), created if missing with its namespace.

    ``output_table_type="stream_of_changes"`` (the default, and all Pathway 0.33 has)
    appends every change as a row: the table's columns, then ``time`` and ``diff`` (1 or
    -1), both ``long``.  ``"snapshot"``, sparkway's addition matching
    ``pw.io.deltalake.write``'s, keeps the live rows, with one more column, ``_id`` (the
    row id as text): each time removes the rows of the ids it changes and adds their new
    values (copy-on-write: the data files holding them are rewritten).

    Each time is one Iceberg snapshot, one catalog commit, so a reader sees a time whole
    or not at all.  In a large step, Spark's tasks write the data files of the stream of
    changes, each its piece of the time, and the driver only commits them; a snapshot's
    time is written from the driver.  Exactly once: the snapshot's summary records the sink and the time
    (``sparkway.sink`` = ``name``, default ``"iceberg"``; ``sparkway.time``); a time not
    above the one recorded is skipped, so a step replayed after a crash writes
    nothing.  Date-times are written in microseconds (``timestamp_unit="us"``):
    Pathway's default, nanoseconds, needs Iceberg v3 tables, which pyiceberg cannot
    write yet, so ``"ns"`` is refused for a table with date-time columns.
    ``min_commit_frequency`` is accepted for Pathway's sake: sparkway commits every time
    (the commit is what makes it durable).  ``sort_by`` orders the rows of one time.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("owner | pet\\n Alice | dog\\n Bob | cat")
    >>> catalog = pw.io.iceberg.SqlCatalog(uri="sqlite:///catalog.db", warehouse="warehouse")
    >>> pw.io.iceberg.write(t, catalog, ["app"], "pet_changes", name="pet_changes")
    >>> pw.io.iceberg.write(t, catalog, ["app"], "pets", name="pets", output_table_type="snapshot")
    >>> pw.run()   # doctest: +SKIP
    """
    require_pyiceberg()
    check_catalog(catalog)
    if timestamp_unit not in ("us", "ns"):
        raise PlanError(f"timestamp_unit must be 'us' or 'ns', not {timestamp_unit!r}")
    columns = table_sink_columns(table, output_table_type, min_commit_frequency, "Iceberg table", output_type)
    for column, dtype in columns.items():
        if timestamp_unit == "ns" and dtype.with_optional(False).name in ("DateTimeNaive", "DateTimeUtc"):
            raise PlanError(f"column {column!r}: timestamp_unit='ns' needs an Iceberg v3 table, which pyiceberg "
                            "cannot write yet: use timestamp_unit='us'")
    ident = identifier(namespace, table_name)
    kind = IcebergChangesSink if output_table_type == STREAM_OF_CHANGES else IcebergSink
    sink = kind(catalog, ident, columns, name=name)
    refuse_a_second_output(lambda other: isinstance(other, IcebergSink) and other.ident == ident
                           and other.catalog == catalog, f"the Iceberg table {'.'.join(ident)!r}")
    graph.write_to_sink(table, sink, sort_by)
