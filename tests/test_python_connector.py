"""pw.io.python (ConnectorSubject) and pw.io.subscribe, run in-process through pw.run."""

from __future__ import annotations

import collections
import json
import os
import random
import signal
import threading

import pytest

import sparkway as pw
from sparkway.api import graph

pytestmark = pytest.mark.usefixtures("spark")

WAIT_S = 120  # upper bound for the engine to show a row (Spark jobs take ~1 s here)


class Recorder:
    """Everything pw.io.subscribe reports, in call order."""

    def __init__(self) -> None:
        self.changes: list[tuple[int, dict, int, bool]] = []
        self.time_ends: list[int] = []
        self.ends = 0
        self.seen = threading.Condition()

    def on_change(self, key, row, time, is_addition):
        with self.seen:
            self.changes.append((key, dict(row), time, is_addition))
            self.seen.notify_all()

    def on_time_end(self, time):
        self.time_ends.append(time)

    def on_end(self):
        self.ends += 1

    def subscribe(self, table: pw.Table) -> None:
        pw.io.subscribe(table, on_change=self.on_change, on_time_end=self.on_time_end, on_end=self.on_end)

    def wait_for(self, condition, what: str) -> None:
        with self.seen:
            assert self.seen.wait_for(lambda: condition(self.changes), timeout=WAIT_S), f"timed out waiting for {what}"

    def final(self) -> collections.Counter:
        rows: collections.Counter = collections.Counter()
        for _, row, _, added in self.changes:
            rows[tuple(sorted(row.items()))] += 1 if added else -1
        return +rows


class Value(pw.Schema):
    value: int


class Transfers(pw.io.python.ConnectorSubject):
    """Random transfers between accounts, as event packs; some explicitly committed."""

    def __init__(self, count: int, seed: int) -> None:
        super().__init__()
        self.count, self.rng = count, random.Random(seed)
        self.sent: list[dict] = []

    def run(self) -> None:
        for _ in range(self.count):
            a, b = self.rng.sample(range(1, 8), 2)
            amount = self.rng.randint(1, 100)
            message = {"events": [
                {"account_id": a, "amount": -amount, "event_type": "debit"},
                {"account_id": b, "amount": amount, "event_type": "credit"},
            ]}
            self.sent.append(message)
            self.next_json(message)
            if self.rng.random() < 0.5:
                self.commit()
            threading.Event().wait(self.rng.choice((0, 0.05, 0.3)))


def balances(table: pw.Table) -> pw.Table:
    """The seed-004 program: flatten packs, split by kind, sum per account, join back."""
    events = table.flatten(pw.this.events).select(
        account_id=pw.unwrap(pw.this.events["account_id"].as_int()),
        amount=pw.unwrap(pw.this.events["amount"].as_int()),
        event_type=pw.unwrap(pw.this.events["event_type"].as_str()),
    )

    def total(kind: str) -> pw.Table:
        return events.filter(pw.this.event_type == kind).groupby(pw.this.account_id).reduce(
            pw.this.account_id, balance=pw.reducers.sum(pw.this.amount)
        )

    return total("credit").join_outer(total("debit"), pw.left.account_id == pw.right.account_id).select(
        account_id=pw.coalesce(pw.left.account_id, pw.right.account_id),
        balance=pw.coalesce(pw.left.balance, 0) + pw.coalesce(pw.right.balance, 0),
    )


def test_transactions_are_atomic_so_the_total_balance_is_zero_at_every_time() -> None:
    class Packs(pw.Schema):
        events: pw.Json

    subject = Transfers(count=25, seed=4)
    recorder = Recorder()
    totals: dict[int, int] = {}
    current: dict[int, int] = {}
    seen_changes: list = []

    def on_time_end(time: int) -> None:
        for _, row, t, added in recorder.changes[len(seen_changes):]:
            assert t == time
            if added:
                current[row["account_id"]] = row["balance"]
            else:
                assert current.pop(row["account_id"]) == row["balance"]
        seen_changes.extend(recorder.changes[len(seen_changes):])
        totals[time] = sum(current.values())

    recorder.on_time_end = on_time_end  # type: ignore[method-assign]
    recorder.subscribe(balances(pw.io.python.read(subject, schema=Packs, autocommit_duration_ms=200)))
    pw.run()

    assert totals and set(totals.values()) == {0}
    expected: collections.Counter = collections.Counter()
    for message in subject.sent:
        for event in message["events"]:
            expected[event["account_id"]] += event["amount"]
    assert current == dict(expected)
    assert recorder.ends == 1


def test_rows_between_commits_reach_the_outputs_at_one_time() -> None:
    class Numbers(pw.io.python.ConnectorSubject):
        def run(self) -> None:
            rng = random.Random(7)
            for group in range(12):
                for member in range(rng.randint(1, 5)):
                    self.next(group=group, member=member)
                    threading.Event().wait(rng.choice((0, 0.02)))
                self.commit()

    class Member(pw.Schema):
        group: int
        member: int

    recorder = Recorder()
    recorder.subscribe(pw.io.python.read(Numbers(), schema=Member, autocommit_duration_ms=None))
    pw.run()

    times_of_group = collections.defaultdict(set)
    for _, row, time, added in recorder.changes:
        assert added
        times_of_group[row["group"]].add(time)
    assert sorted(times_of_group) == list(range(12))
    assert all(len(times) == 1 for times in times_of_group.values())


def test_autocommit_commits_rows_the_subject_never_commits() -> None:
    recorder = Recorder()

    class Paced(pw.io.python.ConnectorSubject):
        """Emits the next value only once the previous one reached the output."""

        def run(self) -> None:
            for n in range(3):
                self.next(value=n)
                recorder.wait_for(lambda changes: len(changes) > n, f"value {n} without commit()")

    recorder.subscribe(pw.io.python.read(Paced(), schema=Value, autocommit_duration_ms=50))
    pw.run()
    assert [row["value"] for _, row, _, _ in recorder.changes] == [0, 1, 2]
    assert len({time for _, _, time, _ in recorder.changes}) == 3


def test_subscribe_reports_an_update_as_removal_then_addition_at_one_time() -> None:
    class Steps(pw.io.python.ConnectorSubject):
        def run(self) -> None:
            for batch in ([("a", 1), ("b", 2)], [("a", 5)], [("b", 1), ("c", 3)]):
                for word, n in batch:
                    self.next(word=word, n=n)
                self.commit()

    class Counted(pw.Schema):
        word: str
        n: int

    sums = pw.io.python.read(Steps(), schema=Counted, autocommit_duration_ms=None).groupby(pw.this.word).reduce(
        pw.this.word, total=pw.reducers.sum(pw.this.n)
    )
    recorder = Recorder()
    recorder.subscribe(sums)
    pw.run()

    assert recorder.final() == collections.Counter({
        (("total", 6), ("word", "a")): 1, (("total", 3), ("word", "b")): 1, (("total", 3), ("word", "c")): 1,
    })
    for time in {t for _, _, t, _ in recorder.changes}:
        at_time = [(row["word"], added) for _, row, t, added in recorder.changes if t == time]
        for word in [w for w, added in at_time if not added]:  # removal first, then the addition
            assert at_time.index((word, False)) < at_time.index((word, True))
    # the key of a word's row stays the same through its updates
    keys = collections.defaultdict(set)
    for key, row, _, _ in recorder.changes:
        keys[row["word"]].add(key)
    assert all(len(k) == 1 for k in keys.values()) and len({next(iter(k)) for k in keys.values()}) == 3
    # on_time_end follows each time's changes, once per time, in increasing order
    change_times = sorted({t for _, _, t, _ in recorder.changes})
    assert set(change_times) <= set(recorder.time_ends) and recorder.time_ends == sorted(set(recorder.time_ends))
    assert recorder.ends == 1


def test_next_str_next_bytes_and_json_values_are_typed_by_the_schema() -> None:
    class Texts(pw.io.python.ConnectorSubject):
        def run(self) -> None:
            self.next_str("hello")
            self.next_str("world")

    class Blobs(pw.io.python.ConnectorSubject):
        def run(self) -> None:
            self.next_bytes(b"\x00\x01")

    class Mixed(pw.io.python.ConnectorSubject):
        def run(self) -> None:
            self.next_json({"n": 3, "when": "2024-01-02T03:04:05", "doc": {"k": [1, 2]}})
            self.next(n=4, when=None, doc=pw.Json({"k": []}))

    class Text(pw.Schema):
        data: str

    class Blob(pw.Schema):
        data: bytes

    class Typed(pw.Schema):
        n: int
        when: pw.DateTimeNaive | None
        doc: pw.Json

    texts, blobs, mixed = Recorder(), Recorder(), Recorder()
    texts.subscribe(pw.io.python.read(Texts(), schema=Text))
    blobs.subscribe(pw.io.python.read(Blobs(), schema=Blob))
    mixed.subscribe(pw.io.python.read(Mixed(), schema=Typed).select(
        pw.this.n, year=pw.require(pw.this.when.dt.year(), pw.this.when), k=pw.this.doc["k"]
    ))
    pw.run()

    assert sorted(row["data"] for _, row, _, _ in texts.changes) == ["hello", "world"]
    assert [row["data"] for _, row, _, _ in blobs.changes] == [b"\x00\x01"]
    got = sorted((row["n"], row["year"], json.dumps(row["k"].value)) for _, row, _, _ in mixed.changes)
    assert got == [(3, 2024, "[1, 2]"), (4, None, "[]")]


def test_a_value_that_does_not_fit_the_schema_skips_its_row_with_an_error_naming_the_column(caplog) -> None:
    # as Pathway 0.33.0: the row is skipped and the error logged (keeping Error values,
    # the value would be an Error instead: tests/test_error_values.py)
    class Wrong(pw.io.python.ConnectorSubject):
        def run(self) -> None:
            self.next_json({"value": "not a number"})
            self.next_json({"value": 7})

    seen = []
    pw.io.subscribe(pw.io.python.read(Wrong(), schema=Value), on_change=lambda key, row, **_: seen.append(row))
    pw.run()
    assert seen == [{"value": 7}]
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert any('field "value" with type int from json payload: "not a number"' in m for m in errors)


def test_sigint_ends_a_streaming_run_after_the_current_step() -> None:
    stopped = threading.Event()

    class Endless(pw.io.python.ConnectorSubject):
        def run(self) -> None:
            n = 0
            while not stopped.is_set():
                self.next(value=n)
                self.commit()
                n += 1
                stopped.wait(0.05)

        def on_stop(self) -> None:
            stopped.set()

    recorder = Recorder()
    recorder.subscribe(pw.io.python.read(Endless(), schema=Value))

    def interrupt_when_enough() -> None:
        recorder.wait_for(lambda changes: len(changes) >= 5, "five rows")
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_when_enough, daemon=True).start()
    pw.run()  # returns instead of raising KeyboardInterrupt

    assert stopped.is_set()  # on_stop was called
    assert recorder.ends == 1
    values = sorted(row["value"] for _, row, _, _ in recorder.changes)
    assert values == list(range(len(values))) and len(values) >= 5


def test_a_failing_callback_stops_the_run_and_the_restart_delivers_the_step_again(tmp_path) -> None:
    class Word(pw.Schema):
        word: str

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("word\nx\ny\n")
    delivered: list[tuple[str, bool]] = []

    def run(on_change) -> None:
        graph.clear()
        words = pw.io.csv.read(tmp_path / "in", schema=Word, mode="static", name="words")
        pw.io.subscribe(words, on_change=on_change)
        pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state")))

    def refuse_y(key, row, time, is_addition):
        if row["word"] == "y":
            raise ValueError("the consumer refused y")
        delivered.append((row["word"], is_addition))

    with pytest.raises(ValueError, match="refused y"):
        run(refuse_y)
    run(lambda key, row, time, is_addition: delivered.append((row["word"], is_addition)))
    # x reached the callback in both runs (at least once); y, refused, is not lost
    assert sorted(delivered) == [("x", True), ("x", True), ("y", True)]


def test_a_batch_committed_after_a_replayed_step_gets_a_new_number(tmp_path) -> None:
    """A restart replays the interrupted step (batches 3-5), then the subject commits
    again: its batch must be read next, not numbered as one already read."""
    from sparkway.connectors.python import PythonSource
    from sparkway.persistence.storage import BlobStorage

    done = threading.Event()

    class Idle(pw.io.python.ConnectorSubject):
        def run(self) -> None:
            done.wait(WAIT_S)  # the test adds the rows itself

    storage = BlobStorage(str(tmp_path / "feed"))
    first = PythonSource(Idle(), Value.columns(), autocommit_duration_ms=None, name="feed")
    first.open(storage)
    for n in range(6):
        first.add({"value": n}, parse_json=False)
        first.commit()
    # the process dies after step [0, 1, 2] committed and step [3, 4, 5] was logged

    second = PythonSource(Idle(), Value.columns(), autocommit_duration_ms=None, name="feed")
    second.open(storage)
    second.restore({"next_batch": 3})
    replayed = [{"batch": b} for b in (3, 4, 5)]
    assert second.read(replayed).column("value").to_pylist() == [3, 4, 5]
    second.advance(replayed)
    assert second.discover() == []
    second.add({"value": 6}, parse_json=False)
    second.commit()
    segments = second.discover()
    done.set()
    assert second.read(segments).column("value").to_pylist() == [6]


def test_demo_replays_a_csv_file_row_by_row_and_by_its_time_column(tmp_path) -> None:
    path = tmp_path / "input.csv"
    path.write_text("k,v,time\n1,foo,0\n2,bar,20\n3,baz,40\n")

    class Row(pw.Schema):
        k: int
        v: str
        time: int

    by_rate = pw.demo.replay_csv(str(path), schema=Row, input_rate=1000)
    assert sorted(pw.debug.table_to_pandas(by_rate).itertuples(index=False, name=None)) == [
        (1, "foo", 0), (2, "bar", 20), (3, "baz", 40),
    ]
    graph.clear()
    timed = pw.demo.replay_csv_with_time(str(path), schema=Row, time_column="time", unit="ms", autocommit_ms=10)
    recorder = Recorder()
    recorder.subscribe(timed)
    pw.run()
    times = {row["k"]: time for _, row, time, _ in recorder.changes}
    assert sorted(times) == [1, 2, 3] and times[1] <= times[2] <= times[3]  # in the order of their time column
    with pytest.raises(ValueError, match="Invalid schema. Time columns must be int or float"):
        pw.demo.replay_csv_with_time(str(path), schema=Row.with_types(time=str), time_column="time")


def test_observers_get_every_change_in_order_and_the_end():
    t = pw.debug.table_from_markdown(
        """
          | pet | age | __time__ | __diff__
        1 | dog | 10  | 2        | 1
        2 | cat | 8   | 2        | 1
        2 | cat | 8   | 4        | -1
        """
    )
    seen: list = []

    class Recorder(pw.io.python.ConnectorObserver):
        def on_change(self, key, row, time, is_addition):
            seen.append((row["pet"], is_addition))

        def on_end(self):
            seen.append("end")

    class AsyncRecorder(pw.io.python.AsyncConnectorObserver):
        async def on_change(self, key, row, time, is_addition):
            seen.append(("async", row["age"]))

    pw.io.python.write(t, Recorder(), sort_by=[t.pet])
    pw.io.python.write(t.filter(pw.this.age > 9), AsyncRecorder())
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)
    assert [c for c in seen if c[0] != "async"] == [("cat", True), ("dog", True), ("cat", False), "end"]
    assert ("async", 10) in seen
    with pytest.raises(TypeError, match="ConnectorObserver"):
        pw.io.python.write(t, object())


class Keyed(pw.Schema):
    key: int = pw.column_definition(primary_key=True)
    value: str


def _final_rows(table: pw.Table) -> list[tuple]:
    frame = pw.debug.table_to_pandas(table)
    return sorted(zip(frame["key"], frame["value"]))


def test_an_upsert_session_replaces_the_row_of_a_key_and_delete_removes_it():
    class Upserts(pw.io.python.ConnectorSubject):
        def __init__(self):
            super().__init__(session_type="upsert")

        def run(self):
            self.next(key=1, value="one")
            self.next(key=2, value="two")
            self.commit()
            self.next(key=1, value="uno")  # replaces key 1's row
            self.delete(key=2, value="two")
            self.next(key=3, value="three")  # in one transaction: the last event of a key counts
            self.next(key=3, value="drei")
            self.next(key=4, value="four")
            self.delete(key=4, value="four")
            self.commit()

    assert _final_rows(pw.io.python.read(Upserts(), schema=Keyed)) == [(1, "uno"), (3, "drei")]


def test_a_native_session_deletes_a_row_emitted_before_by_its_values():
    class InsertThenDelete(pw.io.python.ConnectorSubject):
        def run(self):
            self.next(key=1, value="one")
            self.next(key=2, value="two")
            self.commit()
            self.delete(key=1, value="one")

    assert _final_rows(pw.io.python.read(InsertThenDelete(), schema=Keyed)) == [(2, "two")]


def test_raw_messages_are_read_in_the_sources_format():
    class Raw(pw.io.python.ConnectorSubject):
        def __init__(self):
            super().__init__(session_type="upsert")

        def run(self):
            self._add(None, json.dumps({"key": 1, "value": "a"}).encode())
            self._add(None, json.dumps({"key": 2, "value": "b"}).encode())
            self.commit()
            self._remove(None, json.dumps({"key": 1, "value": "a"}).encode())

    class Lines(pw.io.python.ConnectorSubject):
        def run(self):
            self._add(None, b"first line")

    class Data(pw.Schema):
        data: str

    assert _final_rows(pw.io.python.read(Raw(), schema=Keyed)) == [(2, "b")]
    lines = pw.debug.table_to_pandas(pw.io.python.read(Lines(), schema=Data, format="plaintext"))
    assert list(lines["data"]) == ["first line"]


def test_an_upsert_session_needs_a_primary_key():
    class Upserts(pw.io.python.ConnectorSubject):
        def __init__(self):
            super().__init__(session_type="upsert")

        def run(self):
            pass

    with pytest.raises(ValueError, match="requires a schema with at least one primary_key column"):
        pw.io.python.read(Upserts(), schema=Value)
    with pytest.raises(ValueError, match="invalid session_type"):
        pw.io.python.ConnectorSubject(session_type="replace")
