"""Input synchronization groups (``pw.io.register_input_synchronization_group``).

Two Python subjects feed two tables; each subject waits for what the engine has shown
(through ``pw.io.subscribe``) before it sends more, so that the order of events is fixed.
The expectations follow the rules by hand (see ``engine/synchronization.py``); the error
messages are those Pathway 0.33.0 gives for the same calls.
"""

from __future__ import annotations

import datetime
import os
import signal
import threading
import time

import pyarrow as pa
import pytest

import sparkway as pw
from sparkway.api import graph
from sparkway.engine.synchronization import Synchronizer, _Group, _Member
from sparkway.persistence.storage import BlobStorage

pytestmark = pytest.mark.usefixtures("spark")

WAIT_S = 120
SETTLE_S = 1.5  # a few polls of the step loop: long enough for a row to show if it were let through


class Event(pw.Schema):
    k: int
    v: str


class Seen:
    """What the subscription showed: per row name, its time and when it was seen."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[int, float]] = {}
        self.condition = threading.Condition()

    def on_change(self, key, row, time, is_addition) -> None:
        with self.condition:
            assert is_addition and row["v"] not in self.rows, f"{row['v']} shown twice or retracted"
            self.rows[row["v"]] = (time, _now())
            self.condition.notify_all()

    def wait_for(self, *names: str) -> None:
        with self.condition:
            assert self.condition.wait_for(lambda: all(n in self.rows for n in names), timeout=WAIT_S), (
                f"timed out waiting for {names}; seen {sorted(self.rows)}"
            )

    def now(self) -> set[str]:
        with self.condition:
            return set(self.rows)

    def time(self, name: str) -> int:
        return self.rows[name][0]


def _now() -> float:
    return time.monotonic()


class Script(pw.io.python.ConnectorSubject):
    """Runs ``script(subject)`` as its ``run()``."""

    def __init__(self, script) -> None:
        super().__init__()
        self.script = script

    def run(self) -> None:
        self.script(self)

    def send(self, k, v: str) -> None:
        self.next(k=k, v=v)
        self.commit()


def _two_tables(a_script, b_script, schema=Event):
    graph.clear()
    a = pw.io.python.read(Script(a_script), schema=schema, name="a")
    b = pw.io.python.read(Script(b_script), schema=schema, name="b")
    return a, b


def _subscribe(seen: Seen, *tables: pw.Table) -> None:
    for table in tables:
        pw.io.subscribe(table, on_change=seen.on_change)


@pytest.mark.parametrize("kind", ["int", "utc"])
def test_a_source_ahead_waits_until_the_other_catches_up(kind) -> None:
    # max_difference 10 (minutes for date-times): after a=1 and b=1 the bound is 11;
    # a=20 waits; b=15 passes (b's own reach is max(1 + 10, 15) = 15), and then the
    # bound is min(15 + 10, 20) = 20: a=20 passes in the same step as b=15
    seen = Seen()
    checks: dict[str, set[str]] = {}
    start = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
    value = (lambda k: k) if kind == "int" else (lambda k: start + datetime.timedelta(minutes=k))
    difference = 10 if kind == "int" else datetime.timedelta(minutes=10)

    def a_script(subject: Script) -> None:
        subject.send(value(1), "a1")
        seen.wait_for("a1")
        subject.send(value(20), "a20")

    def b_script(subject: Script) -> None:
        subject.send(value(1), "b1")
        seen.wait_for("a1", "b1")
        time.sleep(SETTLE_S)
        checks["before b15"] = seen.now()
        subject.send(value(15), "b15")
        seen.wait_for("a20", "b15")

    schema = Event if kind == "int" else pw.schema_from_types(k=pw.DateTimeUtc, v=str)
    a, b = _two_tables(a_script, b_script, schema)
    pw.io.register_input_synchronization_group(a.k, b.k, max_difference=difference)
    _subscribe(seen, a, b)
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)

    assert checks["before b15"] == {"a1", "b1"}
    assert seen.time("a20") == seen.time("b15")


def test_a_gap_every_source_jumps_over_becomes_the_new_baseline() -> None:
    # after 1 and 1 (bound 11) a sends 100 and b 105: every source waits and none fits,
    # so the bound becomes the smallest next value, 100; then a's reach is 110 and b's 105
    seen = Seen()
    checks: dict[str, object] = {}

    def a_script(subject: Script) -> None:
        subject.send(1, "a1")
        seen.wait_for("a1", "b1")
        subject.send(100, "a100")
        seen.wait_for("a100", "b105")

    def b_script(subject: Script) -> None:
        subject.send(1, "b1")
        seen.wait_for("a1", "b1")
        time.sleep(SETTLE_S)
        checks["before b105"] = seen.now()
        subject.send(105, "b105")
        seen.wait_for("a100", "b105")  # shown while both sources are still open

    a, b = _two_tables(a_script, b_script)
    pw.io.register_input_synchronization_group(a.k, b.k, max_difference=10)
    _subscribe(seen, a, b)
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)

    assert checks["before b105"] == {"a1", "b1"}
    assert seen.time("a100") == seen.time("b105")


def test_a_lower_priority_source_reads_only_up_to_what_the_higher_one_has_read() -> None:
    # b (priority 0) sends 1, 2, 3, 7 and a (priority 1) 1, 2: b stops after 2; when a
    # reads 5, b reads 3 but not 7 (7 > 5), although 7 is within max_difference
    seen = Seen()
    checks: dict[str, set[str]] = {}

    def a_script(subject: Script) -> None:
        subject.send(1, "a1")
        subject.send(2, "a2")
        seen.wait_for("a2", "b2")
        time.sleep(SETTLE_S)
        checks["before a5"] = seen.now()
        subject.send(5, "a5")
        seen.wait_for("a5", "b3")
        time.sleep(SETTLE_S)
        checks["after a5"] = seen.now()

    def b_script(subject: Script) -> None:
        for k in (1, 2, 3, 7):
            subject.send(k, f"b{k}")
        seen.wait_for("b7")

    a, b = _two_tables(a_script, b_script)
    pw.io.register_input_synchronization_group(
        pw.io.SynchronizedColumn(a.k, priority=1), pw.io.SynchronizedColumn(b.k), max_difference=10,
    )
    _subscribe(seen, a, b)
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)

    assert checks["before a5"] == {"a1", "a2", "b1", "b2"}
    assert checks["after a5"] == {"a1", "a2", "a5", "b1", "b2", "b3"}
    assert seen.time("b3") >= seen.time("a5")
    assert seen.time("b7") > seen.time("b3")  # once a ended


def test_an_idle_source_stops_holding_the_others_back() -> None:
    # a sends 0 and goes quiet; b's 20 exceeds 0 + 10 and waits until a has been idle
    # for its idle_duration (1 s), though a is still open
    seen = Seen()
    sent: dict[str, float] = {}

    def a_script(subject: Script) -> None:
        subject.send(0, "a0")
        sent["a0"] = _now()
        seen.wait_for("b20")

    def b_script(subject: Script) -> None:
        subject.send(0, "b0")
        seen.wait_for("a0", "b0")
        subject.send(20, "b20")
        seen.wait_for("b20")

    a, b = _two_tables(a_script, b_script)
    pw.io.register_input_synchronization_group(
        pw.io.SynchronizedColumn(a.k, idle_duration=datetime.timedelta(seconds=1)), b.k, max_difference=10,
    )
    _subscribe(seen, a, b)
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)

    assert seen.rows["b20"][1] >= sent["a0"] + 1.0


def test_a_static_run_ends_with_every_row_read(tmp_path) -> None:
    # a's file is one transaction [1, 50]: 50 waits while b is open (bound 1 + 10), so
    # the file waits as a whole; b's [1, 2] passes; once b has ended, a's file follows
    # (Pathway keeps waiting for b here, forever)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "0.jsonl").write_text('{"k": 1, "v": "a1"}\n{"k": 50, "v": "a50"}\n')
    (tmp_path / "b" / "0.jsonl").write_text('{"k": 1, "v": "b1"}\n{"k": 2, "v": "b2"}\n')
    graph.clear()
    a = pw.io.jsonlines.read(tmp_path / "a", schema=Event, mode="static")
    b = pw.io.jsonlines.read(tmp_path / "b", schema=Event, mode="static")
    pw.io.register_input_synchronization_group(a.k, b.k, max_difference=10)
    seen = Seen()
    _subscribe(seen, a, b)
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)

    assert set(seen.rows) == {"a1", "a50", "b1", "b2"}
    assert seen.time("b1") == seen.time("b2") < seen.time("a1") == seen.time("a50")


def test_held_rows_survive_a_restart_and_a_replayed_step(tmp_path) -> None:
    """Run 1 holds a=20 and stops; run 2 fails while writing the step that lets it
    through (b=15 arrives); run 3 replays that step: a=20 and b=15, once."""
    config = pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state"))
    shown: list[list[str]] = []
    finished = threading.Event()

    def run(a_script, b_script, on_change) -> None:
        a, b = _two_tables(a_script, b_script)
        pw.io.register_input_synchronization_group(a.k, b.k, max_difference=10)
        pw.io.subscribe(a.promise_universes_are_disjoint(b).concat(b), on_change=on_change)
        shown.append([])
        try:
            pw.run(monitoring_level=pw.MonitoringLevel.NONE, persistence_config=config)
        finally:
            finished.set()  # the subjects of this run return
            finished.clear()

    seen = Seen()

    def record(key, row, time, is_addition) -> None:
        shown[-1].append(row["v"])
        seen.on_change(key, row, time, is_addition)

    def held_files() -> list:
        return list((tmp_path / "state").glob("**/synchronization/a/*.arrow"))

    def first_a(subject: Script) -> None:
        subject.send(1, "a1")
        seen.wait_for("a1", "b1")
        subject.send(20, "a20")
        deadline = _now() + WAIT_S
        while not held_files() and _now() < deadline:  # a step read a=20 and committed it, held
            time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGINT)  # a graceful stop
        finished.wait(WAIT_S)

    def first_b(subject: Script) -> None:
        subject.send(1, "b1")
        finished.wait(WAIT_S)

    run(first_a, first_b, record)
    assert sorted(shown[-1]) == ["a1", "b1"]
    assert len(held_files()) == 1

    def quiet(subject: Script) -> None:
        finished.wait(WAIT_S)

    def second_b(subject: Script) -> None:
        subject.send(15, "b15")
        finished.wait(WAIT_S)

    def refuse(key, row, time, is_addition) -> None:
        raise ValueError("the consumer is down")

    with pytest.raises(ValueError, match="consumer is down"):
        run(quiet, second_b, refuse)

    def ending(subject: Script) -> None:
        pass  # ends at once: the replayed step decides as the interrupted one did

    seen = Seen()
    run(ending, ending, record)
    assert sorted(shown[-1]) == ["a20", "b15"]
    assert seen.time("a20") == seen.time("b15")
    assert held_files() == []  # nothing is held any more


def test_arguments_are_checked_as_pathway_checks_them(tmp_path) -> None:
    class Row(pw.Schema):
        k: int = pw.column_definition(primary_key=True)
        m: int
        v: str
        dt_naive: pw.DateTimeNaive
        dt_utc: pw.DateTimeUtc

    def tables():
        graph.clear()
        return (pw.io.csv.read(tmp_path / "1.csv", schema=Row), pw.io.csv.read(tmp_path / "2.csv", schema=Row))

    register = pw.io.register_input_synchronization_group
    minutes = datetime.timedelta(minutes=10)
    t1, t2 = tables()
    with pytest.raises(ValueError, match="^Only unchanged columns of an input tables can be used in input"):
        register(t1.k, t2.select(k=pw.this.k + 1).k, max_difference=10)
    t1, t2 = tables()
    with pytest.raises(ValueError, match="^Only unchanged columns of an input tables"):
        register(t1.k, pw.debug.table_from_markdown("k\n1").k, max_difference=10)
    t1, t2 = tables()
    with pytest.raises(ValueError, match="^Only one column from a table can be used in a synchronization group$"):
        register(t1.k, t2.k, t1.m, max_difference=10)
    t1, t2 = tables()
    with pytest.raises(ValueError, match="^At least two columns must participate in a connector group$"):
        register(t1.k, max_difference=10)
    with pytest.raises(ValueError, match="^Fields of type <class 'str'> are not supported in connector groups$"):
        register(t1.v, t2.v, max_difference=10)
    with pytest.raises(ValueError, match=r"^Fields of type pathway.engine.Pointer\[int\] are not supported"):
        register(t1.id, t2.id, max_difference=10)
    with pytest.raises(ValueError, match=(
        r"^If max_difference is a Duration, the values of a column must either have a type of DateTimeUtc, "
        r"DateTimeNaive or Duration. However, the column '<table\d+>.k' has type '<class 'int'>'$"
    )):
        register(t1.k, t2.k, max_difference=minutes)
    with pytest.raises(ValueError, match=(
        r"^If max_difference is an integer value, the values of a column must have a type of int. However, the "
        r"column '<table\d+>.dt_naive' has type '<class 'pathway.internals.datetime_types.DateTimeNaive'>'$"
    )):
        register(t1.dt_naive, t2.dt_naive, max_difference=10)
    t1, t2 = tables()
    with pytest.raises(ValueError, match=(
        "^All synchronization group column types must coincide. "
        "However several types have been detected: 'DATE_TIME_NAIVE', 'DATE_TIME_UTC'$"
    )):
        register(t1.dt_naive, t2.dt_utc, max_difference=minutes)
    t1, t2 = tables()
    with pytest.raises(ValueError, match="^The 'max_difference' must either be an integer or a datetime.timedelta$"):
        register(t1.dt_naive, t2.dt_naive, max_difference="ten minutes")
    with pytest.raises(ValueError, match="^The 'max_difference' can't be negative$"):
        register(t1.k, t2.k, max_difference=datetime.timedelta(microseconds=-5))
    with pytest.raises(ValueError, match="^The 'max_difference' can't be negative$"):
        register(t1.k, t2.k, max_difference=-10)
    with pytest.raises(ValueError, match="^'idle_duration' must be non-negative, got -1$"):
        register(pw.io.SynchronizedColumn(t1.k, idle_duration=-1), t2.k, max_difference=10)
    with pytest.raises(TypeError, match="^'idle_duration' must be a number of seconds .int or float. or a "
                                        "datetime.timedelta, got str$"):
        register(pw.io.SynchronizedColumn(t1.k, idle_duration="1s"), t2.k, max_difference=10)
    with pytest.raises(OverflowError, match="^can't convert negative int to unsigned$"):
        register(pw.io.SynchronizedColumn(t1.k, priority=-1), t2.k, max_difference=10)
    t1, t2 = tables()
    register(t1.k, t2.k, max_difference=10)  # each table's source now has its group
    with pytest.raises(ValueError, match="^Only one column from a table"):
        register(t1.m, t2.m, max_difference=10, name="another")


def test_one_group_name_with_two_max_differences_is_refused(tmp_path) -> None:
    graph.clear()
    tables = [pw.io.jsonlines.read(tmp_path / str(i), schema=Event, mode="static") for i in range(4)]
    pw.io.register_input_synchronization_group(tables[0].k, tables[1].k, max_difference=10)
    pw.io.register_input_synchronization_group(tables[2].k, tables[3].k, max_difference=20)
    for table in tables:
        pw.io.subscribe(table, on_change=lambda **kwargs: None)
    with pytest.raises(ValueError, match="window length differs for two definitions of the same synchronization group"):
        pw.run(monitoring_level=pw.MonitoringLevel.NONE)


def _rows(*values: int) -> pa.Table:
    return pa.table({"_id": pa.array(range(len(values)), pa.int64()), "k": pa.array(values, pa.int64()),
                     "_diff": pa.array([1] * len(values), pa.int64())})


def _group(**priorities: int) -> Synchronizer:
    members = [_Member(name, "k", priority, None) for name, priority in priorities.items()]
    return Synchronizer([_Group("default", 10, members)])


def _shown(released: dict) -> dict[str, list[int]]:
    return {name: [] if t is None else t.column("k").to_pylist() for name, t in released.items()}


def test_a_transaction_is_let_through_whole_and_held_rows_are_stored_and_read_back(tmp_path) -> None:
    # a's transaction [1, 20] waits as a whole (20 > 1 + 10), though its 1 counts as read
    sync = _group(a=0, b=0)
    assert _shown(sync.step({"a": [_rows(1, 20)], "b": [_rows(1)]}, [], 0.0)) == {"a": [], "b": [1]}
    storage = BlobStorage(str(tmp_path))
    state = sync.save(storage, 1)
    restored = _group(a=0, b=0)
    schema = _rows().schema
    restored.restore(storage, state, {"a": schema, "b": schema})
    for group in (sync, restored):
        # b's 2 passes (bound 1 + 10); b's [15, 16]: b's reach is 15, a's 20, so 15
        # passes, then b's reach is 25: the bound 20 lets a's transaction and b's 16 through
        assert _shown(group.step({"a": [], "b": [_rows(2)]}, [], 1.0)) == {"a": [], "b": [2]}
        assert _shown(group.step({"a": [], "b": [_rows(15), _rows(16)]}, [], 2.0)) == {"a": [1, 20], "b": [15, 16]}
        assert group.holding == 0


def test_a_source_that_has_not_read_anything_holds_the_others_until_it_is_idle() -> None:
    sync = _group(a=0, b=0)
    assert _shown(sync.step({"a": [_rows(5)], "b": []}, [], 0.0)) == {"a": [], "b": []}
    assert not sync.would_release([])
    assert sync.would_release(["b"])  # b finished, or idle for its idle_duration
    assert _shown(sync.step({"a": [], "b": []}, ["b"], 1.0)) == {"a": [5], "b": []}


def test_rows_held_by_a_group_the_program_no_longer_has_are_let_through(tmp_path) -> None:
    sync = _group(a=0, b=0)
    sync.step({"a": [_rows(1, 20)], "b": [_rows(1)]}, [], 0.0)
    storage = BlobStorage(str(tmp_path))
    state = sync.save(storage, 1)
    without = Synchronizer([])
    without.restore(storage, state, {"a": _rows().schema, "b": _rows().schema})
    assert without.holds("a") and without.would_release([])
    assert _shown(without.step({"a": [_rows(30)]}, [], 1.0)) == {"a": [1, 20, 30]}
    assert not without.holds("a")
