"""``pw.iterate``: fixpoints of a function of tables, static, streaming and persistent.

Expected values are worked out by hand from each function's definition.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tables import assert_changes, assert_rows, changes, frame_rows, rows, sorted_rows

import sparkway as pw
from sparkway.api import graph
from sparkway.engine import iterate
from sparkway.plan import nodes as n

pytestmark = pytest.mark.usefixtures("spark")


def halve_even(t: pw.Table) -> pw.Table:
    return t.select(v=pw.if_else(t.v % 2 == 0, t.v // 2, t.v))


def test_iterate_runs_until_nothing_changes():
    t = pw.debug.table_from_markdown("v\n12\n7\n40\n1")
    assert_rows(pw.iterate(halve_even, t=t), [(1,), (3,), (5,), (7,)])


def test_the_result_keeps_the_rows_and_ids_of_the_argument():
    t = pw.debug.table_from_markdown(
        """
          | v  | w
        1 | 8  | a
        2 | 6  | b
        """
    )
    result = pw.iterate(lambda t: t.select(t.w, v=pw.if_else(t.v % 2 == 0, t.v // 2, t.v)), t=t)
    assert result.column_names() == ["v", "w"]  # the argument's order, not the function's
    # the same rows: the argument's columns can be read beside the result's
    assert_rows(result.select(result.v, t.w, old=t.v), [(1, "a", 8), (3, "b", 6)])


def test_iteration_limit_counts_rounds():
    t = pw.debug.table_from_markdown("foo\n0\n10")
    result = pw.iterate(lambda it: it.select(foo=it.foo + 1), iteration_limit=3, it=t)
    assert_rows(result, [(3,), (13,)])


@pytest.mark.parametrize("limit", [0, -2])
def test_iteration_limit_must_be_positive(limit):
    t = pw.debug.table_from_markdown("foo\n0")
    with pytest.raises(ValueError, match="iteration_limit"):
        pw.iterate(lambda it: it, iteration_limit=limit, it=t)


def test_rows_may_come_and_go_only_with_iterate_universe():
    t = pw.debug.table_from_markdown("x\n1\n2\n3\n4")

    def drop_largest_if_above_two(t: pw.Table) -> pw.Table:
        largest = t.reduce(x=pw.reducers.max(t.x))
        return t.filter((t.x != largest.ix_ref().x) | (t.x <= 2))

    with pytest.raises(ValueError, match="iterate_universe"):
        pw.iterate(drop_largest_if_above_two, t=t)
    assert_rows(pw.iterate(drop_largest_if_above_two, t=pw.iterate_universe(t)), [(1,), (2,)])


def test_the_result_must_have_the_argument_columns_and_types():
    t = pw.debug.table_from_markdown("v\n1")
    with pytest.raises(ValueError, match="does not correspond"):
        pw.iterate(lambda t: t.select(v=t.v / 2), t=t)


def test_the_function_reads_only_its_arguments():
    t = pw.debug.table_from_markdown("v\n1")
    outside = pw.debug.table_from_markdown("w\n2")
    with pytest.raises(pw.errors.PlanError, match="keyword argument"):
        pw.iterate(lambda t: t.select(v=t.v + outside.select(w=outside.w).reduce(s=pw.reducers.sum(pw.this.w)).ix_ref().s), t=t)


def test_several_tables_and_an_extra_argument_by_name():
    # pairs (node, label): each round every node takes the smallest label among itself
    # and the nodes it has an edge to (connected components by label propagation)
    edges = pw.debug.table_from_markdown(
        """
        a | b
        1 | 2
        2 | 3
        5 | 6
        """
    )
    both_ways = edges.concat_reindex(edges.select(a=edges.b, b=edges.a))
    labels = pw.debug.table_from_markdown("node\n1\n2\n3\n5\n6").with_id_from(pw.this.node)
    labels = labels.select(labels.node, label=labels.node)

    def propagate(labels: pw.Table, edges: pw.Table) -> dict[str, pw.Table]:
        offers = edges.select(node=edges.a, offer=labels.ix(labels.pointer_from(edges.b)).label)
        best = offers.groupby(offers.node).reduce(offers.node, offer=pw.reducers.min(offers.offer))
        with_best = labels.select(labels.node, offer=best.ix(best.pointer_from(labels.node), optional=True).offer)
        smaller = pw.if_else(  # an offer may be None: compared where it is not, as Pathway's types ask
            with_best.offer.is_none(), labels.label, pw.if_else(with_best.offer < labels.label, with_best.offer, labels.label)
        )
        return {"labels": labels.select(labels.node, label=pw.unwrap(pw.coalesce(smaller, labels.label)))}

    result = pw.iterate(propagate, labels=labels, edges=both_ways)
    assert isinstance(result, dict) and list(result) == ["labels"]
    assert_rows(result["labels"], [(1, 1), (2, 1), (3, 1), (5, 5), (6, 5)])


def test_changes_of_the_input_update_the_fixpoint():
    t = pw.debug.table_from_markdown(
        """
          | v  | __time__ | __diff__
        1 | 12 | 2        | 1
        2 | 7  | 2        | 1
        3 | 40 | 4        | 1
        1 | 12 | 6        | -1
        1 | 24 | 6        | 1
        2 | 7  | 8        | -1
        """
    )
    assert_changes(pw.iterate(halve_even, t=t), [
        [(3, 1), (7, 1)],
        [(5, 1)],
        [],  # 24 halves to 3 as 12 did
        [(7, -1)],
    ])


def test_a_restarted_program_outputs_only_what_changed(tmp_path: Path):
    (tmp_path / "in").mkdir()

    class Numbers(pw.Schema):
        v: int

    def run() -> list[tuple[int, int]]:
        graph.clear()
        t = pw.io.csv.read(tmp_path / "in", schema=Numbers, mode="static", name="numbers")
        pw.io.jsonlines.write(pw.iterate(halve_even, t=t), tmp_path / "out.jsonl")
        pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state")))
        lines = (tmp_path / "out.jsonl").read_text().splitlines()
        return sorted((r["v"], r["diff"]) for r in map(json.loads, lines))

    (tmp_path / "in" / "a.csv").write_text("v\n12\n40\n")
    assert run() == [(3, 1), (5, 1)]
    (tmp_path / "in" / "b.csv").write_text("v\n9\n")
    assert run() == [(9, 1)]


# Row-wise bodies (selects and filters reading each row alone) run several rounds per
# Spark job (engine/iterate.py: row_wise, _row_wise_rounds); these tests compare them with
# one round per job, the way every other body runs.


def collatz(numbers: pw.Table) -> pw.Table:
    n = numbers.n
    return numbers.select(
        numbers.start,
        n=pw.if_else(n == 1, 1, pw.if_else(n % 2 == 0, n // 2, 3 * n + 1)),
        steps=pw.if_else(n == 1, numbers.steps, numbers.steps + 1),
    )


#: the Collatz steps of 2..11 (19 for 9: the fixpoint of ``collatz`` takes 20 rounds)
COLLATZ_STEPS = {2: 1, 3: 7, 4: 2, 5: 5, 6: 8, 7: 16, 8: 3, 9: 19, 10: 6, 11: 14}


def collatz_numbers(last: int = 11) -> pw.Table:
    schema = pw.schema_from_types(start=int, n=int, steps=int)
    return pw.debug.table_from_rows(schema, [(k, k, 0) for k in range(2, last + 1)])


def count_down(t: pw.Table) -> pw.Table:
    return t.select(v=pw.if_else(t.v > 0, t.v - 1, t.v))


def count_down_from(*starts: int) -> pw.Table:
    return pw.debug.table_from_rows(pw.schema_from_types(v=int), [(v,) for v in starts])


def climb_dropping_multiples_of_five(t: pw.Table) -> pw.Table:
    kept = t.filter(t.v % 5 != 0)
    return kept.select(v=pw.if_else(kept.v < 30, kept.v + 3, kept.v))


def both_ways(monkeypatch: pytest.MonkeyPatch, build, read=rows):
    """What ``read`` gives of the table ``build()`` makes, with several rounds per job (which
    must be taken) and with one round per job: the two must be equal."""
    taken = []
    several_per_job = iterate._row_wise_rounds
    monkeypatch.setattr(iterate, "_row_wise_rounds", lambda *args: taken.append(1) or several_per_job(*args))
    several = read(build())
    assert taken, "the rounds did not run several per job"
    monkeypatch.setattr(iterate, "row_wise", lambda node: False)
    assert read(build()) == several
    return several


def iterate_node(result: pw.Table) -> n.Iterate:
    return result._node.input


def test_collatz_runs_several_rounds_per_job(monkeypatch):
    result = both_ways(monkeypatch, lambda: pw.iterate(collatz, numbers=collatz_numbers()))
    assert {start: steps for start, n, steps in result} == COLLATZ_STEPS
    assert {n for _, n, _ in result} == {1}


@pytest.mark.parametrize("limit", [1, 7, 8, 9, 17, 40])
def test_iteration_limit_is_kept_exactly_with_several_rounds_per_job(monkeypatch, limit):
    # rows reach their fixpoint at rounds 0, 3, 8, 9, 16 and 18 (8 rounds run per job)
    starts = (0, 3, 8, 9, 16, 18)
    result = both_ways(monkeypatch, lambda: pw.iterate(count_down, iteration_limit=limit, t=count_down_from(*starts)))
    assert result == sorted_rows([(max(v - limit, 0),) for v in starts])


@pytest.mark.parametrize("limit", [None, 1, 3, 8, 9])
def test_a_filter_drops_rows_for_good_with_several_rounds_per_job(monkeypatch, limit):
    def build():
        t = count_down_from(1, 2, 3, 4, 6, 7, 11, 12, 21, 23, 26, 28, 29)
        return pw.iterate(climb_dropping_multiples_of_five, iteration_limit=limit, t=pw.iterate_universe(t))

    result = both_ways(monkeypatch, build)
    if limit is None:  # a row meets a multiple of five (and is dropped) unless it climbs to 30 first
        assert result == sorted_rows([(31,), (32,), (32,), (32,)])


def test_several_iterated_tables_each_several_rounds_per_job(monkeypatch):
    def build():
        def step(numbers: pw.Table, down: pw.Table, fixed: pw.Table) -> dict[str, pw.Table]:
            return {"down": count_down(down), "numbers": collatz(numbers)}

        result = pw.iterate(step, iteration_limit=10, numbers=collatz_numbers(7),
                            down=count_down_from(3, 12), fixed=count_down_from(5))
        return result["numbers"].select(result["numbers"].start, result["numbers"].steps), result["down"]

    assert both_ways(monkeypatch, build, lambda tables: [rows(t) for t in tables]) == [
        [(2, 1), (3, 7), (4, 2), (5, 5), (6, 8), (7, 10)],
        [(0,), (2,)],
    ]


@pytest.mark.parametrize("limit", [5, 8])
def test_a_cycle_stops_at_the_limit_with_several_rounds_per_job(monkeypatch, limit):
    # every round changes every row: the limit alone stops it
    result = both_ways(monkeypatch, lambda: pw.iterate(
        lambda t: t.select(v=1 - t.v), iteration_limit=limit, t=count_down_from(0, 1)))
    assert result == [(0,), (1,)]


def test_a_deterministic_python_function_runs_several_rounds_per_job(monkeypatch):
    @pw.udf(deterministic=True)
    def halve(v: int) -> int:
        return v // 2 if v % 2 == 0 else v

    result = both_ways(monkeypatch, lambda: pw.iterate(lambda t: t.select(v=halve(t.v)), t=count_down_from(48, 7, 40)))
    assert result == [(3,), (5,), (7,)]


def test_error_values_with_several_rounds_per_job(monkeypatch):
    def build():
        t = count_down_from(12, 7, 0)
        return pw.iterate(lambda t: t.select(v=pw.if_else(t.v > 5, t.v - 1, t.v) + 0 * (10 // (t.v - 3))), t=t)

    assert both_ways(monkeypatch, build, lambda t: rows(t.select(v=pw.fill_error(t.v, -1)))) == [(0,), (5,), (5,)]


def test_rows_with_error_values_removed_with_several_rounds_per_job(monkeypatch):
    # remove_errors is a filter reading every column's Error flag: Spark's optimizer, pushing
    # it down through the selects of the rounds before, made it exponentially large
    def body(t: pw.Table) -> pw.Table:
        return t.select(v=pw.if_else(t.v > 1, t.v - 1, t.v) + 0 * (10 // (t.v - 3))).remove_errors()

    def read(t: pw.Table) -> list[tuple]:
        return sorted_rows(frame_rows(pw.debug.table_to_pandas(t, terminate_on_error=False)).values())

    # 12, 7 and 5 come down to 3, where the division fails
    t = count_down_from(12, 7, 2, 5)
    assert both_ways(monkeypatch, lambda: pw.iterate(body, t=pw.iterate_universe(t)), read) == [(1,)]


def test_python_functions_failing_with_several_rounds_per_job(monkeypatch):
    # kept Error values: the select's Python function runs once for its values and its
    # errors (a persisted frame), in every round
    @pw.udf(deterministic=True)
    def down(v: int) -> int:
        if v == 3:
            raise ValueError("three")
        return v - 1 if v > 0 else v

    def read(t: pw.Table) -> list[tuple]:
        return sorted_rows(frame_rows(pw.debug.table_to_pandas(t, terminate_on_error=False)).values())

    both_ways(monkeypatch, lambda: pw.iterate(lambda t: t.select(v=down(t.v)), t=count_down_from(5, 2, 12)), read)


def compiled_nodes(monkeypatch: pytest.MonkeyPatch) -> list[n.Node]:
    """The nodes that the rounds of pw.iterate compile from now on."""
    compiled, compile_node = [], iterate.compile_node
    monkeypatch.setattr(iterate, "compile_node", lambda node, *args: compiled.append(node) or compile_node(node, *args))
    return compiled


def test_a_row_wise_body_is_compiled_once_and_then_replayed(monkeypatch):
    compiled = compiled_nodes(monkeypatch)
    result = pw.iterate(collatz, numbers=collatz_numbers())
    assert rows(result.select(result.start, result.steps)) == sorted_rows(list(COLLATZ_STEPS.items()))
    assert len(compiled) == len(iterate_node(result).body)  # in the first of 24 rounds


def test_a_body_whose_compilation_cannot_be_replayed_is_compiled_every_round(monkeypatch):
    monkeypatch.setattr(iterate, "_REPLAYABLE", frozenset())  # as if the compilers did something new
    compiled = compiled_nodes(monkeypatch)
    result = pw.iterate(collatz, numbers=collatz_numbers(7))
    assert rows(result.select(result.start, result.steps)) == sorted_rows([(k, COLLATZ_STEPS[k]) for k in range(2, 8)])
    # 3 jobs of 8 rounds (7 takes 16 steps), each round compiling 3 nodes, after the
    # recording that failed
    assert 24 * 3 < len(compiled) < 25 * 3


def test_changes_of_the_input_update_a_fixpoint_of_several_rounds_per_job(monkeypatch):
    def build():
        t = pw.debug.table_from_markdown(
            """
              | v  | __time__ | __diff__
            1 | 8  | 2        | 1
            2 | 3  | 2        | 1
            3 | 10 | 4        | 1
            1 | 8  | 6        | -1
            1 | 9  | 6        | 1
            2 | 3  | 8        | -1
            """
        )
        return pw.iterate(count_down, iteration_limit=6, t=t)

    assert both_ways(monkeypatch, build, changes) == [
        [(0, 1), (2, 1)],
        [(4, 1)],
        [(2, -1), (3, 1)],
        [(0, -1)],
    ]


def test_row_wise_bodies():
    t = count_down_from(1)
    assert iterate.row_wise(iterate_node(pw.iterate(count_down, t=t)))
    assert iterate.row_wise(iterate_node(pw.iterate(climb_dropping_multiples_of_five, t=pw.iterate_universe(t))))
    # a groupby, a function whose result may change, results swapping their inputs
    smallest = pw.iterate(lambda t: t.select(v=t.v - t.reduce(m=pw.reducers.min(t.v)).ix_ref().m), t=t)
    assert not iterate.row_wise(iterate_node(smallest))
    changing = pw.iterate(lambda t: t.select(v=pw.apply_with_type(lambda v: v, int, t.v)), t=t)
    assert not iterate.row_wise(iterate_node(changing))
    swapped = pw.iterate(lambda a, b: (b.select(v=b.v), a.select(v=a.v)), a=t, b=count_down_from(2))
    assert not iterate.row_wise(iterate_node(swapped[0]))


def test_several_rounds_run_in_one_spark_job(monkeypatch, spark):
    # 31 rounds (30 down to 0, and one that changes nothing): one round per job ran 99 jobs,
    # 8 rounds per job 12
    tracker = spark.sparkContext.statusTracker()
    jobs, rounds = [], iterate._rounds

    def counted(*args):
        before = set(tracker.getJobIdsForGroup(None))
        try:
            return rounds(*args)
        finally:
            jobs.extend(set(tracker.getJobIdsForGroup(None)) - before)

    monkeypatch.setattr(iterate, "_rounds", counted)
    assert rows(pw.iterate(count_down, t=count_down_from(30, 7))) == [(0,), (0,)]
    assert 0 < len(jobs) < 31
