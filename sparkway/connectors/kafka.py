"""Kafka: ``KafkaSource`` reads one topic, ``KafkaSink`` writes a table's changes to one.

Reading
-------
A background thread (``_Poller``) consumes every partition of the topic, assigned
directly (no consumer-group rebalancing), and buffers the messages, so that the step loop
never waits on the broker.  ``discover()`` turns what is buffered into one segment per
partition, at most once every ``autocommit_duration_ms``; ``read()`` parses the buffered
messages of the segments, or fetches them again by offset when a step of an earlier run
is replayed after a crash.

A topic that holds at least ``EXECUTOR_READ_MESSAGES`` unread messages (a first run
over its history, or a poller that fell a full buffer behind) is read by Spark's tasks
instead: ``discover()`` then asks the broker for each partition's last offset only, and
each task fetches and parses a range of at most ``PIECE_MESSAGES`` offsets of one
partition, as Spark's own Kafka source plans its batches.  The poller starts once the
topic is caught up.

Segment (the messages of one partition, one input transaction; JSON-able)::

    {"partition": 0, "start": 12, "end": 40, "count": 28}

A segment read by the tasks has no ``count``: the driver did not see its messages.

``start`` is the offset of its first message and ``end`` one past the offset of its last
one, so both ends are real messages; offsets in between may be missing (compaction,
transaction markers).

Position: the next offset to read, per partition::

    {"topic": "events", "offsets": {"0": 40, "1": 7}}

A partition without an offset starts where the consumer settings say (a committed offset
of ``group.id``, else ``auto.offset.reset``).

A message that does not fit the format or the schema is skipped with a WARNING naming
topic, partition, offset and the reason, as the file readers do.
"""

from __future__ import annotations

import bisect
import functools
import json
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sparkway.connectors.base import ExecutorRead, OutputBatch, Segment, Sink, Source, record_ids
from sparkway.connectors.formats.values import MAX_ROW_WARNINGS, RowError, json_converter, stored_default
from sparkway.connectors.writers import JsonLines
from sparkway.core import changes
from sparkway.core.columns import Column
from sparkway.core.dtypes import BYTES, STR, DType
from sparkway.errors import ConnectorError, PlanError
from sparkway.persistence.storage import BlobStorage

log = logging.getLogger("sparkway")

FORMATS = ("raw", "plaintext", "json")
DEFAULT_BACKLOG = 100_000  # buffered messages at most; the poller waits beyond that
FETCH_TIMEOUT_S = 60  # re-reading a replayed segment gives up after this long without it
#: unread messages from which a step's messages are read by Spark's tasks
EXECUTOR_READ_MESSAGES = 200_000
#: the offsets one task of such a read fetches
PIECE_MESSAGES = 250_000
#: what a message is taken to weigh when the step's size is planned (the driver never sees it)
PLANNED_MESSAGE_BYTES = 256
_POLL_S = 0.2


class KafkaError(ConnectorError):
    """The broker refused or failed an operation; the message says which and why."""


@dataclass(frozen=True)
class Message:
    partition: int
    offset: int
    value: bytes | None
    key: bytes | None = None


def consumer_settings(settings: dict[str, Any], topic: str) -> dict[str, Any]:
    """The user's rdkafka settings, with what sparkway needs: a group id (librdkafka
    wants one even for assigned partitions) and no offset commits to the group (the
    position lives in sparkway's persistence, committed with the step)."""
    if "bootstrap.servers" not in settings:
        raise PlanError('rdkafka_settings needs "bootstrap.servers", e.g. {"bootstrap.servers": "localhost:9092"}')
    out = {k: str(v) if isinstance(v, bool) else v for k, v in settings.items()}
    out.setdefault("group.id", f"sparkway-{topic}")
    out.setdefault("enable.auto.commit", "false")
    return out


def _consumer(settings: dict[str, Any]) -> Any:
    from confluent_kafka import Consumer  # imported late: only Kafka programs need it

    return Consumer(settings)


# ---------------------------------------------------------------------------- poller


class _Poller(threading.Thread):
    """Consumes the assigned partitions into a buffer (per partition, by offset)."""

    def __init__(self, consumer: Any, backlog: int, on_messages: Callable[[], None]) -> None:
        super().__init__(name="sparkway-kafka-poller", daemon=True)
        self.consumer = consumer
        self.backlog = backlog
        self.on_messages = on_messages
        self.lock = threading.Condition()
        self.buffer: dict[int, list[Message]] = {}
        self.size = 0
        self.stopping = threading.Event()
        self.failure: str | None = None

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                with self.lock:
                    if self.size >= self.backlog:
                        self.lock.wait(_POLL_S)  # the step loop takes messages, or we stop
                        continue
                self._add(self.consumer.consume(num_messages=1000, timeout=_POLL_S))
        except Exception as exc:  # noqa: BLE001 - reported to the step loop by discover()
            self.failure = f"{type(exc).__name__}: {exc}"
        finally:
            self.consumer.close()

    def _add(self, messages: list[Any]) -> None:
        good = []
        for message in messages:
            error = message.error()
            if error is None:
                good.append(Message(message.partition(), message.offset(), message.value(), message.key()))
            elif error.fatal():
                self.failure = str(error)
            else:
                log.warning("Kafka consumer: %s", error)
        with self.lock:
            for message in good:
                self.buffer.setdefault(message.partition, []).append(message)
            self.size += len(good)
        if good:
            self.on_messages()

    def full(self) -> bool:
        """Whether the buffer holds as many messages as it may (the step loop is behind)."""
        with self.lock:
            return self.size >= self.backlog

    def segments(self) -> list[Segment]:
        with self.lock:
            return [
                {"partition": p, "start": ms[0].offset, "end": ms[-1].offset + 1, "count": len(ms)}
                for p, ms in sorted(self.buffer.items()) if ms
            ]

    def held(self, segment: Segment) -> list[Message] | None:
        """The segment's messages when the buffer holds them all, else None.  The poller
        receives a partition's messages in offset order, so holding the first and the
        last means holding everything between."""
        with self.lock:
            messages = self.buffer.get(segment["partition"], [])
            offsets = [m.offset for m in messages]
            first = bisect.bisect_left(offsets, segment["start"])
            last = bisect.bisect_left(offsets, segment["end"])
            if first == len(offsets) or offsets[first] != segment["start"] or offsets[last - 1] != segment["end"] - 1:
                return None
            return messages[first:last]

    def drop_before(self, offsets: dict[int, int]) -> None:
        """Forget messages that were committed."""
        with self.lock:
            for partition, messages in self.buffer.items():
                keep = [m for m in messages if m.offset >= offsets.get(partition, 0)]
                self.size -= len(messages) - len(keep)
                self.buffer[partition] = keep
            self.lock.notify_all()

    def stop(self) -> None:
        self.stopping.set()
        with self.lock:
            self.lock.notify_all()
        self.join(30)


# ---------------------------------------------------------------------------- source


class KafkaSource(Source):
    """Rows from the messages of one Kafka topic (all its partitions).

    ``format`` is "raw" (a ``data: bytes`` column), "plaintext" (``data: str``) or
    "json" (the columns of ``columns`` from each message's JSON object; a column's
    ``json_field_paths`` entry, a JSON Pointer such as "/user/id", takes it from deeper).

    >>> src = KafkaSource({"bootstrap.servers": "localhost:9092"}, "events",
    ...                   format="raw", columns={}, name="events")   # doctest: +SKIP
    >>> segments = src.discover()   # [{"partition": 0, "start": 0, "end": 3, "count": 3}]  # doctest: +SKIP
    """

    connector_label = "KafkaReader"
    #: whether a large backlog is read by Spark's tasks (``read_on_executors``)
    reads_on_executors = True

    def __init__(
        self,
        settings: dict[str, Any],
        topic: str,
        *,
        format: str,
        columns: dict[str, Column],
        autocommit_duration_ms: int | None = 1500,
        json_field_paths: dict[str, str] | None = None,
        name: str | None = None,
        max_backlog_size: int | None = None,
    ) -> None:
        if format not in FORMATS:
            raise PlanError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
        self.topic = topic
        self.format = format
        self.name = name
        self.settings = consumer_settings(settings, topic)
        self.schema = _schema_for(format, columns)
        self.columns: dict[str, DType] = {n: c.dtype for n, c in self.schema.items()}
        self.key_columns = [n for n, c in self.schema.items() if c.primary_key]
        self.commit_interval_s = (autocommit_duration_ms or 0) / 1000
        self.backlog = max_backlog_size or DEFAULT_BACKLOG
        self._fields = _json_fields(self.schema, json_field_paths or {}) if format == "json" else {}
        self.arrow_schema = changes.arrow_schema(self.columns)
        self._poller: _Poller | None = None
        self._metadata: Any = None  # a consumer that asks the broker for offsets only
        self.open(None)

    # ------------------------------------------------------------------ life cycle

    def open(self, storage: BlobStorage | None) -> None:
        """Starts from nothing read; the poller starts at the first discover(), after a
        restored position and a replayed step have set where it begins."""
        self.close()
        self._offsets: dict[int, int] = {}
        # before the first commit input is ready at once (monotonic time may be small: a fresh boot)
        self._last_commit = -math.inf

    def position(self) -> dict[str, Any]:
        return {"topic": self.topic, "offsets": {str(p): o for p, o in sorted(self._offsets.items())}}

    def restore(self, position: dict[str, Any]) -> None:
        if position.get("topic") != self.topic:
            log.warning("%s: the stored position is for topic %r, not %r; reading from the start",
                        self.label, position.get("topic"), self.topic)
            return
        self._offsets = {int(p): int(o) for p, o in position.get("offsets", {}).items()}
        log.info("%s: restored offsets %s", self.label, self.position()["offsets"])

    def close(self) -> None:
        self._stop_poller()
        if self._metadata is not None:
            self._metadata.close()
            self._metadata = None

    def _stop_poller(self) -> None:
        if self._poller is not None:
            self._poller.stop()
            self._poller = None

    # ---------------------------------------------------------------- discover, read

    def discover(self) -> list[Segment]:
        if self._poller is not None and self._poller.failure is not None:
            raise KafkaError(f"{self.label}: reading topic {self.topic!r} failed: {self._poller.failure}")
        if time.monotonic() - self._last_commit < self.commit_interval_s:
            return []  # input waits for the next commit, at most autocommit_duration_ms
        if self.reads_on_executors and (self._poller is None or self._poller.full()):
            backlog = self._backlog()
            if backlog:
                self._stop_poller()  # what it holds, the tasks read again
                return backlog
        return (self._poller or self._start_poller()).segments()

    def _backlog(self) -> list[Segment]:
        """Segments from each partition's next offset to its end, when the topic holds
        at least ``EXECUTOR_READ_MESSAGES`` unread messages; else none."""
        from confluent_kafka import TopicPartition

        if self._metadata is None:
            self._metadata = _consumer(self.settings)
        segments = []
        for partition in self._partitions(self._metadata):
            low, high = self._metadata.get_watermark_offsets(TopicPartition(self.topic, partition), timeout=30)
            if partition not in self._offsets:  # where the poller would start: from now on, there
                self._offsets[partition] = self._first_offset(partition, low, high)
            start = max(self._offsets[partition], low)  # older messages are gone (retention)
            if high > start:
                segments.append({"partition": partition, "start": start, "end": high})
        return segments if sum(s["end"] - s["start"] for s in segments) >= EXECUTOR_READ_MESSAGES else []

    def _first_offset(self, partition: int, low: int, high: int) -> int:
        """Where a partition without a stored offset starts: the group's committed
        offset, else the end that ``auto.offset.reset`` names (librdkafka's default:
        the latest)."""
        from confluent_kafka import TopicPartition

        [committed] = self._metadata.committed([TopicPartition(self.topic, partition)], timeout=30)
        if committed.offset >= 0:
            return committed.offset
        reset = str(self.settings.get("auto.offset.reset", "latest"))
        return low if reset in ("smallest", "earliest", "beginning") else high

    def _start_poller(self) -> _Poller:
        from confluent_kafka import TopicPartition

        consumer = _consumer(self.settings)
        try:
            partitions = self._partitions(consumer)
        except KafkaError:
            consumer.close()
            raise
        consumer.assign([
            TopicPartition(self.topic, p, self._offsets[p]) if p in self._offsets else TopicPartition(self.topic, p)
            for p in partitions
        ])
        self._poller = _Poller(consumer, self.backlog, self._wake_step_loop)
        self._poller.start()
        log.info("%s: reading partitions %s of topic %r", self.label, partitions, self.topic)
        return self._poller

    def _wake_step_loop(self) -> None:
        """New messages that may be committed now: the idle step loop need not sleep on."""
        if self.wakeup is not None and time.monotonic() - self._last_commit >= self.commit_interval_s:
            self.wakeup.set()

    def _partitions(self, consumer: Any) -> list[int]:
        metadata = consumer.list_topics(self.topic, timeout=30).topics.get(self.topic)
        if metadata is None or metadata.error is not None or not metadata.partitions:
            reason = metadata.error if metadata is not None else "not in the broker's metadata"
            raise KafkaError(f"{self.label}: cannot read topic {self.topic!r} ({reason}); create it first")
        return sorted(metadata.partitions)

    def read(self, segments: list[Segment]) -> pa.Table:
        tables = [self.reader.table(s["partition"], self._messages(s), self.message_rows)[0] for s in segments]
        return pa.concat_tables(tables) if tables else self.arrow_schema.empty_table()

    def read_on_executors(self, segments: list[Segment]) -> ExecutorRead | None:
        """The segments of a backlog (``_backlog``: they have no ``count``) are fetched
        and parsed by Spark's tasks, at most ``PIECE_MESSAGES`` offsets each."""
        if not self.reads_on_executors or not segments or any("count" in s for s in segments):
            return None
        pieces = [{"partition": s["partition"], "start": start, "end": min(start + PIECE_MESSAGES, s["end"])}
                  for s in segments for start in range(s["start"], s["end"], PIECE_MESSAGES)]
        planned = sum(s["end"] - s["start"] for s in segments) * PLANNED_MESSAGE_BYTES
        read = functools.partial(_read_piece, self.reader, self.settings, self.task_rows())
        return ExecutorRead(pieces, read, self.arrow_schema,
                            self._count_skipped, planned, functools.partial(_reaches_topic, self.settings, self.topic))

    @functools.cached_property
    def reader(self) -> "MessageReader":
        """What turns this source's messages into changes (made at first use: a
        subclass completes the schema in its constructor)."""
        return MessageReader(self.label, self.topic, self.name or "", self.format, self.schema,
                             bool(self.key_columns), self._fields, self.arrow_schema)

    def task_rows(self) -> Callable[[Message], list[tuple[list[Any], int]]]:
        """``message_rows`` as Spark's tasks run it (picklable)."""
        return self.reader.rows

    def _count_skipped(self, skipped: dict[str, int]) -> None:
        for where, count in skipped.items():
            log.warning("%s: %s: %d message(s) skipped (see the warnings of Spark's tasks)", self.label, where, count)

    def _messages(self, segment: Segment) -> list[Message]:
        held = self._poller.held(segment) if self._poller is not None else None
        messages = held if held is not None else self._fetch(segment)
        if len(messages) != segment.get("count", len(messages)):
            log.warning(
                "%s: partition %d offsets %d-%d held %d messages when first read, %d now "
                "(retention or compaction removed some); the step reads what is left",
                self.label, segment["partition"], segment["start"], segment["end"] - 1, segment["count"], len(messages),
            )
        return messages

    def _fetch(self, segment: Segment) -> list[Message]:
        """Reads a segment's messages again from the broker (a replayed step)."""
        return fetch_range(self.settings, self.label, self.topic, segment["partition"], segment["start"],
                           segment["end"], why="to replay an interrupted step")

    def message_rows(self, message: Message) -> list[tuple[list[Any], int]]:
        """The changes a message makes: the stored values of each row (in the order of
        ``self.schema``) and its diff; raises RowError for a bad message.  Here one
        insertion per message; a subclass reading a change format (Debezium) may give
        several rows, retractions, or none."""
        return self.reader.rows(message)

    # --------------------------------------------------------------------- advance

    def advance(self, segments: list[Segment]) -> None:
        for segment in segments:
            partition = segment["partition"]
            self._offsets[partition] = max(self._offsets.get(partition, 0), segment["end"])
        if self._poller is not None:
            self._poller.drop_before(self._offsets)
        self._last_commit = time.monotonic()


@dataclass(frozen=True)
class MessageReader:
    """How a partition's messages become changes; picklable, so that Spark's tasks read
    too (``KafkaSource.read_on_executors``)."""

    label: str
    topic: str
    name: str  # the source's, in the row ids
    format: str
    schema: dict[str, Column]
    keyed: bool  # ids come from primary key columns (made by the engine)
    fields: dict[str, "_JsonField"]
    arrow_schema: pa.Schema

    def table(
        self, partition: int, messages: list[Message], message_rows: Callable[[Message], list[tuple[list[Any], int]]],
    ) -> tuple[pa.Table, dict[str, int]]:
        """The changes of ``messages`` (``message_rows`` of each), and the messages
        skipped, by partition."""
        values: dict[str, list[Any]] = {n: [] for n in self.schema}
        offsets: list[int] = []
        skipped = 0
        diffs: list[int] = []
        for message in messages:
            try:
                rows = message_rows(message)
            except RowError as exc:
                skipped += 1
                if skipped <= MAX_ROW_WARNINGS:
                    log.warning("%s: topic %r, partition %d, offset %d: %s; message skipped",
                                self.label, self.topic, message.partition, message.offset, exc)
                continue
            for row, diff in rows:
                offsets.append(message.offset)
                diffs.append(diff)
                for name, value in zip(self.schema, row):
                    values[name].append(value)
        if skipped > MAX_ROW_WARNINGS:
            log.warning("%s: %d more messages skipped", self.label, skipped - MAX_ROW_WARNINGS)
        if self.keyed:
            ids = [0] * len(offsets)  # made from the key by the engine (Source.key_columns)
        else:
            ids = record_ids(self.name, f"{self.topic}:{partition}", offsets)
        arrays = [pa.array(ids, pa.int64())]
        arrays += [pa.array(values[n], c.dtype.arrow_type()) for n, c in self.schema.items()]
        arrays.append(pa.array(diffs, pa.int64()))
        table = pa.Table.from_arrays(arrays, schema=self.arrow_schema)
        return table, ({f"topic {self.topic!r}, partition {partition}": skipped} if skipped else {})

    def rows(self, message: Message) -> list[tuple[list[Any], int]]:
        """One insertion per message: its row's stored values; raises RowError for a
        bad message."""
        return [(self._parse(message.value), 1)]

    def _parse(self, value: bytes | None) -> list[Any]:
        if value is None:
            raise RowError("the message has no value (a tombstone)")
        if self.format == "raw":
            return [value]
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RowError(f"invalid UTF-8 at byte {exc.start}") from exc
        if self.format == "plaintext":
            return [text]
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RowError(f"invalid JSON: {exc.msg} at character {exc.pos}") from exc
        if not isinstance(obj, dict):
            raise RowError(f"expected a JSON object, found {type(obj).__name__}")
        return [field.value(obj) for field in self.fields.values()]


def fetch_range(
    settings: dict[str, Any], label: str, topic: str, partition: int, start: int, end: int, *, why: str,
) -> list[Message]:
    """The messages of offsets [start, end) of a partition, fetched from the broker.
    Offsets may be missing (compaction, the markers of transactions, which are never
    delivered): the fetch ends at the first offset from ``end`` on, or at the end of
    the partition's log."""
    from confluent_kafka import KafkaError as RdKafkaError
    from confluent_kafka import TopicPartition

    consumer = _consumer({**settings, "enable.partition.eof": "true"})
    consumer.assign([TopicPartition(topic, partition, start)])
    messages: list[Message] = []
    deadline = time.monotonic() + FETCH_TIMEOUT_S
    try:
        while not messages or messages[-1].offset < end - 1:
            if time.monotonic() > deadline:
                raise KafkaError(f"{label}: cannot read offsets {start}-{end - 1} of partition {partition} of topic "
                                 f"{topic!r} {why}; is the broker up?")
            message = consumer.poll(_POLL_S)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == RdKafkaError._PARTITION_EOF:
                    break
                continue
            if message.offset() >= end:
                break
            messages.append(Message(partition, message.offset(), message.value(), message.key()))
            deadline = time.monotonic() + FETCH_TIMEOUT_S
    finally:
        consumer.close()
    return messages


def _reaches_topic(settings: dict[str, Any], topic: str) -> bool:
    """Whether this process reaches the topic's brokers (a Spark Connect server's task
    asks, ``engine.executor_reads``)."""
    try:
        consumer = _consumer(settings)
        try:
            found = consumer.list_topics(topic, timeout=FETCH_TIMEOUT_S / 4).topics.get(topic)
        finally:
            consumer.close()
    except Exception:  # the library missing, no broker: either way, not here
        return False
    return found is not None and found.error is None


def _read_piece(
    reader: MessageReader, settings: dict[str, Any], message_rows: Callable[[Message], list[tuple[list[Any], int]]],
    piece: Segment,
) -> tuple[pa.Table, dict[str, int]]:
    """A piece's changes, and the messages skipped, read in a Spark task."""
    messages = fetch_range(settings, reader.label, reader.topic, piece["partition"], piece["start"], piece["end"],
                           why="in a Spark task")
    return reader.table(piece["partition"], messages, message_rows)


@dataclass(frozen=True)
class _JsonField:
    """How one schema column is taken from a message's JSON object."""

    column: Column
    path: list[str]  # keys (or list indices) from the top of the object
    convert: Callable[[Any], Any]

    def value(self, obj: Any) -> Any:
        for key in self.path:
            if isinstance(obj, dict) and key in obj:
                obj = obj[key]
            elif isinstance(obj, list) and key.isdigit() and int(key) < len(obj):
                obj = obj[int(key)]
            else:
                return self._missing()
        try:
            return self.convert(obj)
        except RowError as exc:
            raise RowError(f'column "{self.column.name}": {exc}') from exc

    def _missing(self) -> Any:
        if self.column.has_default:
            return stored_default(self.column)
        if self.column.dtype.optional:
            return None
        raise RowError(f'column "{self.column.name}": missing')


def _json_fields(schema: dict[str, Column], paths: dict[str, str]) -> dict[str, _JsonField]:
    unknown = sorted(set(paths) - set(schema))
    if unknown:
        raise PlanError(f"json_field_paths names columns that are not in the schema: {unknown}")
    return {n: _JsonField(c, _pointer(paths[n]) if n in paths else [c.input_name], json_converter(c.dtype))
            for n, c in schema.items()}


def _pointer(path: str) -> list[str]:
    """The keys of a JSON Pointer (RFC 6901): "/a/b~1c" -> ["a", "b/c"]."""
    if not path.startswith("/"):
        raise PlanError(f"json_field_paths: {path!r} is not a JSON Pointer; write it like '/user/id'")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _schema_for(format: str, columns: dict[str, Column]) -> dict[str, Column]:
    if format == "json":
        if not columns:
            raise PlanError('format "json" needs schema=: a pw.Schema subclass naming the columns')
        return dict(columns)
    return {"data": Column("data", BYTES if format == "raw" else STR)}


# ------------------------------------------------------------------------------ sink


class KafkaSink(Sink):
    """Sends every change of a table to a topic, one message each.

    "json": a JSON object with the columns, ``diff`` and ``time`` (values as in
    ``JsonLinesSink``); "raw"/"plaintext": the ``value`` column as the payload, with
    ``time`` and ``diff`` in the headers ``pathway_time`` and ``pathway_diff``.
    ``key`` names a column whose value becomes the message key.  ``write`` returns once
    the broker acknowledged every message, and raises if any was refused.

    >>> sink = KafkaSink({"bootstrap.servers": "localhost:9092"}, "counts", ["word", "count"])  # doctest: +SKIP
    >>> # a batch sends messages like {"word": "a", "count": 2, "diff": 1, "time": 1701270092168}
    """

    def __init__(
        self,
        settings: dict[str, Any],
        topic: str,
        columns: list[str],
        *,
        dtypes: dict[str, DType] | None = None,
        format: str = "json",
        key: str | None = None,
        value: str | None = None,
        name: str | None = None,
    ) -> None:
        if format not in FORMATS:
            raise PlanError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
        if "bootstrap.servers" not in settings:
            raise PlanError('rdkafka_settings needs "bootstrap.servers", e.g. {"bootstrap.servers": "localhost:9092"}')
        for column in (key, value):
            if column is not None and column not in columns:
                raise PlanError(f"no column {column!r} in the table; its columns are {columns}")
        if format != "json" and value is None:
            if len(columns) != 1:
                raise PlanError(f'format "{format}" sends one column: give value= (one of {columns})')
            value = columns[0]
        self.settings = dict(settings)
        self.topic = topic
        self.format = format
        self.key = key
        self.value = value
        if name is not None:
            self.name = name
        self._json = JsonLines(columns, dtypes)  # the lines pw.io.jsonlines.write writes
        self._producer: Any = None

    @property
    def label(self) -> str:
        return f"kafka topic {self.topic}"

    def open(self) -> None:
        from confluent_kafka import Producer

        self._producer = Producer(self.settings)

    def write(self, batch: OutputBatch) -> None:
        table = batch.table
        if table.num_rows == 0:
            return
        if self._producer is None:
            self.open()
        keys = _payloads(table.column(self.key).to_pylist()) if self.key else [None] * table.num_rows
        failures: list[str] = []
        for key, value, headers in zip(keys, self._values(batch), self._headers(batch)):
            self._produce(value, key, headers, failures)
        self._producer.flush()  # returns when every message is acknowledged or has failed
        if failures:
            raise KafkaError(
                f"KafkaWriter-{self.name}: {len(failures)} of {table.num_rows} messages to topic {self.topic!r} "
                f"were not delivered (time {batch.time}), e.g. {failures[0]}; the step is not committed, "
                "a restart writes it again"
            )
        log.info("KafkaWriter-%s: Done writing %d entries, time %d.", self.name, table.num_rows, batch.time)

    def _values(self, batch: OutputBatch) -> list[bytes | None]:
        if self.format == "json":
            return [line.encode() for line in self._json.format_batch(batch).split("\n")[:-1]]
        return _payloads(batch.table.column(self.value).to_pylist())

    def _headers(self, batch: OutputBatch) -> list[list[tuple[str, bytes]] | None]:
        if self.format == "json":
            return [None] * batch.table.num_rows
        time = b"%d" % batch.time
        return [[("pathway_time", time), ("pathway_diff", b"%d" % d)] for d in batch.diffs.to_pylist()]

    def _produce(self, value: bytes | None, key: bytes | None, headers: Any, failures: list[str]) -> None:
        def delivered(error: Any, _message: Any) -> None:
            if error is not None:
                failures.append(str(error))

        while True:
            try:
                self._producer.produce(self.topic, value=value, key=key, headers=headers, on_delivery=delivered)
                return
            except BufferError:  # the producer's queue is full: let it send some first
                self._producer.poll(_POLL_S)
            except Exception as exc:  # noqa: BLE001 - refused at once (e.g. too large): reported with the rest
                failures.append(str(exc))
                return

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush()
            self._producer = None


def _payloads(values: list[Any]) -> list[bytes | None]:
    """Message keys or payloads: bytes as they are, anything else as its UTF-8 text."""
    return [v if v is None or isinstance(v, bytes) else str(v).encode() for v in values]
