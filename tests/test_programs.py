"""Step programs (``engine.programs``): the plan of a small step is built once and run
again by later steps of the same shape, with the same changes as plans built anew."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import sparkway as pw
from sparkway.api import graph
from sparkway.engine import runner
from sparkway.engine.programs import Collection
from sparkway.stdlib.time_utils import _processed_at

pytestmark = pytest.mark.usefixtures("spark")


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One element per step plan the runner builds."""
    made: list[int] = []

    def counted(frames, consolidated=False):
        made.append(1)
        return Collection(frames, consolidated)

    monkeypatch.setattr(runner, "Collection", counted)
    return made


def _changes(table: pw.Table) -> list[tuple]:
    """Every change of ``table``: (time, values, +1 or -1), sorted."""
    seen: list[tuple] = []
    pw.io.subscribe(table, lambda key, row, time, is_addition: seen.append(
        (time, tuple(sorted(row.items())), 1 if is_addition else -1)))
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)
    return sorted(seen)


def _latest(changes: list[tuple], key: str) -> dict:
    """The last row inserted under each value of ``key``, by time."""
    return {dict(row)[key]: dict(row) for _, row, diff in changes if diff > 0}


def _sums_and_sessions() -> tuple[pw.Table, pw.Table]:
    graph.clear()
    visits = pw.debug.table_from_markdown("""
        user | at | __time__
        ann  | 1  | 2
        bob  | 2  | 4
        ann  | 3  | 6
        bob  | 9  | 8
        ann  | 4  | 10
    """)
    totals = visits.groupby(visits.user).reduce(visits.user, total=pw.reducers.sum(visits.at))
    sessions = visits.windowby(visits.at, window=pw.temporal.session(max_gap=2), instance=visits.user).reduce(
        user=pw.this._pw_instance, start=pw.this._pw_window_start, visits=pw.reducers.count())
    return totals, sessions


def test_steps_of_one_shape_run_the_plan_the_first_step_built(builds: list[int], monkeypatch) -> None:
    totals, sessions = _sums_and_sessions()
    kept = _changes(totals), _changes(sessions)
    assert len(builds) == 2, f"{len(builds)} plans built for two runs of five steps of one shape"
    monkeypatch.setattr(runner, "can_keep", lambda spark: False)
    builds.clear()
    totals, sessions = _sums_and_sessions()
    built = _changes(totals), _changes(sessions)
    assert len(builds) == 10
    assert kept == built
    assert [c for c in kept[0] if c[0] == 10] == [
        (10, (("total", 4), ("user", "ann")), -1), (10, (("total", 8), ("user", "ann")), 1)]
    # ann's visit at 4 joins her session of 3 (gap 1) at time 10
    assert ((10, (("start", 3), ("user", "ann"), ("visits", 2)), 1)) in kept[1]


def test_the_last_input_step_does_not_ask_spark_whether_its_plan_could_run_again(monkeypatch, tmp_path) -> None:
    """A static program of one step (debug rows, then a folder of files) ends with it:
    no step would run its plan again, and asking costs Spark a physical plan."""
    asked: list[int] = []
    ask = Collection.exchanges_nothing
    monkeypatch.setattr(Collection, "exchanges_nothing", lambda self: asked.append(1) or ask(self))
    totals, _ = _sums_and_sessions()
    _changes(totals)
    assert len(asked) == 1  # after the first of five steps, not after the last
    graph.clear()
    (tmp_path / "a.csv").write_text("word\nx\ny\n")
    (tmp_path / "b.csv").write_text("word\nx\n")
    words = pw.io.csv.read(tmp_path, schema=pw.schema_from_types(word=str), mode="static")
    counts = _changes(words.groupby(words.word).reduce(words.word, n=pw.reducers.count()))
    assert len(asked) == 1 and _latest(counts, "word") == {"x": {"word": "x", "n": 2}, "y": {"word": "y", "n": 1}}


def _late_and_early_windows() -> pw.Table:
    """Sliding windows whose behavior holds rows back (``delay``: a buffer gate) and
    drops late ones (``cutoff``: a forget gate), over a stream of one row per time."""
    graph.clear()
    rows = pw.debug.table_from_markdown("""
        t  | v | __time__
        1  | 1 | 2
        4  | 2 | 4
        2  | 3 | 6
        9  | 4 | 8
        3  | 5 | 10
        12 | 6 | 12
        5  | 7 | 14
        13 | 8 | 16
    """)
    return rows.windowby(
        rows.t, window=pw.temporal.sliding(duration=4, hop=2),
        behavior=pw.temporal.common_behavior(delay=1, cutoff=3, keep_results=True),
    ).reduce(pw.this._pw_window_end, top=pw.reducers.max(pw.this.v), rows=pw.reducers.count())


def _kept_and_built(program: Callable[[], pw.Table], builds: list[int], monkeypatch) -> tuple[list, int]:
    """The changes of ``program``'s output with plans kept, which must equal those with a
    plan built at every step, and how many more plans the latter built."""
    kept = _changes(program())
    kept_builds = len(builds)
    monkeypatch.setattr(runner, "can_keep", lambda spark: False)
    builds.clear()
    assert _changes(program()) == kept
    return kept, len(builds) - kept_builds


def test_time_gates_run_the_plan_the_first_step_built(builds: list[int], monkeypatch) -> None:
    kept, saved = _kept_and_built(_late_and_early_windows, builds, monkeypatch)
    assert len(builds) == 9 and saved > 0, f"{saved} of {len(builds)} plans not built again"
    assert set(_latest(kept, "_pw_window_end")) >= {4, 6, 14}


def _merged_rows() -> pw.Table:
    """A keyed merge: rows replaced by the ones of another table with their id
    (``update_rows``)."""
    graph.clear()
    base = pw.debug.table_from_markdown("""
        k | v  | __time__
        a | 1  | 2
        b | 2  | 2
        c | 3  | 4
    """, id_from=["k"])
    newer = pw.debug.table_from_markdown("""
        k | v  | __time__
        a | 10 | 4
        b | 20 | 6
        d | 40 | 8
        c | 30 | 10
    """, id_from=["k"])
    merged = base.update_rows(newer)
    return merged.select(merged.k, merged.v, again=merged.v * 2)


def test_keyed_merges_run_the_plan_the_first_step_built(builds: list[int], monkeypatch) -> None:
    kept, saved = _kept_and_built(_merged_rows, builds, monkeypatch)
    assert saved > 0, f"all {len(builds)} plans built again"
    assert {k: (row["v"], row["again"]) for k, row in _latest(kept, "k").items()} == {
        "a": (10, 20), "b": (20, 40), "c": (30, 60), "d": (40, 80)}


def test_each_shape_of_input_has_a_plan_of_its_own(builds: list[int]) -> None:
    graph.clear()
    left = pw.debug.table_from_markdown("""
        k | v | __time__
        a | 1 | 2
        a | 2 | 6
        b | 3 | 8
    """)
    right = pw.debug.table_from_markdown("""
        k | v | __time__
        b | 4 | 4
        a | 5 | 8
    """)
    both = left.concat_reindex(right)
    sums = both.groupby(both.k).reduce(both.k, s=pw.reducers.sum(both.v))
    changes = _changes(sums)
    assert len(builds) == 3, "the steps read: the left table, the right one, both"
    assert {k: row["s"] for k, row in _latest(changes, "k").items()} == {"a": 8, "b": 7}


def test_a_plan_that_holds_its_step_s_time_is_built_at_every_step(builds: list[int]) -> None:
    graph.clear()
    rows = pw.debug.table_from_markdown("""
        v | __time__
        1 | 2
        2 | 4
        3 | 6
    """)
    stamped = rows.select(rows.v, at=_processed_at())
    changes = _changes(stamped)
    assert len(builds) == 3
    assert len({dict(row)["at"] for _, row, _ in changes}) == 3, "each step's own time"


def test_a_plan_with_a_shuffle_is_not_run_again(spark) -> None:
    """Spark keeps a shuffle's output with its plan: a second run would read the first's."""
    plain = spark.range(4).selectExpr("id as _id", "1L as _diff")
    shuffled = spark.range(4).repartition(2).selectExpr("id as _id", "1L as _diff")
    assert Collection([plain]).exchanges_nothing()
    assert not Collection([shuffled]).exchanges_nothing()
