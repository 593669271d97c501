"""pw.io.debezium: Debezium's change events, parsed alone (no Kafka) and read from the
Kafka broker of the tests (tests/services/kafka.py).

Expected rows are written out by hand from the events each test sends: an insert (``c``,
or ``r`` from a snapshot) adds ``after``, an update retracts ``before`` and adds
``after``, a delete retracts ``before``; with MongoDB an event replaces the document of
its key.  What Pathway 0.33 gives for the same events (``pw.io.debezium.read`` run against
the same broker) agrees; where sparkway differs on purpose, docs/debezium.md says so.
"""

from __future__ import annotations

import collections
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import sparkway as pw
from sparkway.api.graph import clear
from sparkway.connectors.debezium import DebeziumDBType, DebeziumSource, EnvelopeParser, last_per_key
from sparkway.connectors.formats.values import RowError
from sparkway.core.columns import Column
from sparkway.core.dtypes import INT, STR
from sparkway.errors import PlanError
from tests.test_kafka import _discover_all, changes, collect, run_until

WAIT_S = 120  # upper bound for rows to show up (a step is a Spark job of about a second)

Rows = list[dict[str, Any]]

# ------------------------------------------------------------------------ the events


def envelope(op: str, before: dict | None = None, after: dict | str | None = None, *, schema: bool = True) -> dict:
    """A Debezium event as Kafka Connect's JSON converter writes it (``schema``: with
    its schema part, as with ``value.converter.schemas.enable=true``)."""
    payload = {"before": before, "after": after, "op": op, "source": {"connector": "postgresql"}, "ts_ms": 1}
    return {"schema": {"type": "struct", "name": "pets.Envelope"}, "payload": payload} if schema else {"payload": payload}


def key_of(**fields: Any) -> dict:
    return {"schema": {"type": "struct", "name": "pets.Key"}, "payload": fields}


def encoded(message: Any) -> bytes | None:
    """A message as JSON; bytes as they are (a message that is not JSON)."""
    if message is None or isinstance(message, bytes):
        return message
    return json.dumps(message).encode()


def pet(id: int, owner: str, age: int | None) -> dict:
    return {"id": id, "owner": owner, "age": age}


PETS = {
    "id": Column("id", INT, primary_key=True),
    "owner": Column("owner", STR),
    "age": Column("age", INT.with_optional(True)),
}


def parse(value: Any, key: Any = None, db_type: DebeziumDBType = DebeziumDBType.POSTGRES,
          columns: dict[str, Column] = PETS) -> list[tuple[list[Any], int]]:
    return EnvelopeParser(columns, db_type).parse(encoded(key), encoded(value)).rows


# ------------------------------------------------------------- parsing, without Kafka


def test_create_and_snapshot_read_insert_the_row_after() -> None:
    assert parse(envelope("c", after=pet(1, "ann", 3))) == [([1, "ann", 3], 1)]
    assert parse(envelope("r", after=pet(2, "bob", None))) == [([2, "bob", None], 1)]


def test_an_update_retracts_the_row_before_and_inserts_the_row_after() -> None:
    rows = parse(envelope("u", before=pet(1, "ann", 3), after=pet(1, "ann", 4)), key_of(id=1))
    assert rows == [([1, "ann", 3], -1), ([1, "ann", 4], 1)]


def test_a_delete_retracts_the_row_before() -> None:
    assert parse(envelope("d", before=pet(1, "ann", 4)), key_of(id=1)) == [([1, "ann", 4], -1)]


def test_a_tombstone_changes_nothing() -> None:
    parser = EnvelopeParser(PETS, DebeziumDBType.POSTGRES)
    assert parser.parse(encoded(key_of(id=1)), None).rows == []
    assert parser.parse(None, None).rows == []


def test_the_schema_part_of_the_envelope_may_be_left_out_but_not_the_payload() -> None:
    event = {"before": None, "after": pet(1, "ann", 3), "op": "c"}
    assert parse({"payload": event}) == parse({"schema": {"type": "struct"}, "payload": event}) == [([1, "ann", 3], 1)]
    with pytest.raises(RowError, match='no "payload"'):  # Pathway 0.33 refuses it too
        parse(event)


def test_an_update_without_before_inserts_only_and_says_why() -> None:
    # PostgreSQL's default REPLICA IDENTITY leaves "before" out of updates
    parsed = EnvelopeParser(PETS, DebeziumDBType.POSTGRES).parse(None, encoded(envelope("u", after=pet(1, "a", 2))))
    assert parsed.rows == [([1, "a", 2], 1)]
    assert parsed.warning is not None and "REPLICA IDENTITY FULL" in parsed.warning


def test_values_are_converted_to_the_schema_types() -> None:
    columns = {**PETS, "legs": Column("legs", INT, default_value=4)}
    # a missing optional column is None, a missing column with a default takes it
    assert parse(envelope("c", after={"id": 1, "owner": "ann"}), columns=columns) == [([1, "ann", None, 4], 1)]
    with pytest.raises(RowError, match='column "owner": missing'):
        parse(envelope("c", after={"id": 1}))
    with pytest.raises(RowError, match='column "owner"'):
        parse(envelope("c", after=pet(1, None, 3)))  # type: ignore[arg-type]
    with pytest.raises(RowError, match='column "age"'):
        parse(envelope("c", after={"id": 1, "owner": "ann", "age": "3"}))


@pytest.mark.parametrize("value, reason", [
    (envelope("t", after=pet(1, "a", 1)), 'unknown Debezium operation "t"'),
    ({"payload": {"after": pet(1, "a", 1)}}, 'no "op"'),
    ({"payload": None}, "payload is missing or null"),
    ({"payload": "text"}, "payload is a JSON str"),
    ([1, 2], 'no "payload"'),
    (envelope("c", after=None), '"after" of a "c" event is missing or null'),
    (envelope("d", before=None), '"before" of a "d" event is missing or null'),
    (b"not json", "the value is not JSON"),
    (b"\xff", "the value is not UTF-8"),
])
def test_a_message_that_is_not_an_event_is_refused_with_the_reason(value: Any, reason: str) -> None:
    with pytest.raises(RowError, match=reason):
        parse(value, key_of(id=1))


def test_mongodb_events_upsert_the_document_of_their_key_and_deletes_need_the_key() -> None:
    mongo = DebeziumDBType.MONGO_DB
    document = json.dumps(pet(1, "ann", 3))  # MongoDB's connector writes the document as a JSON string
    assert parse(envelope("c", after=document), key_of(id=1), mongo) == [([1, "ann", 3, True], 1)]
    assert parse(envelope("u", after=pet(1, "ann", 4)), key_of(id=1), mongo) == [([1, "ann", 4, True], 1)]
    # a delete gives the key's row, flagged as a deletion (only its id counts)
    assert parse(envelope("d"), key_of(id=1), mongo) == [([1, None, None, False], 1)]
    with pytest.raises(RowError, match="without a message key"):
        parse(envelope("d"), None, mongo)
    with pytest.raises(RowError, match='key has no "payload"'):
        parse(envelope("d"), {"id": 1}, mongo)
    with pytest.raises(RowError, match='"after" is not JSON'):
        parse(envelope("c", after="{oops"), key_of(id=1), mongo)


def test_of_several_upserts_of_a_key_in_a_step_the_last_one_counts() -> None:
    events = pa.table({"id": [1, 2, 1, 3, 2], "v": ["a", "b", "c", "d", "e"]})
    assert last_per_key(events, ["id"]).to_pydict() == {"id": [1, 3, 2], "v": ["c", "d", "e"]}


def test_the_schema_needs_a_primary_key_and_db_type_a_debezium_db_type() -> None:
    class NoKey(pw.Schema):
        owner: str

    class Pet(pw.Schema):
        id: int = pw.column_definition(primary_key=True)

    with pytest.raises(PlanError, match="primary key"):
        pw.io.debezium.read({"bootstrap.servers": "localhost:9092"}, "pets", schema=NoKey)
    with pytest.raises(PlanError, match="DebeziumDBType"):
        pw.io.debezium.read({"bootstrap.servers": "localhost:9092"}, "pets", schema=Pet, db_type="postgres")
    source = DebeziumSource({"bootstrap.servers": "localhost:9092"}, "pets", columns=Pet.columns(),
                            db_type=DebeziumDBType.MONGO_DB)
    assert source.key_columns == ["id"] and source.upserts


# ------------------------------------------------------------- from the Kafka broker


class Pet(pw.Schema):
    pet_id: int = pw.column_definition(primary_key=True)
    owner: str
    age: int | None


def row(pet_id: int, owner: str, age: int | None) -> dict:
    return {"pet_id": pet_id, "owner": owner, "age": age}


def send(broker, topic: str, events: list[tuple[dict | None, Any]]) -> None:
    """Sends (key, value) messages, JSON-encoded (a value of None is a tombstone, bytes
    are sent as they are), and waits until the broker has them all."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap})
    failures: list[Any] = []
    for key, value in events:
        producer.produce(topic, key=encoded(key), value=encoded(value),
                         on_delivery=lambda err, _msg: err and failures.append(err))
    assert producer.flush(30) == 0 and not failures, failures


def by_pet(key_id: int, value: Any) -> tuple[dict, Any]:
    return key_of(pet_id=key_id), value


PHASES = [
    [  # the snapshot, then an insert
        by_pet(1, envelope("r", after=row(1, "ann", 3))),
        by_pet(2, envelope("r", after=row(2, "bob", 5), schema=False)),
        by_pet(3, envelope("c", after=row(3, "cid", None))),
    ],
    [  # an update, a delete and its tombstone, an insert
        by_pet(1, envelope("u", before=row(1, "ann", 3), after=row(1, "ann", 4))),
        by_pet(2, envelope("d", before=row(2, "bob", 5))),
        by_pet(2, None),
        by_pet(4, envelope("c", after=row(4, "dan", 1), schema=False)),
    ],
    [
        by_pet(3, envelope("u", before=row(3, "cid", None), after=row(3, "cy", 2))),
        by_pet(4, envelope("d", before=row(4, "dan", 1))),
        by_pet(5, envelope("c", after=row(5, "eve", 7))),
    ],
]
# what each phase changes, from its events: (pet_id, owner, age, diff)
PHASE_CHANGES = [
    {(1, "ann", 3, 1), (2, "bob", 5, 1), (3, "cid", None, 1)},
    {(1, "ann", 3, -1), (1, "ann", 4, 1), (2, "bob", 5, -1), (4, "dan", 1, 1)},
    {(3, "cid", None, -1), (3, "cy", 2, 1), (4, "dan", 1, -1), (5, "eve", 7, 1)},
]
COLUMNS = ["pet_id", "owner", "age"]


def feed_in_phases(broker, topic: str, phases: list, seen: Callable[[], int], counts: list[int]) -> Callable[[], bool]:
    """A ``run_until`` condition that sends the next phase once the outputs hold the
    changes of the ones before (``counts``: changes expected after each phase)."""
    sent = [0]

    def done() -> bool:
        if sent[0] < len(phases) and (sent[0] == 0 or seen() >= counts[sent[0] - 1]):
            send(broker, topic, phases[sent[0]])
            sent[0] += 1
        return sent[0] == len(phases) and seen() >= counts[-1]

    return done


def assert_phases_in_order(rows: Rows, phase_changes: list[set]) -> None:
    """Every change of a phase comes at a time before every change of the next one."""
    times: list[list[int]] = [[] for _ in phase_changes]
    for r in rows:
        change = tuple(r[c] for c in COLUMNS) + (r["diff"],)
        times[next(i for i, c in enumerate(phase_changes) if change in c)].append(r["time"])
    assert all(max(a) < min(b) for a, b in zip(times, times[1:])), times


@pytest.mark.usefixtures("spark")
def test_inserts_updates_and_deletes_become_changes_under_the_primary_key_ids(kafka_broker) -> None:
    topic = kafka_broker.new_topic("debezium")
    pets = pw.io.debezium.read(kafka_broker.settings, topic, schema=Pet, autocommit_duration_ms=100)
    stream = collect(pets.select(*pw.this, rid=pw.this.id, keyed=pets.pointer_from(pets.pet_id) == pets.id))
    counts = [3, 7, 11]
    run_until(feed_in_phases(kafka_broker, topic, PHASES, lambda: len(stream.rows), counts))

    assert changes(stream.rows, COLUMNS) == collections.Counter(
        {change: 1 for phase in PHASE_CHANGES for change in phase})
    # the phases come in order, and an update's retraction and insertion at one time
    assert_phases_in_order(stream.rows, PHASE_CHANGES)
    time_of = {tuple(r[c] for c in COLUMNS) + (r["diff"],): r["time"] for r in stream.rows}
    assert time_of[(1, "ann", 3, -1)] == time_of[(1, "ann", 4, 1)]
    assert time_of[(3, "cid", None, -1)] == time_of[(3, "cy", 2, 1)]
    # every change of a pet is under one id, the one its primary key gives
    assert all(r["keyed"] for r in stream.rows)
    assert all(len({r["rid"] for r in stream.rows if r["pet_id"] == p}) == 1 for p in range(1, 6))
    final = changes(stream.rows, COLUMNS)
    live = {k[:3] for k, n in final.items() if k[3] == 1} - {k[:3] for k, n in final.items() if k[3] == -1}
    assert live == {(1, "ann", 4), (3, "cy", 2), (5, "eve", 7)}


@pytest.mark.usefixtures("spark")
def test_a_bad_message_is_skipped_with_its_offset_and_a_tombstone_quietly(
    kafka_broker, caplog: pytest.LogCaptureFixture
) -> None:
    topic = kafka_broker.new_topic("debezium-bad")
    send(kafka_broker, topic, [
        by_pet(1, envelope("c", after=row(1, "ann", 3))),     # offset 0
        by_pet(9, b"not json"),                                 # 1
        by_pet(1, None),                                        # 2: a tombstone
        by_pet(9, envelope("t")),                               # 3: a truncate, which Pathway refuses too
        by_pet(9, {"before": None, "after": row(9, "x", 1), "op": "c"}),  # 4: no payload
        by_pet(9, envelope("c", after={"pet_id": 9, "owner": 5})),        # 5: an int for a str
        by_pet(2, envelope("c", after=row(2, "bob", None))),   # 6
    ])
    sink = collect(pw.io.debezium.read(kafka_broker.settings, topic, schema=Pet, autocommit_duration_ms=100))
    with caplog.at_level(logging.WARNING, logger="sparkway"):
        run_until(lambda: len(sink.rows) >= 2)

    assert changes(sink.rows, COLUMNS) == collections.Counter({(1, "ann", 3, 1): 1, (2, "bob", None, 1): 1})
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for offset, reason in [(1, "not JSON"), (3, 'unknown Debezium operation "t"'), (4, 'no "payload"'),
                           (5, 'column "owner"')]:
        expected = f"topic {topic!r}, partition 0, offset {offset}: "
        assert any(expected in w and reason in w for w in warnings), (offset, reason, warnings)
    assert not any(f"offset {offset}:" in w for w in warnings for offset in (0, 2, 6)), warnings


MONGO_PHASES = [
    [
        by_pet(1, envelope("c", after=json.dumps(row(1, "ann", 3)))),
        by_pet(2, envelope("r", after=json.dumps(row(2, "bob", 5)))),
    ],
    [
        by_pet(1, envelope("u", after=json.dumps(row(1, "ann", 4)))),
        by_pet(2, envelope("d")),
        by_pet(2, None),
        by_pet(3, envelope("c", after=json.dumps(row(3, "cid", 1)))),
    ],
]
MONGO_CHANGES = [
    {(1, "ann", 3, 1), (2, "bob", 5, 1)},
    {(1, "ann", 3, -1), (1, "ann", 4, 1), (2, "bob", 5, -1), (3, "cid", 1, 1)},
]


@pytest.mark.usefixtures("spark")
def test_mongodb_events_replace_and_delete_the_documents_of_their_keys(kafka_broker) -> None:
    topic = kafka_broker.new_topic("debezium-mongo")
    docs = pw.io.debezium.read(kafka_broker.settings, topic, schema=Pet, db_type=pw.io.debezium.DebeziumDBType.MONGO_DB,
                               autocommit_duration_ms=100)
    assert docs.column_names() == COLUMNS
    stream = collect(docs.select(*pw.this, keyed=docs.pointer_from(docs.pet_id) == docs.id))
    run_until(feed_in_phases(kafka_broker, topic, MONGO_PHASES, lambda: len(stream.rows), [2, 6]))

    assert changes(stream.rows, COLUMNS) == collections.Counter(
        {change: 1 for phase in MONGO_CHANGES for change in phase})
    assert_phases_in_order(stream.rows, MONGO_CHANGES)
    assert all(r["keyed"] for r in stream.rows)


def test_a_replayed_step_reads_the_events_again_with_their_keys(kafka_broker) -> None:
    topic = kafka_broker.new_topic("debezium-replay")
    events = [event for phase in MONGO_PHASES for event in phase]
    send(kafka_broker, topic, events)

    def source() -> DebeziumSource:
        made = DebeziumSource(kafka_broker.settings, topic, columns=Pet.columns(),
                              db_type=DebeziumDBType.MONGO_DB, name="docs")
        made.open(None)
        return made

    first = source()
    try:
        segments = _discover_all(first, len(events))
        rows = first.read(segments).to_pylist()
    finally:
        first.close()
    # the last event of each key: 1 updated, 2 deleted (by its key: the delete has no document), 3 inserted
    flagged = sorted((r["pet_id"], r["owner"], r["_pw_debezium_upsert"]) for r in rows)
    assert flagged == [(1, "ann", True), (2, None, False), (3, "cid", True)]
    again = source()  # a restart replaying the step fetches the offsets from the broker, keys too
    try:
        assert again.read(segments).to_pylist() == rows
    finally:
        again.close()


@pytest.mark.usefixtures("spark")
def test_a_persistent_program_restarted_continues_after_the_last_offset(kafka_broker, tmp_path: Path) -> None:
    topic = kafka_broker.new_topic("debezium-persistent")
    config = pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state"))

    def run(until: Callable[[Rows, Rows], bool]) -> tuple[Rows, Rows]:
        clear()
        pets = pw.io.debezium.read(kafka_broker.settings, topic, schema=Pet, autocommit_duration_ms=100, name="pets")
        stream = collect(pets)
        count = collect(pets.reduce(n=pw.reducers.count(), owners=pw.reducers.sorted_tuple(pw.this.owner)))
        run_until(lambda: until(stream.rows, count.rows), persistence_config=config)
        return stream.rows, count.rows

    send(kafka_broker, topic, PHASES[0])
    first, first_count = run(lambda rows, _: len(rows) >= 3)
    send(kafka_broker, topic, PHASES[1])
    second, second_count = run(lambda rows, _: len(rows) >= 4)

    assert changes(first, COLUMNS) == collections.Counter({c: 1 for c in PHASE_CHANGES[0]})
    # the second run reads the second phase only, and its count starts from the first run's
    assert changes(second, COLUMNS) == collections.Counter({c: 1 for c in PHASE_CHANGES[1]})
    assert [(r["n"], tuple(r["owners"]), r["diff"]) for r in first_count] == [(3, ("ann", "bob", "cid"), 1)]
    assert sorted((r["n"], tuple(r["owners"]), r["diff"]) for r in second_count) == [
        (3, ("ann", "bob", "cid"), -1),
        (3, ("ann", "cid", "dan"), 1),
    ]


@pytest.mark.usefixtures("spark")
def test_a_backlog_of_events_is_read_by_spark_s_tasks_with_the_changes_of_a_read_here(
    kafka_broker, monkeypatch, caplog: pytest.LogCaptureFixture,
) -> None:
    from sparkway.connectors import kafka

    monkeypatch.setattr(kafka, "EXECUTOR_READ_MESSAGES", 5)
    monkeypatch.setattr(kafka, "PIECE_MESSAGES", 3)
    topic = kafka_broker.new_topic("debezium-backlog")
    for event in [event for phase in PHASES for event in phase] + [by_pet(9, b"not json")]:
        send(kafka_broker, topic, [event])  # a batch each: the tests' broker counts a batch's first offset
    # one step over the whole backlog: its changes consolidated, what the events leave
    net: collections.Counter = collections.Counter()
    for change in (c for phase in PHASE_CHANGES for c in phase):
        net[change[:3]] += change[3]
    expected = collections.Counter({(*k, n): 1 for k, n in net.items() if n})
    sink = collect(pw.io.debezium.read(kafka_broker.settings, topic, schema=Pet, autocommit_duration_ms=100))
    with caplog.at_level(logging.INFO, logger="sparkway"):
        run_until(lambda: changes(sink.rows, COLUMNS) == expected)
    assert "piece(s) to read by Spark's tasks" in caplog.text
    assert "1 message(s) skipped" in caplog.text
