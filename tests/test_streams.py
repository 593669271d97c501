"""Streams of changes as tables: ``to_stream``, ``stream_to_table``, ``from_streams``,
``unpack_snapshots``, and forgetting that can be undone (``forget(...,
mark_forgetting_records=True)`` with ``filter_out_results_of_forgetting``).

Expected changes were recorded by running the same programs with Pathway 0.33 (the
oracle), unless a test says how they are worked out.  ``changes`` gives one list per
output time: one per step of the input (times 2, 4, 6...), and with a marked forget one
more after each of them (Pathway's odd times), in which the forgetting happens.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tables import assert_changes, assert_rows, changes, sorted_rows

import sparkway as pw
from sparkway.api import graph


def _updated() -> pw.Table:
    # key 3 is updated at 4, back at 8 and again at 10; key 5 is deleted at 6
    return pw.debug.table_from_markdown(
        """
        a | b | __time__ | __diff__
        1 | 2 |    2     |    1
        3 | 4 |    2     |    1
        5 | 6 |    4     |    1
        3 | 4 |    4     |   -1
        3 | 8 |    4     |    1
        5 | 6 |    6     |   -1
        3 | 8 |    8     |   -1
        3 | 4 |    8     |    1
        3 | 4 |   10     |   -1
        3 | 8 |   10     |    1
        """,
        id_from=["a"],
    )


def test_to_stream_gives_a_row_per_change_under_the_row_id() -> None:
    t = _updated()
    stream = t.to_stream()
    assert stream.is_append_only and stream.column_names() == ["a", "b", "is_upsert"]
    assert_changes(stream, [
        [(1, 2, True, 1), (3, 4, True, 1)], [(3, 8, True, 1), (5, 6, True, 1)], [(5, 6, False, 1)],
        [(3, 4, True, 1)], [(3, 8, True, 1)],
    ])
    # the rows keep the ids of the rows they describe (t's ids come from a)
    same = stream.select(same=pw.this.id == stream.pointer_from(pw.this.a))
    assert [row for batch in changes(same) for row in batch] == [(True, 1)] * 7


def test_operators_after_to_stream_see_every_change_even_with_the_same_id_and_values() -> None:
    stream = _updated().to_stream()
    counted = stream.groupby(stream.a).reduce(stream.a, n=pw.reducers.count(), b=pw.reducers.sum(stream.b))
    assert_changes(counted, [
        [(1, 1, 2, 1), (3, 1, 4, 1)],
        [(3, 1, 4, -1), (3, 2, 12, 1), (5, 1, 6, 1)],
        [(5, 1, 6, -1), (5, 2, 12, 1)],  # the deletion of 5 is a second row (5, 6)
        [(3, 2, 12, -1), (3, 3, 16, 1)],  # (3, 4) a second time
        [(3, 3, 16, -1), (3, 4, 24, 1)],
    ])


def test_stream_to_table_turns_the_stream_back_into_the_table() -> None:
    t = _updated()
    back = t.to_stream().stream_to_table(pw.this.is_upsert).without(pw.this.is_upsert)
    assert changes(back) == changes(t)
    assert sorted(pw.debug.table_to_pandas(back).index) == sorted(pw.debug.table_to_pandas(t).index)


def test_stream_to_table_takes_only_the_id_of_a_deletion() -> None:
    stream = pw.debug.table_from_markdown(
        """
        a | b | is_upsert | __time__
        1 | 2 |   True    |    2
        3 | 4 |   True    |    2
        5 | 6 |   True    |    4
        3 | 8 |   True    |    4
        5 | 6 |  False    |    6
        1 | 3 |  False    |    8
        7 | 1 |  False    |    8
        """,
        id_from=["a"],
    )
    with pytest.raises(TypeError, match="Expected 'is_upsert' to be of type 'bool'"):
        stream.stream_to_table(pw.this.b)
    assert_changes(stream.stream_to_table(pw.this.is_upsert).without(pw.this.is_upsert), [
        [(1, 2, 1), (3, 4, 1)], [(3, 4, -1), (3, 8, 1), (5, 6, 1)], [(5, 6, -1)], [(1, 2, -1)],
    ])


def test_from_streams_reads_upserts_and_deletions_of_two_streams() -> None:
    upserts = pw.debug.table_from_markdown(
        "a | b | __time__\n1 | 2 | 2\n3 | 4 | 2\n5 | 6 | 4\n3 | 8 | 4", id_from=["a"]
    )
    deletions = pw.debug.table_from_markdown("a | __time__\n4 | 2\n5 | 6\n1 | 8", id_from=["a"])
    assert_changes(pw.Table.from_streams(upserts, deletions), [
        [(1, 2, 1), (3, 4, 1)], [(3, 4, -1), (3, 8, 1), (5, 6, 1)], [(5, 6, -1)], [(1, 2, -1)],
    ])


def test_unpack_snapshots_gives_the_whole_table_at_each_time_it_changes() -> None:
    snapshots = _updated().unpack_snapshots()
    assert snapshots.is_append_only
    assert_changes(snapshots, [
        [(1, 2, 1), (3, 4, 1)],
        [(1, 2, 1), (3, 8, 1), (5, 6, 1)],
        [(1, 2, 1), (3, 8, 1)],
        [(1, 2, 1), (3, 4, 1)],
        [(1, 2, 1), (3, 8, 1)],
    ])
    ids = [i for batch in pw.debug.compute(snapshots) for i in batch.ids.to_pylist()]
    assert len(set(ids)) == len(ids)  # a row of a snapshot is new


def _events() -> pw.Table:
    return pw.debug.table_from_markdown(
        """
        a |  t | __time__
        1 |  2 |     2
        1 |  3 |     2
        2 |  4 |     2
        2 |  8 |     4
        1 |  5 |     6
        3 |  1 |     6
        2 |  5 |     8
        1 | 15 |     8
        1 |  7 |    10
        """
    )


def test_marked_forget_lets_every_row_in_and_forgets_in_a_step_of_its_own() -> None:
    # after each step, the rows whose t + 2 the time before the step reached are retracted
    assert_changes(_events().forget(pw.this.t, 2, mark_forgetting_records=True), [
        [(1, 2, 1), (1, 3, 1), (2, 4, 1)], [],
        [(2, 8, 1)], [(1, 2, -1)],
        [(1, 5, 1), (3, 1, 1)], [(1, 3, -1), (1, 5, -1), (2, 4, -1), (3, 1, -1)],
        [(1, 15, 1), (2, 5, 1)], [(2, 5, -1)],
        [(1, 7, 1)], [(1, 7, -1), (2, 8, -1)],
    ])


def _sums(consistent: bool) -> pw.Table:
    forgetting = _events().forget(pw.this.t, 2, mark_forgetting_records=True)
    sums = forgetting.groupby(pw.this.a).reduce(pw.this.a, sum=pw.reducers.sum(pw.this.a))
    return sums.filter_out_results_of_forgetting(ensure_consistency=consistent)


def test_filter_out_results_of_forgetting_drops_what_forgetting_changed() -> None:
    assert_changes(_sums(False), [
        [(1, 2, 1), (2, 2, 1)], [], [(2, 2, -1), (2, 4, 1)], [],
        [(1, 1, -1), (1, 2, 1), (3, 3, 1)], [], [(1, 1, 1), (2, 2, -1), (2, 4, 1)], [], [(1, 1, -1), (1, 2, 1)], [],
    ])
    t = _events()
    assert changes(t.forget(pw.this.t, 2, mark_forgetting_records=True).filter_out_results_of_forgetting()) == [
        batch for batch in changes(t) for batch in (batch, [])
    ]


def test_filter_out_results_of_forgetting_with_consistency_keeps_each_id_consistent() -> None:
    # a retraction of a row not shown is dropped; an insertion retracts the row shown first
    assert_changes(_sums(True), [
        [(1, 2, 1), (2, 2, 1)], [], [(2, 2, -1), (2, 4, 1)], [], [(3, 3, 1)], [], [(1, 2, -1), (1, 1, 1)], [],
        [(1, 1, -1), (1, 2, 1)], [],
    ])
    assert_rows(_sums(True), [(1, 2), (2, 4), (3, 3)])


def test_asof_join_behavior_cutoff_and_delay() -> None:
    queries = pw.debug.table_from_markdown(
        "a | t | __time__\n1 | 2 | 2\n2 | 3 | 2\n3 | 3 | 4\n4 | 5 | 4\n6 | 2 | 6\n7 | 6 | 8"
    )
    data = pw.debug.table_from_markdown("b | t | __time__\n1 | 1 | 4\n2 | 4 | 6\n3 | 2 | 8")

    def joined(behavior: object) -> pw.Table:
        return queries.asof_join_left(data, pw.left.t, pw.right.t, behavior=behavior).select(
            pw.left.a, b=pw.right.b
        )

    # late rows are ignored (a=6, b=3); without keep_results rows older than the cutoff
    # are forgotten at 8, with their results
    forgetting = joined(pw.temporal.common_behavior(cutoff=2, keep_results=False))
    assert [batch for batch in changes(forgetting) if batch] == [sorted_rows(batch) for batch in [
        [(1, None, 1), (2, None, 1)],
        [(1, None, -1), (1, 1, 1), (2, None, -1), (2, 1, 1), (3, 1, 1), (4, 1, 1)],
        [(4, 1, -1), (4, 2, 1)],
        [(1, 1, -1), (2, 1, -1), (3, 1, -1), (7, 2, 1)],
    ]]
    # with keep_results (the default) the forgetting's retractions are filtered out
    kept = joined(pw.temporal.common_behavior(cutoff=2))
    assert_rows(kept, [(1, 1), (2, 1), (3, 1), (4, 2), (7, 2)])
    # a delay holds rows until the time of their table passes their time + 2
    delayed = joined(pw.temporal.common_behavior(delay=2))
    assert [batch for batch in changes(delayed) if batch][-1] == sorted_rows([(4, 2, 1), (7, 2, 1)])  # when the input ends


# -- persistence: a restart continues with the operators' state ---------------------------


class Event(pw.Schema):
    k: int
    v: str
    up: bool


def _run(work: Path, program: callable) -> list[tuple]:
    """Runs ``program(events)`` over the CSV files in ``work/in`` (persistent), returns
    the changes it wrote in this run as sorted (columns..., diff)."""
    graph.clear()
    events = pw.io.csv.read(work / "in", schema=Event, mode="static", name="events")
    result = program(events)
    out = work / "out.jsonl"
    pw.io.jsonlines.write(result, out)
    pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(work / "state")))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return sorted(tuple(r[c] for c in result.column_names()) + (r["diff"],) for r in rows)


def test_stream_to_table_and_snapshots_continue_after_a_restart(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("k,v,up\n1,a,true\n2,b,true\n")

    def table(events: pw.Table) -> pw.Table:
        return events.with_id_from(pw.this.k).stream_to_table(pw.this.up).without(pw.this.up)

    assert _run(tmp_path, table) == [(1, "a", 1), (2, "b", 1)]
    (tmp_path / "in" / "b.csv").write_text("k,v,up\n1,c,true\n2,x,false\n")
    assert _run(tmp_path, table) == [(1, "a", -1), (1, "c", 1), (2, "b", -1)]

    def snapshots(events: pw.Table) -> pw.Table:
        return table(events).unpack_snapshots()

    work = tmp_path / "snapshots"
    (work / "in").mkdir(parents=True)
    (work / "in" / "a.csv").write_text("k,v,up\n1,a,true\n2,b,true\n")
    assert _run(work, snapshots) == [(1, "a", 1), (2, "b", 1)]
    (work / "in" / "b.csv").write_text("k,v,up\n3,c,true\n2,x,false\n")
    assert _run(work, snapshots) == [(1, "a", 1), (3, "c", 1)]


def test_marked_forgetting_continues_after_a_restart(tmp_path: Path) -> None:
    class Timed(pw.Schema):
        t: int

    def run() -> list[dict]:
        graph.clear()
        events = pw.io.csv.read(tmp_path / "in", schema=Timed, mode="static", name="events")
        forgetting = events.forget(pw.this.t, 1, mark_forgetting_records=True)
        pw.io.jsonlines.write(forgetting, tmp_path / "all.jsonl")
        pw.io.jsonlines.write(forgetting.filter_out_results_of_forgetting(), tmp_path / "kept.jsonl")
        pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state")))
        return [[json.loads(line) for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
                for name in ("all", "kept")]

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("t\n1\n2\n")
    every, kept = run()
    assert sorted((r["t"], r["diff"]) for r in every) == [(1, 1), (2, 1)]
    (tmp_path / "in" / "b.csv").write_text("t\n10\n")
    every, kept = run()
    # the time before this run's step is 2: t=1 (1 + 1 <= 2) is forgotten right after it
    assert [(r["t"], r["diff"]) for r in every] == [(10, 1), (1, -1)]
    assert every[1]["time"] > every[0]["time"]
    assert [(r["t"], r["diff"]) for r in kept] == [(10, 1)]
