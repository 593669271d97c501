"""``pw.io.debezium``: a database table kept up to date from the change events Debezium
writes to Kafka.  See docs/debezium.md."""

from __future__ import annotations

from typing import Any

from sparkway.api import graph
from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.connectors.debezium import UPSERT_FLAG, DebeziumDBType, DebeziumSource
from sparkway.core.expression import ColumnRef
from sparkway.errors import PlanError, traced
from sparkway.io._common import persistent_name

__all__ = ["DebeziumDBType", "read"]


@traced
def read(
    rdkafka_settings: dict[str, Any],
    topic_name: str,
    *,
    schema: type[Schema],
    db_type: DebeziumDBType = DebeziumDBType.POSTGRES,
    debug_data: Any = None,
    autocommit_duration_ms: int | None = 1500,
    json_field_paths: dict[str, str] | None = None,
    parallel_readers: int | None = None,
    persistent_id: str | None = None,
    name: str | None = None,
    max_backlog_size: int | None = None,
) -> Table:
    """The table whose changes Debezium streams to the Kafka topic ``topic_name``: its
    snapshot first, then every insert, update and delete, as Pathway parses them.

    Each message's value is Debezium's envelope (``{"payload": {"before": ..., "after":
    ..., "op": ...}}``, with or without its ``schema`` part).  With
    ``db_type=DebeziumDBType.POSTGRES`` (PostgreSQL, MySQL...), ``c`` and ``r`` insert
    ``after``, ``u`` retracts ``before`` and inserts ``after``, ``d`` retracts ``before``;
    with ``DebeziumDBType.MONGO_DB``, ``after`` (a JSON string) replaces the document of
    its key and ``d`` deletes it.  The schema's primary key
    (``pw.column_definition(primary_key=True)``, required) gives the row ids, so an
    update keeps its row's id.  Tombstones (messages without value) are skipped; a
    message that is not an event is skipped with a warning naming its topic, partition
    and offset.  With persistence, the partition offsets are the source's position: a
    restart continues after the last committed message.  ``json_field_paths``,
    ``parallel_readers``, ``max_backlog_size`` and ``debug_data`` are accepted and not
    used, as in Pathway 0.33.

    >>> import sparkway as pw
    >>> class Pet(pw.Schema):
    ...     id: int = pw.column_definition(primary_key=True)
    ...     owner: str
    ...     pet: str
    >>> pets = pw.io.debezium.read(
    ...     {"bootstrap.servers": "localhost:9092", "auto.offset.reset": "earliest"},
    ...     "postgres.public.pets", schema=Pet, name="pets")
    >>> pets.column_names()
    ['id', 'owner', 'pet']
    """
    if not isinstance(schema, type) or not issubclass(schema, Schema):
        raise PlanError(f"pw.io.debezium.read needs a pw.Schema class as schema, got {schema!r}")
    if not topic_name:
        raise PlanError("give the topic to read: pw.io.debezium.read(settings, 'postgres.public.pets', ...)")
    source = DebeziumSource(
        rdkafka_settings, topic_name, columns=schema.columns(), db_type=db_type,
        autocommit_duration_ms=autocommit_duration_ms, name=persistent_name(name, persistent_id),
        max_backlog_size=max_backlog_size,
    )
    table = graph.table_from_source(source)
    if not source.upserts:
        return table
    return table.stream_to_table(ColumnRef(table, UPSERT_FLAG)).without(UPSERT_FLAG)
