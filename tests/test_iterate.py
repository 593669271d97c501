"""``pw.iterate``: fixpoints of a function of tables, static, streaming and persistent.

Expected values are worked out by hand from each function's definition.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tables import assert_changes, assert_rows

import sparkway as pw
from sparkway.api import graph

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
