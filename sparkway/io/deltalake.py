"""``pw.io.deltalake``: read a Delta Lake table as it changes; write a table's changes,
or its live snapshot, to a Delta Lake table.  With the ``deltalake`` package (delta-rs),
no JVM: ``pip install 'sparkway[deltalake]'``.

See docs/deltalake.md for the layouts, the value mapping and the guarantees.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from sparkway.api import graph
from sparkway.api.schema import Schema, schema_from_dict
from sparkway.api.table import Table
from sparkway.connectors.base import STREAM_OF_CHANGES
from sparkway.connectors.deltalake import (
    APPEND_ONLY, DeltaChangesSink, DeltaSink, DeltaSource,
    delta_arrow_type, delta_storage_options, open_table, require_deltalake, stored_schema, table_uri,
)
from sparkway.core.expression import ColumnRef
from sparkway.errors import PlanError, traced
from sparkway.io._common import (
    persistent_name, refuse_a_second_output, refuse_unknown_options, table_sink_columns,
)
from sparkway.persistence.s3 import AwsS3Settings

__all__ = ["read", "write"]

MODES = ("streaming", "static")


@traced
def read(
    uri: str | os.PathLike,
    schema: type[Schema] | None = None,
    *,
    mode: str = "streaming",
    s3_connection_settings: AwsS3Settings | None = None,
    start_from_timestamp_ms: int | None = None,
    autocommit_duration_ms: int | None = 1500,
    name: str | None = None,
    max_backlog_size: int | None = None,
    debug_data: Any = None,
    **kwargs: Any,
) -> Table:
    """The rows of the Delta table at ``uri`` (a local path or ``s3://bucket/path``).

    ``mode="static"`` reads the table as it is (its current version) and ends;
    ``"streaming"`` (the default) then reads every new version as it is committed: the
    rows of the files a version adds are inserted, the rows of the files it removes
    (a DELETE, UPDATE or MERGE rewriting them) are retracted, one version at one time.
    New versions are looked for every ``autocommit_duration_ms``.  Rows are identified by
    the schema's primary key, else by their data file and place in it.  With persistence,
    the last version read is the source's position: a restart continues with the next
    version.  ``schema`` may be left out for a table ``pw.io.deltalake.write`` wrote
    (its schema is kept in the columns' metadata; ``time``, ``diff`` and ``_id`` are
    left out).  ``max_backlog_size`` and ``debug_data`` are accepted and ignored;
    ``start_from_timestamp_ms`` is not supported yet (refused).

    >>> import sparkway as pw
    >>> class KV(pw.Schema):
    ...     key: str = pw.column_definition(primary_key=True)
    ...     value: str
    >>> lake = str(getfixture("tmp_path") / "kv")
    >>> pw.io.deltalake.write(pw.debug.table_from_markdown("key | value\\n one | Hello\\n two | World"), lake)
    >>> pw.run()   # doctest: +SKIP
    >>> pw.io.deltalake.read(lake, KV, mode="static").column_names()   # doctest: +SKIP
    ['key', 'value']
    """
    refuse_unknown_options("pw.io.deltalake.read", kwargs, ignored=("persistent_id",))
    if mode not in MODES:
        raise PlanError(f"mode must be one of {list(MODES)}, not {mode!r}")
    if start_from_timestamp_ms is not None:
        raise PlanError("pw.io.deltalake.read: start_from_timestamp_ms is not supported yet")
    require_deltalake()
    location = table_uri(uri)
    options = delta_storage_options(location, s3_connection_settings)
    if schema is None:
        entries = stored_schema(location, options)
        schema = schema_from_dict({c: _definition(e) for c, e in entries.items()})
    if not isinstance(schema, type) or not issubclass(schema, Schema):
        raise PlanError(f"pw.io.deltalake.read needs a pw.Schema class as schema, got {schema!r}")
    columns = schema.columns()
    append_only = False
    if not any(c.primary_key for c in columns.values()):
        table = open_table(location, options)
        append_only = (table.metadata().configuration or {}).get(APPEND_ONLY, "").lower() == "true"
    source = DeltaSource(location, columns, mode=mode, s3_settings=s3_connection_settings,
                         autocommit_duration_ms=autocommit_duration_ms,
                         name=persistent_name(name, kwargs.get("persistent_id")), append_only=append_only)
    return graph.table_from_source(source)


def _definition(entry: dict[str, Any]) -> dict[str, Any]:
    """A stored Pathway schema entry as ``pw.schema_from_dict`` takes it."""
    return {k: v for k, v in entry.items() if k not in ("name",)}


@traced
def write(
    table: Table,
    uri: str | os.PathLike,
    *,
    s3_connection_settings: AwsS3Settings | None = None,
    partition_columns: Iterable[ColumnRef] | None = None,
    min_commit_frequency: int | None = 60_000,
    name: str | None = None,
    sort_by: Iterable[Any] | None = None,
    output_table_type: str = STREAM_OF_CHANGES,
    table_optimizer: Any = None,
) -> None:
    """Writes ``table`` to the Delta table at ``uri`` (a local path or
    ``s3://bucket/path``), created if missing, each time's changes in one Delta commit,
    exactly once.

    ``output_table_type="stream_of_changes"`` appends every change as a row: the columns,
    then ``time`` and ``diff`` (1 or -1), both ``long``.  ``"snapshot"`` keeps the live
    rows, with one more column, ``_id`` (the row id as text): each time is one MERGE that
    upserts inserted rows and deletes retracted ones.  A new table keeps the table's
    schema in its columns' metadata (``pw.io.deltalake.read`` needs no schema then) and
    is partitioned by ``partition_columns``.  Each commit records the time in Delta's
    ``txn`` action (application ``sparkway-<name>``) and in its ``commitInfo``
    (``sparkway.time``), so that a time replayed after a crash is not written twice.  In
    a large step, Spark's tasks write the data files of an unpartitioned stream of
    changes, each its piece of the time, and the driver only commits them; the rest is
    written from the driver.
    ``min_commit_frequency`` is accepted for Pathway's sake: sparkway commits every time
    (the commit is what makes it durable).  ``sort_by`` orders the rows of one time.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("owner | pet\\n Alice | dog\\n Bob | cat")
    >>> lake = str(getfixture("tmp_path") / "pets")
    >>> pw.io.deltalake.write(t, lake, output_table_type="snapshot", name="pets")
    >>> pw.run()   # doctest: +SKIP
    """
    if table_optimizer is not None:
        raise PlanError("pw.io.deltalake.write: table_optimizer is not supported yet; run OPTIMIZE and VACUUM "
                        "with deltalake.DeltaTable(uri).optimize / .vacuum")
    require_deltalake()
    columns = table_sink_columns(table, output_table_type, min_commit_frequency, "Delta table", delta_arrow_type)
    partitions = []
    for column in partition_columns or ():
        column_name = column.name if isinstance(column, ColumnRef) else column
        if isinstance(column, ColumnRef) and isinstance(column.table, Table) and column.table is not table:
            raise PlanError(f"the partition column {column_name!r} does not belong to the table written")
        if column_name not in columns:
            raise PlanError(f"partition column {column_name!r} is not a column of the table; its columns are "
                            f"{list(columns)}")
        partitions.append(column_name)
    metadata = {c: json.dumps(entry, sort_keys=True)
                for c, entry in table.schema.to_json_serializable_dict()["columns"].items()}
    if output_table_type == STREAM_OF_CHANGES:  # its data files written by Spark's tasks
        sink: DeltaSink = DeltaChangesSink(table_uri(uri), columns, partition_columns=partitions,
                                           s3_settings=s3_connection_settings, column_metadata=metadata, name=name)
    else:
        sink = DeltaSink(table_uri(uri), columns, table_type=output_table_type, partition_columns=partitions,
                         s3_settings=s3_connection_settings, column_metadata=metadata, name=name)
    refuse_a_second_output(lambda other: isinstance(other, DeltaSink) and other.uri == sink.uri,
                           f"the Delta table {sink.uri!r}")
    graph.write_to_sink(table, sink, sort_by)

