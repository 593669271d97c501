"""Debezium change events read from Kafka: ``DebeziumSource`` is the Kafka source with a
parser (``EnvelopeParser``) that turns each event into the changes it describes.

A Debezium event is a Kafka message whose value is the JSON envelope, as Kafka Connect's
JSON converter writes it, with or without its ``schema`` part::

    {"schema": {...}, "payload": {"before": {...} | null, "after": {...} | null, "op": "u", ...}}

and whose key holds the row's primary key (``{"schema": ..., "payload": {"id": 1}}``).

Relational databases (``DebeziumDBType.POSTGRES``, also for MySQL), as Pathway 0.33 reads
them: ``c`` (create) and ``r`` (a snapshot read) insert ``after``; ``u`` retracts
``before`` and inserts ``after``; ``d`` retracts ``before``.  The row ids come from the
schema's primary key, so an update's retraction and insertion share the row's id.  An
update without ``before`` (PostgreSQL with its default ``REPLICA IDENTITY``) inserts
``after`` only, as in Pathway, with a warning: the old row stays.

MongoDB (``DebeziumDBType.MONGO_DB``): ``after`` is the document as a JSON string (or an
object); ``c``, ``r`` and ``u`` upsert it by primary key, ``d`` deletes the row of the
message key's primary key.  The source gives these events flagged (``UPSERT_FLAG``), and
``pw.io.debezium.read`` makes the table with ``stream_to_table``.

A tombstone (a message without value, which Debezium sends after a delete for log
compaction) changes nothing.  A message that is not such an envelope (not JSON, no
``payload``, an unknown ``op``, a value that does not fit its column) is skipped with a
warning naming topic, partition, offset and the reason, as the Kafka source does.

A backlog of a relational database's events (a first run over a topic's history, a
restart after a long stop) is fetched and parsed by Spark's tasks, as the Kafka
source's is; a backlog of MongoDB's upsert events is read here, since the upserts of a
step are reduced to the last per key over all of them.
"""

from __future__ import annotations

import enum
import functools
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from sparkway.connectors.base import Segment
from sparkway.connectors.formats.values import MAX_ROW_WARNINGS, RowError, json_converter, stored_default
from sparkway.connectors.kafka import KafkaSource, Message
from sparkway.core import changes
from sparkway.core.columns import Column
from sparkway.core.dtypes import BOOL
from sparkway.errors import PlanError

log = logging.getLogger("sparkway")

#: the column of a MongoDB source's rows saying whether a row is an upsert or a deletion
UPSERT_FLAG = "_pw_debezium_upsert"

Rows = list[tuple[list[Any], int]]


class DebeziumDBType(enum.Enum):
    """The database whose change events a topic holds (``pw.io.debezium.DebeziumDBType``).

    ``POSTGRES``: a relational database (PostgreSQL, MySQL...): events carry the row
    before and after the change.  ``MONGO_DB``: MongoDB: ``after`` is the document as a
    JSON string, and an event replaces the document of its key.

    >>> DebeziumDBType.POSTGRES.name
    'POSTGRES'
    """

    POSTGRES = "postgres"
    MONGO_DB = "mongodb"


@dataclass
class Parsed:
    """What one message makes: rows with their diffs, and a warning worth logging."""

    rows: Rows = field(default_factory=list)
    warning: str | None = None


class EnvelopeParser:
    """Turns one Debezium message (key and value, raw bytes) into changes of rows of
    ``schema`` (stored values in the schema's order, then the upsert flag for MongoDB).

    >>> from sparkway.core.dtypes import INT, STR
    >>> parser = EnvelopeParser({"id": Column("id", INT, primary_key=True), "name": Column("name", STR)},
    ...                         DebeziumDBType.POSTGRES)
    >>> event = b'{"payload": {"before": {"id": 1, "name": "a"}, "after": {"id": 1, "name": "b"}, "op": "u"}}'
    >>> parser.parse(b'{"payload": {"id": 1}}', event).rows
    [([1, 'a'], -1), ([1, 'b'], 1)]
    """

    def __init__(self, schema: dict[str, Column], db_type: DebeziumDBType) -> None:
        self.schema = schema
        self.db_type = db_type
        self.key_columns = [name for name, column in schema.items() if column.primary_key]
        self._convert: dict[str, Callable[[Any], Any]] = {n: json_converter(c.dtype) for n, c in schema.items()}

    @property
    def upserts(self) -> bool:
        """Whether the rows are upsert events (MongoDB) rather than changes."""
        return self.db_type is DebeziumDBType.MONGO_DB

    def parse(self, key: bytes | None, value: bytes | None) -> Parsed:
        """The changes of one message; raises RowError for a message that is not a
        Debezium event.  A tombstone (no value) gives none."""
        if value is None:
            return Parsed()
        payload = _payload(_json(value, "value"), "value")
        if not isinstance(payload, dict):
            raise RowError(f"the value's payload is {_kind(payload)}, not a JSON object")
        op = payload.get("op")
        if not isinstance(op, str):
            raise RowError('the payload has no "op" (the operation: "c", "r", "u" or "d")')
        if self.upserts:
            return self._mongo(op, payload, key)
        return self._relational(op, payload)

    # ------------------------------------------------------------- relational databases

    def _relational(self, op: str, payload: dict[str, Any]) -> Parsed:
        if op in ("c", "r"):
            return Parsed([(self.row(_object(payload, "after", op)), 1)])
        if op == "u":
            inserted = (self.row(_object(payload, "after", op)), 1)
            if payload.get("before") is None:
                return Parsed([inserted], 'an update without "before": the old row is not retracted '
                                          "(give the table REPLICA IDENTITY FULL in PostgreSQL)")
            return Parsed([(self.row(_object(payload, "before", op)), -1), inserted])
        if op == "d":
            return Parsed([(self.row(_object(payload, "before", op)), -1)])
        raise RowError(f'unknown Debezium operation "{op}"')

    # ------------------------------------------------------------------------- MongoDB

    def _mongo(self, op: str, payload: dict[str, Any], key: bytes | None) -> Parsed:
        if op in ("c", "r", "u"):
            document = payload.get("after")
            if isinstance(document, str):
                document = _json(document.encode(), '"after"')
            if not isinstance(document, dict):
                raise RowError(f'"after" of a "{op}" event is {_kind(document)}, not a document')
            return Parsed([([*self.row(document), True], 1)])
        if op == "d":
            return Parsed([([*self.key_row(key), False], 1)])
        raise RowError(f'unknown Debezium operation "{op}"')

    def key_row(self, key: bytes | None) -> list[Any]:
        """A deletion's row: the primary key from the message key, no other value."""
        if key is None:
            raise RowError("a delete event without a message key: which row it deletes is unknown")
        fields = _payload(_json(key, "key"), "key")
        if not isinstance(fields, dict):
            raise RowError(f"the key's payload is {_kind(fields)}, not a JSON object")
        return [self._value(fields, name, "key") if name in self.key_columns else None for name in self.schema]

    # -------------------------------------------------------------------------- values

    def row(self, fields: dict[str, Any], where: str = "row") -> list[Any]:
        """The stored values of a row given as a JSON object.  A missing field takes the
        column's default, or None in an optional column; otherwise the row is refused."""
        return [self._value(fields, name, where) for name in self.schema]

    def _value(self, fields: dict[str, Any], name: str, where: str) -> Any:
        column = self.schema[name]
        if column.input_name not in fields:
            if column.has_default:
                return stored_default(column)
            if column.dtype.optional:
                return None
            raise RowError(f'column "{name}": missing in the {where}')
        try:
            return self._convert[name](fields[column.input_name])
        except RowError as exc:
            raise RowError(f'column "{name}": {exc}') from exc


def _json(data: bytes, what: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise RowError(f"the {what} is not UTF-8 (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise RowError(f"the {what} is not JSON: {exc.msg} at character {exc.pos}") from exc


def _payload(envelope: Any, what: str) -> Any:
    """The ``payload`` of Kafka Connect's JSON envelope (``schema`` may be left out)."""
    if not isinstance(envelope, dict) or "payload" not in envelope:
        raise RowError(f'the {what} has no "payload" at its top: not a Debezium event in Kafka Connect\'s JSON '
                       "envelope")
    return envelope["payload"]


def _object(payload: dict[str, Any], name: str, op: str) -> dict[str, Any]:
    value = payload.get(name)
    if not isinstance(value, dict):
        raise RowError(f'"{name}" of a "{op}" event is {_kind(value)}, not a row')
    return value


def _kind(value: Any) -> str:
    return "missing or null" if value is None else f"a JSON {type(value).__name__}"


# ---------------------------------------------------------------------------- source


class DebeziumSource(KafkaSource):
    """The changes of the Debezium events of one Kafka topic: a ``KafkaSource`` whose
    messages are parsed by ``EnvelopeParser``; offsets, replays and persistence are the
    Kafka source's.

    >>> from sparkway.core.dtypes import INT
    >>> src = DebeziumSource({"bootstrap.servers": "localhost:9092"}, "db.public.pets",
    ...                      columns={"id": Column("id", INT, primary_key=True)},
    ...                      db_type=DebeziumDBType.POSTGRES, name="pets")
    >>> src.key_columns
    ['id']
    """

    connector_label = "DebeziumReader"

    def __init__(
        self,
        settings: dict[str, Any],
        topic: str,
        *,
        columns: dict[str, Column],
        db_type: DebeziumDBType = DebeziumDBType.POSTGRES,
        autocommit_duration_ms: int | None = 1500,
        name: str | None = None,
        max_backlog_size: int | None = None,
    ) -> None:
        if not isinstance(db_type, DebeziumDBType):
            raise PlanError(f"db_type must be pw.io.debezium.DebeziumDBType.POSTGRES or .MONGO_DB, not {db_type!r}")
        if not any(column.primary_key for column in columns.values()):
            raise PlanError("pw.io.debezium.read needs a schema with a primary key "
                            "(pw.column_definition(primary_key=True)): it identifies the row an update or a "
                            "delete changes")
        if UPSERT_FLAG in columns:
            raise PlanError(f"the schema may not have a column named {UPSERT_FLAG!r}")
        self.parser = EnvelopeParser(dict(columns), db_type)
        super().__init__(settings, topic, format="json", columns=columns,
                         autocommit_duration_ms=autocommit_duration_ms, name=name,
                         max_backlog_size=max_backlog_size)
        if self.upserts:
            self.schema[UPSERT_FLAG] = Column(UPSERT_FLAG, BOOL)
            self.columns[UPSERT_FLAG] = BOOL
            self.arrow_schema = changes.arrow_schema(self.columns)

    @property
    def upserts(self) -> bool:
        """Whether the rows are upsert events, to be made a table by ``stream_to_table``."""
        return self.parser.upserts

    @property
    def reads_on_executors(self) -> bool:  # type: ignore[override]
        """A backlog of changes is read by Spark's tasks; one of upsert events is not:
        they are reduced to the last per key over the whole step, here."""
        return not self.upserts

    def message_rows(self, message: Message) -> Rows:
        return self._rows_here(message)

    @functools.cached_property
    def _rows_here(self) -> "EventRows":
        return self.task_rows()  # made at first use: the label holds the name given later

    def task_rows(self) -> "EventRows":
        return EventRows(self.parser, self.label, self.topic)

    def read(self, segments: list[Segment]) -> pa.Table:
        rows = super().read(segments)
        return last_per_key(rows, self.key_columns) if self.upserts else rows

    def read_transactions(self, segments: list[Segment]) -> list[pa.Table]:
        # upsert events of a step are reduced to the last one per key, over all its segments
        if self.upserts:
            return [self.read(segments)] if segments else []
        return super().read_transactions(segments)


class EventRows:
    """The rows of a Debezium event (``EnvelopeParser.parse``), its warnings logged with
    its offset, at most ``MAX_ROW_WARNINGS`` of them per process; picklable, so that
    Spark's tasks parse events too."""

    def __init__(self, parser: EnvelopeParser, label: str, topic: str) -> None:
        self.parser, self.label, self.topic = parser, label, topic
        self.warnings = 0

    def __call__(self, message: Message) -> Rows:
        parsed = self.parser.parse(message.key, message.value)
        if parsed.warning is not None:
            self.warnings += 1
            if self.warnings <= MAX_ROW_WARNINGS:
                log.warning("%s: topic %r, partition %d, offset %d: %s",
                            self.label, self.topic, message.partition, message.offset, parsed.warning)
        return parsed.rows


def last_per_key(rows: pa.Table, keys: list[str]) -> pa.Table:
    """Of several upsert events of one key, the last (the engine cannot order the events
    of one id within a step), in the order of the events kept.

    >>> t = pa.table({"k": [1, 2, 1], "v": ["a", "b", "c"]})
    >>> last_per_key(t, ["k"]).to_pydict()
    {'k': [2, 1], 'v': ['b', 'c']}
    """
    last: dict[tuple[Any, ...], int] = {}
    for position, key in enumerate(zip(*(rows.column(k).to_pylist() for k in keys))):
        last[key] = position
    return rows.take(pa.array(sorted(last.values()), pa.int64()))
