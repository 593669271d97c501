"""``pw.io.kafka``: messages of a Kafka topic in, a table's changes out.  See docs/kafka.md."""

from __future__ import annotations

from typing import Any

from sparkway.api import graph
from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.connectors.kafka import KafkaSink, KafkaSource
from sparkway.core.columns import Column
from sparkway.core.expression import ColumnRef
from sparkway.errors import PlanError, traced
from sparkway.io._common import persistent_name

__all__ = ["read", "simple_read", "write"]


@traced
def read(
    rdkafka_settings: dict[str, Any],
    topic: str | list[str] | None = None,
    *,
    schema: type[Schema] | None = None,
    format: str = "raw",
    mode: str = "streaming",
    autocommit_duration_ms: int | None = 1500,
    json_field_paths: dict[str, str] | None = None,
    parallel_readers: int | None = None,
    persistent_id: str | None = None,
    name: str | None = None,
    max_backlog_size: int | None = None,
    debug_data: Any = None,
    schema_registry_settings: Any = None,
    autogenerate_key: bool = False,
    with_metadata: bool = False,
    start_from_timestamp_ms: int | None = None,
) -> Table:
    """A table of the messages of ``topic``, one row per message, read as they come.

    ``format="raw"`` gives a ``data: bytes`` column, ``"plaintext"`` a ``data: str``
    column, ``"json"`` the columns of ``schema`` from each message's JSON object
    (``json_field_paths`` maps a column to a JSON Pointer such as ``"/user/id"``).  Row
    ids come from the schema's primary key (keys are expected to be unique, as in
    Pathway: messages are inserts), else from the message's partition and offset.  Messages are committed into a step at most every
    ``autocommit_duration_ms``.  With persistence, the partition offsets are the source's
    position: a restart reads each message once.  ``parallel_readers``,
    ``max_backlog_size``, ``debug_data`` and ``autogenerate_key`` are accepted and ignored
    (one consumer reads every partition); a schema registry, ``with_metadata`` and
    ``start_from_timestamp_ms`` are not supported yet (refused).

    >>> import sparkway as pw
    >>> class Event(pw.Schema):
    ...     user: str
    ...     amount: int
    >>> events = pw.io.kafka.read(
    ...     {"bootstrap.servers": "localhost:9092", "auto.offset.reset": "earliest"},
    ...     topic="events", schema=Event, format="json", name="events")  # doctest: +SKIP
    """
    if mode != "streaming":
        raise PlanError(f"mode={mode!r}: Kafka topics are read in mode='streaming' only")
    _refuse_unsupported(
        "pw.io.kafka.read", schema_registry_settings=schema_registry_settings,
        with_metadata=with_metadata or None, start_from_timestamp_ms=start_from_timestamp_ms,
    )
    columns: dict[str, Column] = schema.columns() if schema is not None else {}
    source = KafkaSource(
        rdkafka_settings,
        _one_topic(topic),
        format=format,
        columns=columns,
        autocommit_duration_ms=autocommit_duration_ms,
        json_field_paths=json_field_paths,
        name=persistent_name(name, persistent_id),
        max_backlog_size=max_backlog_size,
    )
    return graph.table_from_source(source)


@traced
def simple_read(
    server: str,
    topic: str,
    *,
    read_only_new: bool = False,
    schema: type[Schema] | None = None,
    format: str = "raw",
    autocommit_duration_ms: int | None = 1500,
    json_field_paths: dict[str, str] | None = None,
    name: str | None = None,
    **kwargs: Any,
) -> Table:
    """``read`` of ``topic`` on the broker ``server`` ("host:port"), without settings to
    write: from the topic's start, or with ``read_only_new=True`` only the messages that
    arrive after the start.  For authentication, TLS or a consumer group, use ``read``.

    >>> import sparkway as pw
    >>> logins = pw.io.kafka.simple_read("localhost:9092", "logins", format="plaintext")  # doctest: +SKIP
    """
    if "rdkafka_settings" in kwargs:
        raise TypeError("simple_read makes the rdkafka settings itself: to give them, use pw.io.kafka.read")
    settings = {"bootstrap.servers": server, "auto.offset.reset": "latest" if read_only_new else "earliest"}
    return read(
        settings, topic, schema=schema, format=format, autocommit_duration_ms=autocommit_duration_ms,
        json_field_paths=json_field_paths, name=name, **kwargs,
    )


def _one_topic(topic: str | list[str] | None) -> str:
    if isinstance(topic, (list, tuple)):
        if len(topic) != 1:
            raise PlanError("read one topic per pw.io.kafka.read, then concatenate the tables")
        topic = topic[0]
    if not topic:
        raise PlanError("give the topic to read: pw.io.kafka.read(settings, topic='events', ...)")
    return topic


@traced
def write(
    table: Table,
    rdkafka_settings: dict[str, Any],
    topic_name: str | None = None,
    *,
    format: str = "json",
    key: ColumnRef | str | None = None,
    value: ColumnRef | str | None = None,
    name: str | None = None,
    sort_by: Any = None,
    schema_registry_settings: Any = None,
    subject: Any = None,
    delimiter: str = ",",
    headers: Any = None,
) -> None:
    """Sends every change of ``table`` to ``topic_name``, one message per change.

    ``format="json"``: a JSON object with the row's columns, ``diff`` and ``time``.
    ``"raw"``/``"plaintext"``: the ``value`` column (by default the table's only column)
    as the payload, with ``time`` and ``diff`` in the headers ``pathway_time`` and
    ``pathway_diff``.  ``key`` (a column) gives the message key (a schema registry and
    ``headers`` are not supported yet: refused); ``sort_by`` (columns) orders the
    messages of one time.  A step is committed only
    once the broker acknowledged all its messages: at least once after a crash.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("word | count\\na | 2")
    >>> pw.io.kafka.write(t, {"bootstrap.servers": "localhost:9092"}, "counts")  # doctest: +SKIP
    """
    if not topic_name:
        raise PlanError("give the topic to write: pw.io.kafka.write(table, settings, 'counts')")
    _refuse_unsupported(
        "pw.io.kafka.write", schema_registry_settings=schema_registry_settings, subject=subject,
        headers=headers,
    )
    if delimiter != ",":
        raise PlanError("pw.io.kafka.write: delimiter= is for the 'dsv' format, which is not supported yet")
    sink = KafkaSink(
        rdkafka_settings,
        topic_name,
        table.column_names(),
        dtypes=table.schema._dtypes(),
        format=format,
        key=_column_name(key),
        value=_column_name(value),
        name=name,
    )
    graph.write_to_sink(table, sink, sort_by)


def _refuse_unsupported(function: str, **options: Any) -> None:
    """Pathway options that would change what is read or written, and that sparkway does
    not have yet: refused rather than ignored."""
    given = [name for name, value in options.items() if value is not None]
    if given:
        raise PlanError(f"{function}: {', '.join(given)} not supported by sparkway yet")


def _column_name(column: ColumnRef | str | None) -> str | None:
    return column.name if isinstance(column, ColumnRef) else column
