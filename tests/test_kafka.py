"""pw.io.kafka against a real broker (tests/services/kafka.py): reading, writing, replays.

Expected rows are written out by hand from the messages each test produces.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from pyspark import cloudpickle

import sparkway as pw
from sparkway.api.graph import write_to_sink
from sparkway.connectors import kafka
from sparkway.connectors.base import OutputBatch, Sink
from sparkway.connectors.kafka import KafkaSource
from sparkway.core.columns import Column
from sparkway.core.dtypes import INT

pytestmark = pytest.mark.usefixtures("spark")

WAIT_S = 120  # upper bound for rows to show up (a step is a Spark job of about a second)

Rows = list[dict[str, Any]]


class Collect(Sink):
    """Keeps every change it gets, as dicts with the columns, ``time`` and ``diff``."""

    def __init__(self) -> None:
        self.rows: Rows = []

    def write(self, batch: OutputBatch) -> None:
        for row, diff in zip(batch.table.to_pylist(), batch.diffs.to_pylist()):
            self.rows.append({**row, "time": batch.time, "diff": diff})


def collect(table: pw.Table) -> Collect:
    sink = Collect()
    write_to_sink(table, sink)
    return sink


def run_until(done: Callable[[], bool], **run_options: Any) -> None:
    """``pw.run`` until ``done()`` holds (or WAIT_S passed): a thread then sends SIGINT,
    which ends the run after the current step."""
    stop = threading.Event()

    def watch() -> None:
        deadline = time.monotonic() + WAIT_S
        while not stop.is_set() and not done() and time.monotonic() < deadline:
            time.sleep(0.1)
        if not stop.is_set():
            os.kill(os.getpid(), signal.SIGINT)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        pw.run(**run_options)
    finally:
        stop.set()
        watcher.join()


def changes(rows: Rows, columns: list[str]) -> collections.Counter:
    return collections.Counter(tuple(r[c] for c in columns) + (r["diff"],) for r in rows)


# ------------------------------------------------------------------------------ read


class Payment(pw.Schema):
    user: str
    amount: int
    note: str | None


def test_json_messages_give_schema_rows_and_bad_messages_are_skipped_with_their_offset(
    kafka_broker, caplog: pytest.LogCaptureFixture
) -> None:
    topic = kafka_broker.new_topic("json")
    kafka_broker.produce(topic, [
        '{"user": "ann", "amount": 10}',             # offset 0
        '{"user": "bob", "amount": 5, "note": "x"}',  # 1
        "not json",                                   # 2: invalid JSON
        '{"user": "cid", "amount": "7"}',             # 3: a string for an int
        "[1, 2]",                                     # 4: not an object
        '{"amount": 1}',                              # 5: user missing
        '{"user": "dan", "amount": -3, "extra": 1}',  # 6
    ])
    table = pw.io.kafka.read(kafka_broker.settings, topic, schema=Payment, format="json", autocommit_duration_ms=100)
    sink = collect(table)
    with caplog.at_level(logging.WARNING, logger="sparkway"):
        run_until(lambda: len(sink.rows) >= 3)

    assert changes(sink.rows, ["user", "amount", "note"]) == collections.Counter(
        {("ann", 10, None, 1): 1, ("bob", 5, "x", 1): 1, ("dan", -3, None, 1): 1}
    )
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for offset, reason in [(2, "invalid JSON"), (3, 'column "amount": expected int'),
                           (4, "expected a JSON object"), (5, 'column "user": missing')]:
        expected = f"topic {topic!r}, partition 0, offset {offset}: "
        assert any(expected in w and reason in w for w in warnings), (offset, reason, warnings)


def test_raw_gives_bytes_and_plaintext_gives_text_one_row_per_message(kafka_broker) -> None:
    topic = kafka_broker.new_topic("text")
    kafka_broker.produce(topic, ["hello", "zażółć", "two\nlines"])
    raw = collect(pw.io.kafka.read(kafka_broker.settings, topic, format="raw", name="raw"))
    text = collect(pw.io.kafka.read(kafka_broker.settings, topic, format="plaintext", name="text"))
    run_until(lambda: len(raw.rows) >= 3 and len(text.rows) >= 3)

    assert changes(raw.rows, ["data"]) == collections.Counter(
        {(b"hello", 1): 1, ("zażółć".encode(), 1): 1, (b"two\nlines", 1): 1}
    )
    assert changes(text.rows, ["data"]) == collections.Counter(
        {("hello", 1): 1, ("zażółć", 1): 1, ("two\nlines", 1): 1}
    )


def test_simple_read_takes_the_server_and_reads_the_topic_from_its_start(kafka_broker) -> None:
    topic = kafka_broker.new_topic("simple")
    kafka_broker.produce(topic, ["one", "two"])
    text = collect(pw.io.kafka.simple_read(kafka_broker.settings["bootstrap.servers"], topic, format="plaintext"))
    run_until(lambda: len(text.rows) >= 2)
    assert changes(text.rows, ["data"]) == collections.Counter({("one", 1): 1, ("two", 1): 1})
    with pytest.raises(TypeError, match="use pw.io.kafka.read"):
        pw.io.kafka.simple_read("localhost:9092", topic, rdkafka_settings={})


def test_json_field_paths_and_primary_keys_give_the_ids_of_their_values(kafka_broker) -> None:
    class City(pw.Schema):
        key: int = pw.column_definition(primary_key=True)
        city: str

    class Population(pw.Schema):
        key: int = pw.column_definition(primary_key=True)
        millions: int

    cities, populations = kafka_broker.new_topic("cities"), kafka_broker.new_topic("populations")
    kafka_broker.produce(cities, ['{"key": 1, "place": {"city": "Oslo"}}', '{"key": 2, "place": {"city": "Rome"}}'])
    kafka_broker.produce(populations, ['{"key": 2, "millions": 3}', '{"key": 1, "millions": 1}'])
    a = pw.io.kafka.read(kafka_broker.settings, cities, schema=City, format="json",
                         json_field_paths={"city": "/place/city"})
    b = pw.io.kafka.read(kafka_broker.settings, populations, schema=Population, format="json")
    # rows of equal keys have equal ids, whatever their topic and offset: pointer_from(key)
    joined = collect(a.join(b, a.id == b.id).select(a.city, b.millions))
    keyed = collect(a.select(a.city, same=a.pointer_from(a.key) == a.id))
    run_until(lambda: len(joined.rows) >= 2 and len(keyed.rows) >= 2)
    assert changes(joined.rows, ["city", "millions"]) == collections.Counter({("Oslo", 1, 1): 1, ("Rome", 3, 1): 1})
    assert changes(keyed.rows, ["city", "same"]) == collections.Counter({("Oslo", True, 1): 1, ("Rome", True, 1): 1})


def test_messages_of_one_discover_are_one_step_and_later_ones_the_next(kafka_broker) -> None:
    topic = kafka_broker.new_topic("steps", partitions=2)
    kafka_broker.produce(topic, [f"a{i}" for i in range(3)], partition=0)
    kafka_broker.produce(topic, [f"b{i}" for i in range(2)], partition=1)
    sink = collect(pw.io.kafka.read(kafka_broker.settings, topic, format="plaintext", autocommit_duration_ms=100))
    sent_more = threading.Event()

    def more_after_first_step() -> bool:
        if sink.rows and not sent_more.is_set():
            sent_more.set()
            kafka_broker.produce(topic, ["c0"], partition=0)
        return len(sink.rows) >= 6

    # the first step may be taken before every message of the first batch is buffered,
    # so it is checked through the times: rows of one step share one, steps are ordered
    run_until(more_after_first_step)
    by_time: dict[int, set[str]] = collections.defaultdict(set)
    for row in sink.rows:
        by_time[row["time"]].add(row["data"])
    assert set().union(*by_time.values()) == {"a0", "a1", "a2", "b0", "b1", "c0"}
    last = max(by_time)
    assert "c0" in by_time[last] and all("c0" not in v for t, v in by_time.items() if t != last)


# --------------------------------------------------------------- the source by itself


def _source(settings: dict[str, Any], topic: str, **options: Any) -> KafkaSource:
    source = KafkaSource(settings, topic, format="json", columns={"n": Column("n", INT)}, name="numbers", **options)
    source.open(None)
    return source


def _discover_all(source: KafkaSource, count: int) -> list[dict[str, Any]]:
    """Discovers until the segments hold ``count`` messages."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        segments = source.discover()
        if sum(s["count"] for s in segments) >= count:
            return segments
        time.sleep(0.05)
    raise AssertionError(f"the source did not buffer {count} messages")


def test_a_replayed_step_reads_the_same_offsets_again_with_the_same_rows(kafka_broker) -> None:
    topic = kafka_broker.new_topic("replay", partitions=2)
    kafka_broker.produce(topic, [json.dumps({"n": i}) for i in range(4)], partition=0)
    kafka_broker.produce(topic, [json.dumps({"n": i}) for i in range(10, 13)], partition=1)
    first = _source(kafka_broker.settings, topic)
    try:
        segments = _discover_all(first, 7)
        rows = first.read(segments).to_pylist()
        assert sorted(r["n"] for r in rows) == [0, 1, 2, 3, 10, 11, 12]
        assert {s["partition"]: (s["start"], s["end"]) for s in segments} == {0: (0, 4), 1: (0, 3)}
    finally:
        first.close()
    kafka_broker.produce(topic, [json.dumps({"n": 99})], partition=0)  # after the step: not in it

    # a new run (a restart after a crash) reads the logged segments from the broker
    again = _source(kafka_broker.settings, topic)
    try:
        assert sorted(again.read(segments).to_pylist(), key=lambda r: r["_id"]) == sorted(rows, key=lambda r: r["_id"])
        again.advance(segments)
        assert again.position() == {"topic": topic, "offsets": {"0": 4, "1": 3}}
        rest = _discover_all(again, 1)
        assert [r["n"] for r in again.read(rest).to_pylist()] == [99]
    finally:
        again.close()


def test_a_restored_position_continues_after_the_committed_offsets(kafka_broker) -> None:
    topic = kafka_broker.new_topic("restore")
    kafka_broker.produce(topic, [json.dumps({"n": i}) for i in range(5)])
    source = _source(kafka_broker.settings, topic)
    try:
        source.restore({"topic": topic, "offsets": {"0": 3}})
        segments = _discover_all(source, 2)
        assert [r["n"] for r in source.read(segments).to_pylist()] == [3, 4]
    finally:
        source.close()


def test_input_waits_for_the_commit_interval_after_a_step(kafka_broker) -> None:
    topic = kafka_broker.new_topic("interval")
    kafka_broker.produce(topic, ['{"n": 1}'])
    source = _source(kafka_broker.settings, topic, autocommit_duration_ms=3_600_000)
    try:
        first = _discover_all(source, 1)  # nothing committed yet: ready at once
        source.advance(first)
        kafka_broker.produce(topic, ['{"n": 2}'])
        poller = source._poller
        deadline = time.monotonic() + WAIT_S
        while poller.size == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert poller.size == 1, "the second message was not buffered"
        assert source.discover() == []  # buffered, but the hour since the commit has not passed
    finally:
        source.close()


def test_a_missing_topic_is_an_error_that_names_it(kafka_broker) -> None:
    source = _source({**kafka_broker.settings, "allow.auto.create.topics": "false"}, "no-such-topic-here")
    with pytest.raises(RuntimeError, match="no-such-topic-here"):
        source.discover()
    source.close()


# ----------------------------------------------------------------------------- write


def _consume_json(kafka_broker, topic: str, count: int) -> Rows:
    return [json.loads(m.value()) for m in kafka_broker.consume(topic, count)]


def test_write_sends_each_change_as_json_with_time_and_diff(kafka_broker) -> None:
    words = pw.debug.table_from_markdown(
        """
        word | __time__
        a    | 2
        b    | 2
        a    | 4
        """
    )
    counts = words.groupby(pw.this.word).reduce(pw.this.word, count=pw.reducers.count())
    topic = kafka_broker.new_topic("counts")
    pw.io.kafka.write(counts, kafka_broker.settings, topic)
    pw.run()

    messages = _consume_json(kafka_broker, topic, 4)
    assert all(set(m) == {"word", "count", "time", "diff"} for m in messages)
    times = sorted({m["time"] for m in messages})
    assert len(times) == 2
    by_time = [changes([m for m in messages if m["time"] == t], ["word", "count"]) for t in times]
    assert by_time == [
        collections.Counter({("a", 1, 1): 1, ("b", 1, 1): 1}),
        collections.Counter({("a", 1, -1): 1, ("a", 2, 1): 1}),
    ]


def test_write_sends_the_messages_of_one_time_in_the_order_of_sort_by(kafka_broker) -> None:
    names = ["zoe", "amy", "kim", "bob", "eve", "dan"]
    t = pw.debug.table_from_markdown("name\n" + "\n".join(names))
    topic = kafka_broker.new_topic("sorted")
    pw.io.kafka.write(t, kafka_broker.settings, topic, sort_by=[t.name])
    pw.run()
    assert [m["name"] for m in _consume_json(kafka_broker, topic, len(names))] == sorted(names)


def test_write_plaintext_sends_the_value_with_time_and_diff_headers_and_the_key(kafka_broker) -> None:
    table = pw.debug.table_from_markdown("k | text\n1 | hi\n2 | yo")
    topic = kafka_broker.new_topic("plain")
    pw.io.kafka.write(table, kafka_broker.settings, topic, format="plaintext", key=table.k, value=table.text)
    pw.run()

    messages = kafka_broker.consume(topic, 2)
    assert sorted((m.key(), m.value()) for m in messages) == [(b"1", b"hi"), (b"2", b"yo")]
    headers = [dict(m.headers()) for m in messages]
    assert all(h["pathway_diff"] == b"1" for h in headers)
    # one step, at the time of a static debug table: 0, as in Pathway
    assert [h["pathway_time"] for h in headers] == [b"0", b"0"]


def test_a_read_topic_written_back_round_trips(kafka_broker) -> None:
    source_topic, sink_topic = kafka_broker.new_topic("in"), kafka_broker.new_topic("out")
    kafka_broker.produce(source_topic, ['{"user": "ann", "amount": 3}', '{"user": "ann", "amount": 4}'])
    payments = pw.io.kafka.read(kafka_broker.settings, source_topic, schema=Payment, format="json")
    totals = payments.groupby(pw.this.user).reduce(pw.this.user, total=pw.reducers.sum(pw.this.amount))
    pw.io.kafka.write(totals, kafka_broker.settings, sink_topic)
    seen = collect(totals)
    run_until(lambda: any(r["total"] == 7 and r["diff"] == 1 for r in seen.rows))

    # the topic holds the same changes as the in-memory sink, in the same steps
    written = _consume_json(kafka_broker, sink_topic, len(seen.rows))
    assert changes(written, ["user", "total", "time"]) == changes(seen.rows, ["user", "total", "time"])


def test_a_failed_delivery_stops_the_run_with_the_topic_and_the_reason() -> None:
    table = pw.debug.table_from_markdown("word\nhello")
    # nothing listens on the port: the message times out after a second
    pw.io.kafka.write(table, {"bootstrap.servers": "127.0.0.1:1", "message.timeout.ms": 1000}, "lost")
    with pytest.raises(RuntimeError, match=r"1 of 1 messages to topic 'lost' were not delivered.*timed out"):
        pw.run()


def test_a_message_refused_at_once_is_reported_the_same_way(kafka_broker) -> None:
    table = pw.debug.table_from_markdown("word\n" + "x" * 5000)
    topic = kafka_broker.new_topic("large")
    pw.io.kafka.write(table, {**kafka_broker.settings, "message.max.bytes": 1000}, topic)
    with pytest.raises(RuntimeError, match=f"messages to topic '{topic}' were not delivered.*too large"):
        pw.run()


# ------------------------------------------------------------ a backlog read by Spark's tasks


def test_a_backlog_is_read_in_pieces_of_offsets_then_the_poller_follows(kafka_broker, monkeypatch) -> None:
    monkeypatch.setattr(kafka, "EXECUTOR_READ_MESSAGES", 10)
    monkeypatch.setattr(kafka, "PIECE_MESSAGES", 4)
    topic = kafka_broker.new_topic("backlog", partitions=2)
    kafka_broker.produce(topic, [json.dumps({"n": i}) for i in range(9)], partition=0, batched=False)
    kafka_broker.produce(topic, [json.dumps({"n": i}) for i in range(100, 106)], partition=1, batched=False)
    source = _source(kafka_broker.settings, topic, autocommit_duration_ms=0)
    try:
        segments = source.discover()
        assert source._poller is None  # the driver asked for offsets only
        assert segments == [{"partition": 0, "start": 0, "end": 9}, {"partition": 1, "start": 0, "end": 6}]
        distributed = source.read_on_executors(segments)
        assert distributed is not None
        assert [(p["partition"], p["start"], p["end"]) for p in distributed.pieces] == [
            (0, 0, 4), (0, 4, 8), (0, 8, 9), (1, 0, 4), (1, 4, 6)]
        # what a task runs, shipped as Spark ships it
        read = cloudpickle.loads(cloudpickle.dumps(distributed.read))
        tasks = pa.concat_tables([read(piece)[0] for piece in distributed.pieces]).to_pylist()
        assert sorted(tasks, key=lambda r: r["_id"]) == sorted(source.read(segments).to_pylist(), key=lambda r: r["_id"])
        assert sorted(r["n"] for r in tasks) == [*range(9), *range(100, 106)]
        source.advance(segments)

        kafka_broker.produce(topic, [json.dumps({"n": 9})], partition=0, batched=False)
        rest = _discover_all(source, 1)  # caught up: the poller buffers the new message
        assert source._poller is not None and source.read_on_executors(rest) is None
        assert [r["n"] for r in source.read(rest).to_pylist()] == [9]
    finally:
        source.close()


def test_a_run_over_a_backlog_outputs_each_message_once(kafka_broker, monkeypatch, caplog) -> None:
    monkeypatch.setattr(kafka, "EXECUTOR_READ_MESSAGES", 20)
    monkeypatch.setattr(kafka, "PIECE_MESSAGES", 7)
    topic = kafka_broker.new_topic("backlog-run", partitions=2)
    kafka_broker.produce(topic, [json.dumps({"user": f"u{i}", "amount": i}) for i in range(20)], partition=0,
                         batched=False)
    kafka_broker.produce(topic, [*(json.dumps({"user": f"v{i}", "amount": i}) for i in range(15)), "not json"],
                         partition=1, batched=False)
    sink = collect(pw.io.kafka.read(kafka_broker.settings, topic, schema=Payment, format="json",
                                    autocommit_duration_ms=100))
    sent_more = threading.Event()

    def more_after_the_backlog() -> bool:
        if len(sink.rows) >= 35 and not sent_more.is_set():
            sent_more.set()
            kafka_broker.produce(topic, [json.dumps({"user": "late", "amount": 1})], partition=1, batched=False)
        return len(sink.rows) >= 36

    with caplog.at_level(logging.WARNING, logger="sparkway"):
        run_until(more_after_the_backlog)
    expected = {(f"u{i}", i, 1) for i in range(20)} | {(f"v{i}", i, 1) for i in range(15)} | {("late", 1, 1)}
    assert changes(sink.rows, ["user", "amount"]) == collections.Counter(expected)
    backlog_times = {r["time"] for r in sink.rows if r["user"] != "late"}
    assert len(backlog_times) == 1  # one step, one transaction
    assert any("1 message(s) skipped" in r.getMessage() for r in caplog.records)
