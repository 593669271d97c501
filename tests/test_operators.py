"""Table operators, reducers, windows and the debug helpers against expected tables.

Inputs come from ``pw.debug.table_from_markdown``; results are compared with rows worked
out by hand, as sorted row tuples (ids ignored) or, where ids matter, against the ids of
other tables.  Incremental behaviour is checked on update streams with ``pw.debug.compute``:
one output batch per input time.
"""

from __future__ import annotations

import datetime as dt
import re

import pandas as pd
import pytest
from tables import assert_changes, assert_rows, frame_rows, ids_of, rows, sorted_rows

import sparkway as pw
from sparkway.api import graph

pytestmark = pytest.mark.usefixtures("spark")


# -- stateless operators ---------------------------------------------------------------------

ABC = """
      | a | b | c
    1 | 1 | x | 10
    2 | 2 | y | 20
    3 | 3 | z | 30
    """


def test_filter_with_columns_without_rename():
    t = pw.debug.table_from_markdown(ABC)
    result = (
        t.filter(pw.this.a >= 2)
        .with_columns(d=pw.this.a + pw.this.c, a=pw.this.a * 10)
        .without(pw.this.b)
        .rename(e=pw.this.c)
        .rename({"d": "f"})
    )
    assert sorted(result.column_names()) == ["a", "e", "f"]
    assert_rows(result.select(pw.this.a, pw.this.e, pw.this.f), [(20, 20, 22), (30, 30, 33)])


def test_id_is_not_a_column_name():
    t = pw.debug.table_from_markdown(ABC)
    for build in (lambda: t.select(id=t.a), lambda: t.with_columns(id=t.a)):
        with pytest.raises(ValueError, match="Can't use 'id' as a column name"):  # Pathway's words
            build()


def test_filter_keeps_ids_and_refuses_a_condition_that_may_be_none():
    t = pw.debug.table_from_markdown(
        """
          | a | flag
        1 | 1 | True
        2 | 2 |
        3 | 3 | False
        """
    )
    source = pw.debug.table_to_pandas(t)
    kept = pw.debug.table_to_pandas(t.filter(pw.this.flag == True))  # noqa: E712 - None == True is False
    assert list(kept.index) == [i for i in source.index if source.loc[i, "a"] == 1]
    # the column itself may be None: not a condition (Pathway's words)
    with pytest.raises(TypeError, match=r"has to be bool, found Optional\(BOOL\)"):
        t.filter(pw.this.flag)


def test_filter_needs_a_boolean():
    t = pw.debug.table_from_markdown(ABC)
    with pytest.raises(TypeError, match=r"Filter argument of Table.filter\(\) has to be bool, found INT"):
        t.filter(pw.this.a + 1)


def test_concat_and_concat_reindex():
    one = pw.debug.table_from_markdown(
        """
          | k | v
        1 | a | 1
        2 | b | 2
        """
    )
    two = pw.debug.table_from_markdown(
        """
          | k | v
        3 | c | 3
        """
    )
    same_labels = pw.debug.table_from_markdown(
        """
          | k | v
        1 | d | 4
        2 | e | 5
        """
    )
    with pytest.raises(ValueError, match="disjoint"):  # as in Pathway: ids must be promised disjoint
        one.concat(two)
    pw.universes.promise_are_pairwise_disjoint(one, two)
    joined = pw.debug.table_to_pandas(one.concat(two))
    assert sorted_rows(frame_rows(joined).values()) == [("a", 1), ("b", 2), ("c", 3)]
    # concat keeps the ids of both tables
    inputs = {**frame_rows(pw.debug.table_to_pandas(one)), **frame_rows(pw.debug.table_to_pandas(two))}
    assert frame_rows(joined) == inputs
    # the same labels give the same ids: concat_reindex makes new, distinct ones
    reindexed = pw.debug.table_to_pandas(one.concat_reindex(same_labels))
    assert sorted_rows(frame_rows(reindexed).values()) == [("a", 1), ("b", 2), ("d", 4), ("e", 5)]
    assert reindexed.index.is_unique


def test_concat_needs_the_same_columns_in_any_order():
    a = pw.debug.table_from_markdown("x\n1")
    b = pw.debug.table_from_markdown("y\n1")
    with pytest.raises(ValueError, match="same columns"):
        a.concat_reindex(b)
    lower_upper = pw.debug.table_from_markdown("lower | upper\na | A")
    upper_lower = pw.debug.table_from_markdown("upper | lower\nB | b")
    both = lower_upper.concat_reindex(upper_lower)
    assert both.column_names() == ["lower", "upper"]
    assert_rows(both, [("a", "A"), ("b", "B")])


def test_table_from_columns_of_tables_with_the_same_ids():
    t = pw.debug.table_from_markdown("  | a | b\n1 | 1 | x\n2 | 2 | y")
    u = pw.debug.table_from_markdown("  | c\n1 | 10\n2 | 20")
    assert_rows(pw.Table.from_columns(t.a, u.c, d=t.b), [(1, 10, "x"), (2, 20, "y")])
    with pytest.raises(ValueError):  # two columns named a
        pw.Table.from_columns(t.a, t.a)
    with pytest.raises(ValueError):  # other ids
        pw.Table.from_columns(t.a, pw.debug.table_from_markdown("  | c\n1 | 10\n3 | 30").c)


def test_append_only_tables_and_the_latest_reducer_warning():
    inserts = pw.debug.table_from_markdown("a | b\n1 | 2\n1 | 3")
    updates = pw.debug.table_from_markdown(
        """
        a | b | __time__ | __diff__
        1 | 2 |     2    |     1
        1 | 2 |     4    |    -1
        1 | 3 |     4    |     1
        """
    )
    assert inserts.is_append_only and inserts.filter(pw.this.b > 2).select(c=pw.this.b).is_append_only
    assert not updates.is_append_only
    assert not inserts.groupby(pw.this.a).reduce(pw.this.a).is_append_only
    assert inserts.join(inserts.copy(), pw.left.a == pw.right.a).select(pw.left.b).is_append_only
    assert not inserts.join_left(inserts.copy(), pw.left.a == pw.right.a).select(pw.left.b).is_append_only
    with pytest.warns(UserWarning, match="the latest reducer requires an append-only input"):
        updates.groupby(pw.this.a).reduce(pw.this.a, last=pw.reducers.latest(pw.this.b))


def test_flatten_lists_tuples_and_json_arrays():
    t = pw.debug.table_from_markdown(
        """
        k | n
        a | 2
        b | 3
        c | 0
        """
    )
    lists = t.select(pw.this.k, xs=pw.apply_with_type(lambda n: list(range(n)), list[int], pw.this.n))
    flat = lists.flatten(pw.this.xs, origin_id="origin")
    assert flat.column_names() == ["xs", "k", "origin"]  # the flattened column first, as in Pathway
    assert str(flat.schema._dtypes()["xs"]) == "int"
    frame = pw.debug.table_to_pandas(flat)
    assert sorted_rows((k, x) for x, k, _ in frame_rows(frame).values()) == [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("b", 2)]
    assert frame.index.is_unique
    origins = ids_of(t)  # k -> id of the flattened row
    assert {(k, o) for _, k, o in frame_rows(frame).values()} == {("a", origins["a"]), ("b", origins["b"])}
    arrays = t.select(pw.this.k, j=pw.apply_with_type(lambda n: [n, "s", {"n": n}], pw.Json, pw.this.n))
    assert_rows(
        arrays.flatten(pw.this.j).filter(pw.this.k == "a"),
        [(pw.Json(2), "a"), (pw.Json("s"), "a"), (pw.Json({"n": 2}), "a")],
    )


def test_flatten_strings_into_characters():
    t = pw.debug.table_from_markdown("s | k\nabc | 1\nxy | 3")
    flat = t.flatten(pw.this.s)
    assert str(flat.schema._dtypes()["s"]) == "str"  # the oracle: a, b, c, x, y, as STR
    assert_rows(flat, [("a", 1), ("b", 1), ("c", 1), ("x", 3), ("y", 3)])
    with pytest.raises(TypeError, match="Cannot flatten column of type INT\\."):
        pw.debug.table_from_markdown("a\n1").flatten(pw.this.a)


# -- reducers ---------------------------------------------------------------------------------

GROUPS = """
      | k | v | s | f   | u
    1 | a | 3 | x | 1.5 | A
    2 | a | 1 | y | 2.5 | A
    3 | a | 2 | x | 0.5 | A
    4 | b | 7 | z | 4.0 | B
    """


def test_groupby_reduce_with_value_reducers():
    t = pw.debug.table_from_markdown(GROUPS)
    result = t.groupby(pw.this.k).reduce(
        pw.this.k,
        count=pw.reducers.count(),
        total=pw.reducers.sum(pw.this.v),
        lo=pw.reducers.min(pw.this.v),
        hi=pw.reducers.max(t.v),
        mean=pw.reducers.avg(pw.this.v),
        distinct=pw.reducers.count_distinct(pw.this.s),
        ordered=pw.reducers.sorted_tuple(pw.this.v),
        fsum=pw.reducers.sum(pw.this.f),
        smin=pw.reducers.min(pw.this.s),
        smax=pw.reducers.max(pw.this.s),
        same=pw.reducers.unique(pw.this.u),
        spread=pw.reducers.max(pw.this.v) - pw.reducers.min(pw.this.v),
        label=pw.this.k + "!",
    )
    types = result.schema._dtypes()
    assert [str(types[c]) for c in ("count", "total", "mean", "fsum", "smin")] == ["int", "int", "float", "float", "str"]
    assert_rows(result, [
        ("a", 3, 6, 1, 3, 2.0, 2, (1, 2, 3), 4.5, "x", "y", "A", 2, "a!"),
        ("b", 1, 7, 7, 7, 7.0, 1, (7,), 4.0, "z", "z", "B", 0, "b!"),
    ])


def test_id_reducers_tuple_and_any():
    t = pw.debug.table_from_markdown(GROUPS)
    source = frame_rows(pw.debug.table_to_pandas(t))  # id -> (k, v, s, f, u)
    result = t.groupby(t.k).reduce(
        t.k,
        lo=pw.reducers.argmin(t.v), hi=pw.reducers.argmax(t.v),
        values=pw.reducers.tuple(t.v), some=pw.reducers.any(t.s),
    )
    got = {r[0]: r for r in frame_rows(pw.debug.table_to_pandas(result)).values()}
    for key in ("a", "b"):
        group = {i: row for i, row in source.items() if row[0] == key}
        _, lo, hi, values, some = got[key]
        assert lo == min(group, key=lambda i: group[i][1])
        assert hi == max(group, key=lambda i: group[i][1])
        assert values == tuple(group[i][1] for i in sorted(group))  # in the order of the ids
        assert some in {row[2] for row in group.values()}


def test_reducers_over_tuples_and_json():
    t = pw.debug.table_from_markdown(
        """
          | k | j        | __time__
        1 | 1 | {"a": 1} | 2
        2 | 1 | [1, "x"] | 4
        3 | 2 | null     | 2
        """,
        schema=pw.schema_from_types(k=int, j=pw.Json),
    ).with_columns(tp=pw.make_tuple(pw.this.k, pw.this.j))
    result = t.groupby(pw.this.k).reduce(
        pw.this.k,
        first=pw.reducers.earliest(pw.this.j),
        last=pw.reducers.latest(pw.this.tp),
        pairs=pw.reducers.sorted_tuple(pw.this.k),
        tps=pw.reducers.tuple(pw.this.tp),
        same=pw.reducers.unique(pw.this.k),
    )
    got = {r[0]: r[1:] for r in rows(result)}
    assert got[2] == (pw.Json(None), (2, pw.Json(None)), (2,), ((2, pw.Json(None)),), 2)  # JSON null is a value
    first, last, pairs, tps, same = got[1]
    assert (first, last, pairs, same) == (pw.Json({"a": 1}), (1, pw.Json([1, "x"])), (1, 1), 1)
    assert sorted(tps, key=repr) == [(1, pw.Json([1, "x"])), (1, pw.Json({"a": 1}))]


def test_unique_fails_on_different_values():
    t = pw.debug.table_from_markdown(GROUPS)
    with pytest.raises(Exception, match="unique"):
        pw.debug.table_to_pandas(t.groupby(pw.this.k).reduce(pw.this.k, s=pw.reducers.unique(pw.this.s)))


def test_tuple_reducers_skip_nones():
    t = pw.debug.table_from_markdown(
        """
          | k | v
        1 | a | 2
        2 | a |
        3 | a | 1
        """
    )
    result = t.groupby(pw.this.k).reduce(
        kept=pw.reducers.sorted_tuple(pw.this.v, skip_nones=True),
        skipped=pw.reducers.tuple(pw.this.v, skip_nones=True),
        n=pw.reducers.count(),
    )
    [(kept, skipped, n)] = rows(result)
    assert kept == (1, 2) and sorted(skipped) == [1, 2] and n == 3


def test_whole_table_reduce():
    t = pw.debug.table_from_markdown(GROUPS)
    result = t.reduce(n=pw.reducers.count(), total=pw.reducers.sum(pw.this.v), top=pw.reducers.max(pw.this.s))
    assert_rows(result, [(4, 13, "z")])
    with pytest.raises(ValueError, match="in this reduce statement"):
        t.reduce(pw.this.v)


def test_groupby_several_columns():
    t = pw.debug.table_from_markdown(GROUPS)
    result = t.groupby(pw.this.k, pw.this.s).reduce(pw.this.k, pw.this.s, n=pw.reducers.count())
    assert_rows(result, [("a", "x", 2), ("a", "y", 1), ("b", "z", 1)])


def test_groupby_instance_and_what_groupby_rejects():
    t = pw.debug.table_from_markdown(GROUPS)
    result = t.groupby(pw.this.s, instance=pw.this.k).reduce(pw.this.k, pw.this.s, total=pw.reducers.sum(pw.this.v))
    assert_rows(result, [("a", "x", 5), ("a", "y", 1), ("b", "z", 7)])
    with pytest.raises(ValueError, match="groupby takes columns"):
        t.groupby(pw.this.v % 2)
    with pytest.raises(ValueError, match="in this reduce statement"):
        t.groupby(pw.this.k).reduce(pw.this.v)


def test_earliest_and_latest_follow_arrival_order():
    t = pw.debug.table_from_markdown(
        """
          | k | v | __time__ | __diff__
        1 | a | 5 | 2        | 1
        4 | b | 2 | 2        | 1
        2 | a | 1 | 4        | 1
        3 | a | 9 | 6        | 1
        """
    )
    result = t.groupby(pw.this.k).reduce(pw.this.k, first=pw.reducers.earliest(pw.this.v), last=pw.reducers.latest(pw.this.v))
    assert_rows(result, [("a", 5, 9), ("b", 2, 2)])


def test_a_deletion_reaching_the_latest_reducer_fails_the_run():
    # as in Pathway: the latest reducer cannot take a row back (checked against Pathway 0.33)
    t = pw.debug.table_from_markdown(
        """
          | k | v | __time__ | __diff__
        1 | a | 5 | 2        | 1
        3 | a | 9 | 6        | 1
        3 | a | 9 | 8        | -1
        """
    )
    with pytest.warns(UserWarning, match="the latest reducer requires an append-only input"):
        result = t.groupby(pw.this.k).reduce(pw.this.k, last=pw.reducers.latest(pw.this.v))
    with pytest.raises(pw.errors.ComputationError, match="append-only.*the latest reducer cannot take a row back"):
        pw.debug.compute_and_print(result)


def test_groupby_ids_are_pointers_of_the_keys_and_ix_ref():
    t = pw.debug.table_from_markdown(GROUPS)
    totals = t.groupby(pw.this.k).reduce(pw.this.k, total=pw.reducers.sum(pw.this.v))
    keys = pw.debug.table_from_markdown(
        """
        k
        a
        b
        """
    ).with_id_from(pw.this.k)
    assert ids_of(totals) == ids_of(keys)
    looked_up = keys.select(keys.k, total=totals.ix_ref(keys.k).total)
    assert_rows(looked_up, [("a", 6), ("b", 7)])


def test_optional_ix_ref_gives_none_where_a_key_is_none():
    t = pw.debug.table_from_markdown(GROUPS)
    totals = t.groupby(pw.this.k).reduce(pw.this.k, total=pw.reducers.sum(pw.this.v))
    keys = pw.debug.table_from_markdown(
        """
        k | m
        a | 1
        b | 2
        c | 3
          | 4
        """
    )
    assert keys.schema._dtypes()["k"].optional
    # a None key makes no pointer (Pathway's pointer_from(optional=True)); "c" has no row
    looked_up = keys.select(keys.k, total=totals.ix_ref(keys.k, optional=True).total)
    assert_rows(looked_up, [("a", 6), ("b", 7), ("c", None), (None, None)])


# -- incremental behaviour ------------------------------------------------------------------

def test_groupby_count_update_stream():
    t = pw.debug.table_from_markdown(
        """
          | k | __time__ | __diff__
        1 | a | 2        | 1
        2 | a | 2        | 1
        3 | b | 2        | 1
        4 | a | 4        | 1
        3 | b | 6        | -1
        2 | a | 8        | -1
        2 | c | 8        | 1
        5 | d | 10       | 1
        5 | d | 10       | -1
        6 | a | 10       | 1
        6 | a | 10       | -1
        """
    )
    counts = t.groupby(pw.this.k).reduce(pw.this.k, n=pw.reducers.count())
    assert_changes(counts, [
        [("a", 2, 1), ("b", 1, 1)],
        [("a", 2, -1), ("a", 3, 1)],  # a row added later: -old, +new
        [("b", 1, -1)],  # the group's last row retracted: the group goes
        [("a", 2, 1), ("a", 3, -1), ("c", 1, 1)],  # an update inside one transaction
        [],  # changes that cancel out within one time produce nothing
    ])


def test_stateless_update_stream():
    t = pw.debug.table_from_markdown(
        """
          | v | __time__ | __diff__
        1 | 1 | 2        | 1
        2 | 5 | 2        | 1
        1 | 1 | 4        | -1
        1 | 7 | 4        | 1
        2 | 5 | 6        | -1
        """
    )
    result = t.filter(pw.this.v > 2).select(w=pw.this.v * 10)
    assert_changes(result, [[(50, 1)], [(70, 1)], [(50, -1)]])


def test_assert_append_only_and_remove_retractions():
    t = pw.debug.table_from_markdown(
        """
        a | __time__ | __diff__
        1 |     2    |     1
        2 |     4    |     1
        2 |     8    |    -1
        """,
        id_from=["a"],
    )
    assert not t.is_append_only
    kept = t._remove_retractions()
    assert kept.is_append_only
    assert_changes(kept, [[(1, 1)], [(2, 1)], []])  # the deletion of 2 is dropped
    only_ones = t.filter(pw.this.a == 1).assert_append_only()
    assert only_ones.is_append_only
    assert_rows(only_ones, [(1,)])
    with pytest.raises(ValueError, match="Expected table to be append-only, but got diff=-1 for key"):
        pw.debug.compute_and_print(t.assert_append_only())


def test_update_of_a_row_is_one_retraction_and_one_insertion():
    t = pw.debug.table_from_markdown(
        """
          | v | __time__ | __diff__
        1 | 1 | 2        | 1
        1 | 1 | 4        | -1
        1 | 2 | 4        | 1
        """
    )
    batches = pw.debug.compute(t.select(w=pw.this.v + 1))
    assert [list(zip(b.table.to_pylist(), b.diffs.to_pylist())) for b in batches][1:] == [
        [({"w": 2}, -1), ({"w": 3}, 1)]
    ]
    first, second = batches
    assert first.ids.to_pylist() == second.ids.to_pylist()[:1] and len(set(second.ids.to_pylist())) == 1


def test_left_join_update_stream():
    left = pw.debug.table_from_markdown(
        """
          | k | a | __time__
        1 | 1 | x | 2
        """
    )
    right = pw.debug.table_from_markdown(
        """
          | k | b | __time__ | __diff__
        1 | 1 | p | 4        | 1
        1 | 1 | p | 6        | -1
        """
    )
    result = left.join_left(right, left.k == right.k).select(left.a, right.b)
    assert_changes(result, [
        [("x", None, 1)],
        [("x", None, -1), ("x", "p", 1)],
        [("x", None, 1), ("x", "p", -1)],
    ])


def test_whole_table_reduce_update_stream():
    t = pw.debug.table_from_markdown(
        """
          | v | __time__ | __diff__
        1 | 4 | 2        | 1
        2 | 6 | 4        | 1
        1 | 4 | 6        | -1
        2 | 6 | 8        | -1
        """
    )
    assert_changes(t.reduce(n=pw.reducers.count(), total=pw.reducers.sum(pw.this.v)), [
        [(1, 4, 1)],
        [(1, 4, -1), (2, 10, 1)],
        [(2, 10, -1), (1, 6, 1)],
        [(1, 6, -1)],  # no rows left: no result row
    ])


def test_update_rows_and_difference_update_streams():
    base = pw.debug.table_from_markdown(
        """
          | v | __time__
        1 | 1 | 2
        2 | 2 | 2
        """
    )
    other = pw.debug.table_from_markdown(
        """
          | v  | __time__ | __diff__
        1 | 10 | 4        | 1
        1 | 10 | 6        | -1
        """
    )
    assert_changes(base.update_rows(other), [
        [(1, 1), (2, 1)],
        [(1, -1), (10, 1)],  # label 1 now comes from the update
        [(10, -1), (1, 1)],  # and back when the update goes
    ])
    assert_changes(base.difference(other), [[(1, 1), (2, 1)], [(1, -1)], [(1, 1)]])


def test_sort_update_stream():
    t = pw.debug.table_from_markdown(
        """
          | name | v  | __time__
        1 | a    | 10 | 2
        3 | c    | 30 | 2
        2 | b    | 20 | 4
        """
    )
    names = {i: r[0] for i, r in frame_rows(pw.debug.table_to_pandas(t)).items()} | {None: None}
    batches = pw.debug.compute(t.sort(key=pw.this.v))
    got = [
        sorted((names[i], names[r["prev"]], names[r["next"]], diff)
               for i, r, diff in zip(b.ids.to_pylist(), b.table.to_pylist(), b.diffs.to_pylist()))
        for b in batches
    ]
    assert got == [
        [("a", None, "c", 1), ("c", "a", None, 1)],
        # b goes between a and c: a's next and c's prev change
        [("a", None, "b", 1), ("a", None, "c", -1), ("b", "a", "c", 1), ("c", "a", None, -1), ("c", "b", None, 1)],
    ]


# -- joins ----------------------------------------------------------------------------------------

LEFT = """
      | k | a
    1 | 1 | x
    2 | 2 | y
    3 | 2 | z
    4 | 4 | w
    """
RIGHT = """
      | k | b
    1 | 2 | p
    2 | 3 | q
    3 | 4 | r
    4 | 4 | s
    """
INNER = [(2, "y", "p"), (2, "z", "p"), (4, "w", "r"), (4, "w", "s")]


def test_inner_join_select_forms():
    left, right = pw.debug.table_from_markdown(LEFT), pw.debug.table_from_markdown(RIGHT)
    plain = left.join(right, left.k == right.k).select(left.k, left.a, right.b)
    assert_rows(plain, INNER)
    sides = left.join_inner(right, pw.left.k == pw.right.k).select(
        k=pw.left.k, a=pw.this.a, b=pw.right.b, ab=pw.left.a + pw.right.b
    )
    assert_rows(sides, [row + (row[1] + row[2],) for row in INNER])


def test_this_reads_a_column_both_sides_have_when_the_join_compares_them():
    # as Pathway 0.33.0: the column compared is either side's (None only where both are)
    left, right = pw.debug.table_from_markdown(LEFT), pw.debug.table_from_markdown(RIGHT)
    outer = left.join_outer(right, left.k == right.k).select(pw.this.k, pw.this.a, pw.this.b)
    assert str(outer.schema._dtypes()["k"]) == "Optional[int]"
    assert_rows(outer, [(1, "x", None), (2, "y", "p"), (2, "z", "p"), (3, None, "q"), (4, "w", "r"), (4, "w", "s")])
    with pytest.raises(ValueError, match="ambiguous"):
        left.join(right, left.a == right.b).select(pw.this.k)


def test_left_right_and_outer_joins_pad_with_none():
    left, right = pw.debug.table_from_markdown(LEFT), pw.debug.table_from_markdown(RIGHT)
    on = (left.k == right.k,)
    columns = dict(lk=pw.left.k, a=pw.left.a, rk=pw.right.k, b=pw.right.b)
    inner = [(k, a, k, b) for k, a, b in INNER]
    assert_rows(left.join_left(right, *on).select(**columns), inner + [(1, "x", None, None)])
    assert_rows(left.join_right(right, *on).select(**columns), inner + [(None, None, 3, "q")])
    assert_rows(
        left.join(right, *on, how=pw.JoinMode.OUTER).select(**columns),
        inner + [(1, "x", None, None), (None, None, 3, "q")],
    )
    outer = left.join_outer(right, *on).select(**columns)
    assert all(t.optional for t in outer.schema._dtypes().values())


EXACTLY_ONCE_LEFT = """
      | k | a  | __time__
    1 | 1 | 10 | 2
    2 | 1 | 11 | 8
    """
EXACTLY_ONCE_RIGHT = """
      | k | c   | __time__ | __diff__
    1 | 1 | 100 | 4        | 1
    1 | 1 | 100 | 6        | -1
    3 | 1 | 300 | 12       | 1
    """


def test_left_exactly_once_rows_leave_the_join_when_matched():
    left, right = pw.debug.table_from_markdown(EXACTLY_ONCE_LEFT), pw.debug.table_from_markdown(EXACTLY_ONCE_RIGHT)
    result = left.join(right, left.k == right.k, left_exactly_once=True).select(left.a, right.c)
    # row 10 met 100 and left: deleting 100 retracts nothing; 11 came when 100 was gone
    # and waits for 300; so the result is append-only although the right side is not
    assert result.is_append_only
    # one batch per input time: 2, 4, 6, 8, 12
    assert_changes(result, [[], [(10, 100, 1)], [], [], [(11, 300, 1)]])
    plain = left.join(right, left.k == right.k).select(left.a, right.c)
    assert_changes(plain, [[], [(10, 100, 1)], [(10, 100, -1)], [], [(10, 300, 1), (11, 300, 1)]])


def test_right_exactly_once_rows_may_share_a_left_row():
    left = pw.debug.table_from_markdown("k | a | __time__\n2 | 20 | 4")
    right = pw.debug.table_from_markdown(
        """
          | k | c   | __time__
        1 | 2 | 200 | 2
        2 | 2 | 201 | 2
        3 | 2 | 202 | 6
        """
    )
    result = left.join(right, left.k == right.k, right_exactly_once=True).select(left.a, right.c)
    # each right row matches once; the left row stays and meets 202 too
    assert_changes(result, [[], [(20, 200, 1), (20, 201, 1)], [(20, 202, 1)]])


def test_exactly_once_row_matching_several_rows_in_one_step_fails():
    left = pw.debug.table_from_markdown("k | a | __time__\n2 | 20 | 4")
    right = pw.debug.table_from_markdown("k | c | __time__\n2 | 200 | 2\n2 | 500 | 2")
    result = left.join(right, left.k == right.k, left_exactly_once=True).select(left.a, right.c)
    with pytest.raises(ValueError, match="Repeated entry in a batch"):  # Pathway's words
        pw.debug.compute(result)


def test_exactly_once_side_must_be_append_only():
    left, right = pw.debug.table_from_markdown(EXACTLY_ONCE_LEFT), pw.debug.table_from_markdown(EXACTLY_ONCE_RIGHT)
    result = left.join(right, left.k == right.k, right_exactly_once=True).select(left.a, right.c)
    with pytest.raises(ValueError, match="right table of a join with right_exactly_once=True to be append-only"):
        pw.debug.compute(result)


def test_exactly_once_is_for_inner_joins():
    left, right = pw.debug.table_from_markdown(EXACTLY_ONCE_LEFT), pw.debug.table_from_markdown(EXACTLY_ONCE_RIGHT)
    with pytest.raises(pw.errors.PlanError, match="inner joins only"):
        left.join_left(right, left.k == right.k, left_exactly_once=True)


def test_join_select_reads_another_select_of_the_same_join():
    left = pw.debug.table_from_markdown("  | a\n1 | 1\n2 | 2\n3 | 3")
    right = pw.debug.table_from_markdown("  | b\n0 | x\n1 | y\n2 | z")
    pairs = left.join(right, left.id == right.id)
    doubled = pairs.select(d=left.a * 2)
    # rows 1 and 2 pair up: a + 2a
    assert_rows(pairs.select(s=left.a + doubled.d, b=right.b), [(3, "y"), (6, "z")])


def test_join_select_reads_ix_by_a_pointer_of_one_side():
    names = pw.debug.table_from_markdown("  | name\n1 | one\n2 | two\n3 | three")
    refs = pw.debug.table_from_markdown("  | n\n7 | 3\n8 | 1").select(p=names.pointer_from(pw.this.n))
    extra = pw.debug.table_from_markdown("  | tag\n7 | u\n8 | v")
    result = refs.join(extra, refs.id == extra.id).select(extra.tag, name=names.ix(refs.p, context=pw.this).name)
    assert_rows(result, [("u", "three"), ("v", "one")])


def test_intersect_ids_are_among_every_table():
    a = pw.debug.table_from_markdown("  | x\n1 | 10\n2 | 20\n3 | 30")
    b = pw.debug.table_from_markdown("  | y\n2 | 200\n3 | 300\n4 | 400")
    both = a.intersect(b)
    # restricting b to the intersection needs no promise
    assert_rows(b.restrict(both).select(pw.this.y), [(200,), (300,)])


def test_join_on_two_columns_and_id_from_a_side():
    left = pw.debug.table_from_markdown(
        """
          | k | m | a
        1 | 1 | 1 | x
        2 | 1 | 2 | y
        3 | 2 | 1 | z
        """
    )
    right = pw.debug.table_from_markdown(
        """
          | k | m | b
        7 | 1 | 2 | p
        8 | 2 | 1 | q
        9 | 2 | 2 | r
        """
    )
    result = left.join(right, left.k == right.k, left.m == right.m, id=left.id).select(left.a, right.b)
    frame = pw.debug.table_to_pandas(result)
    source = frame_rows(pw.debug.table_to_pandas(left))
    assert sorted_rows(frame_rows(frame).values()) == [("y", "p"), ("z", "q")]
    assert {i: r[0] for i, r in frame_rows(frame).items()} == {i: r[2] for i, r in source.items() if r[2] != "x"}


def test_chained_joins_read_every_table_joined_and_the_pairs():
    a = pw.debug.table_from_markdown("k | x\n1 | 10\n2 | 11")
    b = pw.debug.table_from_markdown("k | y\n1 | 20\n2 | 21\n2 | 22")
    c = pw.debug.table_from_markdown("y | z\n20 | 30\n22 | 32")
    ab = a.join(b, a.k == b.k)
    abc = ab.join(c, pw.left.y == pw.right.y)
    # *pw.this: each column once (k and y are compared, so either side's); original tables readable
    assert_rows(abc.select(*pw.this), [(1, 10, 20, 30), (2, 11, 22, 32)])
    assert abc.select(*pw.this).column_names() == ["k", "x", "y", "z"]
    assert_rows(abc.select(a.x, b.y, c.z), [(10, 20, 30), (11, 22, 32)])
    # pw.left.id is the id of the first join's pair
    pairs = ab.select(pw.this.x, pw.this.y, pair=pw.this.id)
    matched = {(x, pair) for x, y, pair in rows(pairs) if y in (20, 22)}
    assert set(rows(abc.select(pw.this.x, pair=pw.left.id))) == matched
    # a join on the right of a join, and a filter between joins
    nested = a.join(b.join(c, b.y == c.y), a.k == b.k).select(a.x, c.z)
    assert_rows(nested, [(10, 30), (11, 32)])
    filtered = a.join(b, a.k == b.k).filter(pw.this.y > 20).join(c, pw.left.y == pw.right.y).select(pw.this.x)
    assert_rows(filtered, [(11,)])
    with pytest.raises(KeyError):  # a column neither side has
        a.join(b, a.k == b.k).join(c, pw.left.y == pw.right.y).select(pw.this.q)


def test_placeholders_expand_to_every_column_under_a_prefix_or_suffix():
    a = pw.debug.table_from_markdown("col | on\na | 11\nb | 12")
    b = pw.debug.table_from_markdown("col | on\nd | 12\ne | 13")
    both = a.join(b, a.on == b.on).select(**pw.left.with_suffix("_l").with_prefix("t"), **pw.right.with_suffix("_r"))
    assert both.column_names() == ["tcol_l", "ton_l", "col_r", "on_r"]
    assert_rows(both, [("b", 12, "d", 12)])
    assert a.select(*pw.this.with_prefix("p_"), **pw.this).column_names() == ["p_col", "p_on", "col", "on"]


def test_column_slices_pick_rename_and_leave_out_columns():
    a = pw.debug.table_from_markdown("col | on\na | 11\nb | 12")
    b = pw.debug.table_from_markdown("col | on\nd | 12\ne | 13")
    joined = a.join(b, a.on == b.on)
    renamed = joined.select(**pw.left.without(a.col), **pw.right.rename({b.col: pw.this.col2})[["col2"]])
    assert renamed.column_names() == ["on", "col2"]
    assert_rows(renamed, [(12, "d")])
    assert_rows(joined.select(a.slice.on, **b.slice.with_prefix("r_").without("r_on")), [(12, "d")])
    wide = pw.debug.table_from_markdown("a | b | c | d\n1 | 2 | 3 | 4")
    assert wide.select(*pw.this[["a", "b", pw.this.c]].without(pw.this.a)).column_names() == ["b", "c"]
    assert_rows(wide.select(pw.this.without("a").b), [(2,)])
    with pytest.raises(KeyError):
        wide.select(pw.this.without(pw.this.a).a)


def test_join_filter_and_self_join():
    left, right = pw.debug.table_from_markdown(LEFT), pw.debug.table_from_markdown(RIGHT)
    joined = left.join(right, left.k == right.k)
    filtered = joined.filter((pw.left.a > "x") | (pw.right.b == "s")).filter(pw.this.b != "p")
    # of the inner pairs y-p, z-p, w-r, w-s: the first filter keeps y-p, z-p, w-s; the second w-s
    assert_rows(filtered.select(pw.left.a, pw.right.b), [("w", "s")])
    pairs = left.join(left, pw.left.k == pw.right.k).filter(pw.left.a < pw.right.a)
    assert_rows(pairs.select(x=pw.left.a, y=pw.right.a), [("y", "z")])


# -- combining tables by id ----------------------------------------------------------------------

BASE = """
      | name | v
    1 | a    | 1
    2 | b    | 2
    3 | c    | 3
    """


def test_update_rows_and_update_cells():
    base = pw.debug.table_from_markdown(BASE)
    rows_update = pw.debug.table_from_markdown(
        """
          | name | v
        2 | B    | 20
        4 | d    | 40
        """
    )
    cells_update = pw.debug.table_from_markdown(
        """
          | v
        3 | 30
        """
    )
    merged = pw.debug.table_to_pandas(base.update_rows(rows_update))
    expected_ids = {**frame_rows(pw.debug.table_to_pandas(base)), **frame_rows(pw.debug.table_to_pandas(rows_update))}
    assert frame_rows(merged) == expected_ids  # ids of both; the update wins for label 2
    with pytest.raises(ValueError, match="needs to be a subset"):  # as in Pathway: promise it first
        base.update_cells(cells_update)
    pw.universes.promise_is_subset_of(cells_update, base)
    assert_rows(base.update_cells(cells_update), [("a", 1), ("b", 2), ("c", 30)])
    only_b = rows_update.filter(pw.this.name == "B")
    pw.universes.promise_is_subset_of(only_b, base)
    assert_rows(base << only_b, [("a", 1), ("B", 20), ("c", 3)])
    # Pathway's warnings where nothing is left to update (recorded from it)
    doubled = base.select(pw.this.name, v=pw.this.v * 2)
    with pytest.warns(UserWarning, match="Returning other"):
        assert_rows(base.update_rows(doubled), [("a", 2), ("b", 4), ("c", 6)])
    with pytest.warns(UserWarning, match="Using with_columns"):
        assert_rows(base.update_cells(doubled.select(pw.this.v)), [("a", 2), ("b", 4), ("c", 6)])
    with pytest.raises(ValueError, match="Columns do not match"):
        base.update_rows(cells_update)


def test_difference_intersect_restrict():
    base = pw.debug.table_from_markdown(BASE)
    other = pw.debug.table_from_markdown(
        """
          | w
        2 | 0
        3 | 0
        5 | 0
        """
    )
    third = pw.debug.table_from_markdown(
        """
          | z
        3 | 0
        """
    )
    assert_rows(base.difference(other), [("a", 1)])
    assert_rows(base.intersect(other), [("b", 2), ("c", 3)])
    assert_rows(base.intersect(other, third), [("c", 3)])
    with pytest.raises(ValueError, match="other universe has to be a subset of self universe"):
        base.restrict(third)
    pw.universes.promise_is_subset_of(third, base)
    assert_rows(base.restrict(third), [("c", 3)])


def test_with_id_from_and_ix():
    people = pw.debug.table_from_markdown(
        """
        name  | age
        alice | 30
        bob   | 40
        """
    ).with_id_from(pw.this.name)
    visits = pw.debug.table_from_markdown(
        """
          | who   | day
        1 | alice | 1
        2 | bob   | 2
        3 | alice | 3
        4 | carol | 4
        """
    )
    with_pointer = visits.select(visits.who, visits.day, p=people.pointer_from(visits.who))
    assert str(with_pointer.schema._dtypes()["p"]) == "Pointer[str]"  # made from a str, as in Pathway
    known = with_pointer.filter(pw.this.who != "carol")
    looked_up = people.ix(known.p)
    assert_rows(looked_up, [("alice", 30), ("bob", 40), ("alice", 30)])
    assert sorted(pw.debug.table_to_pandas(known).index) == sorted(pw.debug.table_to_pandas(looked_up).index)
    # inside the select of the table holding the pointers, optional for a missing row
    ages = with_pointer.select(
        pw.this.day, age=people.ix(with_pointer.p, optional=True).age, again=people.ix_ref(with_pointer.who, optional=True).name
    )
    assert_rows(ages, [(1, 30, "alice"), (2, 40, "bob"), (3, 30, "alice"), (4, None, None)])
    older = with_pointer.filter(pw.coalesce(people.ix(with_pointer.p, optional=True).age, 0) > 35)
    assert older.column_names() == ["who", "day", "p"]
    assert_rows(older.select(pw.this.who, pw.this.day), [("bob", 2)])


def test_ix_of_a_missing_row_fails_unless_optional():
    people = pw.debug.table_from_markdown("name\nalice").with_id_from(pw.this.name)
    visits = pw.debug.table_from_markdown("who\ncarol")
    with pytest.raises(Exception, match="ix"):
        pw.debug.table_to_pandas(people.ix(visits.select(p=people.pointer_from(pw.this.who)).p))


def test_ix_with_argmax_finds_the_row():
    t = pw.debug.table_from_markdown(GROUPS)
    best = t.groupby(pw.this.k).reduce(pw.this.k, at=pw.reducers.argmax(pw.this.v))
    assert_rows(best.select(pw.this.k, s=t.ix(best.at).s, f=t.ix(best.at).f), [("a", "x", 1.5), ("b", "z", 4.0)])


def test_argmin_and_argmax_can_return_another_column_and_positional_reducers_name_their_column():
    t = pw.debug.table_from_markdown("name | age\nCharlie | 18\nAlice | 18\nDavid | 19\nErin | 19")
    # ties are broken by the smallest returned value (recorded from Pathway 0.33)
    result = t.reduce(young=pw.reducers.argmin(t.age, t.name), old=pw.reducers.argmax(t.age, t.name))
    assert_rows(result, [("Alice", "David")])
    assert_rows(t.reduce(pw.reducers.min(t.name), pw.reducers.max(t.age)), [("Alice", 19)])
    assert t.reduce(pw.reducers.any(t.name)).column_names() == ["name"]


def test_count_distinct_of_several_columns_counts_combinations():
    t = pw.debug.table_from_markdown("a | b\n1 | 2\n3 | 4\n3 | 5\n5 | 5\n5 | 6")
    result = t.reduce(none=pw.reducers.count_distinct(), a=pw.reducers.count_distinct(t.a),
                      ab=pw.reducers.count_distinct(t.a, t.b))
    assert_rows(result, [(1, 3, 5)])  # by hand: one empty combination, a in {1, 3, 5}, five pairs


def test_ix_with_a_pointer_read_in_the_operation_that_uses_it():
    t = pw.debug.table_from_markdown(GROUPS)
    # pw.this.ix(argmax) in reduce: the grouped table's row with the largest v
    best = t.groupby(pw.this.k).reduce(pw.this.k, s=pw.this.ix(pw.reducers.argmax(pw.this.v)).s)
    assert_rows(best, [("a", "x"), ("b", "z")])
    # t.ix(reducer) names its table; arithmetic over the looked-up column works too
    best = t.groupby(pw.this.k).reduce(pw.this.k, f=t.ix(pw.reducers.argmin(pw.this.v)).f * 2)
    assert_rows(best, [("a", 5.0), ("b", 8.0)])
    # t.ix(pw.this.p) in select: the pointer is a column of the selecting table
    linked = t.select(pw.this.v, p=t.pointer_from(pw.this.v))
    by_v = t.with_id_from(pw.this.v).select(w=pw.this.v * 10)
    assert_rows(linked.select(pw.this.v, w=by_v.ix(pw.this.p).w), [(3, 30), (1, 10), (2, 20), (7, 70)])


def test_optional_pointers_lookups_and_filters_that_make_columns_not_optional():
    animals = pw.debug.table_from_markdown("  | genus\n1 | upupa\n2 | bubo")
    birds = pw.debug.table_from_markdown("  | desc | ref\n1 | hoopoe | 1\n2 | owl | 2\n3 | none |").with_columns(
        ref=animals.pointer_from(pw.this.ref, optional=True))
    assert str(birds.schema._dtypes()["ref"]) == "Optional[Pointer[int]]"  # made from ints, as in Pathway
    latin = birds.select(pw.this.desc, *animals.ix(pw.this.ref, optional=True)[["genus"]])
    assert str(latin.schema._dtypes()["genus"]) == "Optional[str]"
    assert_rows(latin, [("hoopoe", "upupa"), ("owl", "bubo"), ("none", None)])
    known = latin.filter(pw.this.genus.is_not_none() & (pw.this.desc != "x"))
    assert str(known.schema._dtypes()["genus"]) == "str"  # as Pathway: the filter rules None out
    assert_rows(known, [("hoopoe", "upupa"), ("owl", "bubo")])


def test_groupby_instance_ids_are_those_of_with_id_from_with_the_instance():
    t = pw.debug.table_from_markdown("a | b | v\n0 | 0 | 1\n0 | 0 | 2\n1 | 0 | 3\n0 | 1 | 5")
    sums = t.groupby(pw.this.b, instance=pw.this.a).reduce(pw.this.a, pw.this.b, v=pw.reducers.sum(pw.this.v))
    by_hand = pw.debug.table_from_markdown("a | b | v\n0 | 0 | 3\n1 | 0 | 3\n0 | 1 | 5")
    assert frame_rows(pw.debug.table_to_pandas(sums)) == frame_rows(
        pw.debug.table_to_pandas(by_hand.with_id_from(pw.this.b, instance=pw.this.a)))


def test_groupby_with_id_uses_the_pointer_column_as_the_ids():
    t = pw.debug.table_from_markdown(GROUPS).with_columns(g=pw.this.pointer_from(pw.this.k))
    sums = t.groupby(id=t.g).reduce(t.g, total=pw.reducers.sum(t.v))
    assert_rows(sums.select(pw.this.total), [(6,), (7,)])
    frame = pw.debug.table_to_pandas(sums)
    assert all(row_id == g for row_id, g in zip(frame.index, frame["g"]))  # id = the group's pointer
    with pytest.raises(pw.errors.PlanError):  # an expression is not a column of pointers
        t.groupby(id=t.g + 1)
    with pytest.raises(TypeError):
        t.groupby(id=t.k)


def test_with_id_takes_the_pointer_as_it_is():
    t = pw.debug.table_from_markdown(GROUPS)
    moved = t.with_id(t.pointer_from(pw.this.v))
    frame = pw.debug.table_to_pandas(moved.select(pw.this.v, p=t.pointer_from(pw.this.v)))
    assert {row_id for row_id in frame.index} == set(frame["p"])


def test_groupby_and_reduce_read_columns_of_tables_with_the_same_rows_and_lookups():
    pets = pw.debug.table_from_markdown(
        """
          | pet | age | best
        1 | dog | 10  | 2
        2 | dog | 9   | 3
        3 | cat | 8   | 1
        """
    ).with_columns(best=pw.this.pointer_from(pw.this.best))
    copy = pets.select(*pw.this)
    # keys and reducers of another table with the same rows, and of rows found by a pointer
    result = pets.groupby(copy.pet).reduce(
        pets.pet, oldest=pw.reducers.max(copy.age), best_age=pw.reducers.min(pets.ix(pets.best).age)
    )
    # dog: ages 10, 9; its rows point at rows 2 (9) and 3 (8); cat: age 8, points at row 1 (10)
    assert_rows(result, [("cat", 8, 10), ("dog", 10, 8)])


def test_with_id_reads_a_pointer_of_a_table_with_the_same_rows():
    t = pw.debug.table_from_markdown(GROUPS)
    pointers = t.select(p=t.pointer_from(pw.this.v))
    moved = t.with_id(pointers.p)
    frame = pw.debug.table_to_pandas(moved.select(pw.this.v, p=t.pointer_from(pw.this.v)))
    assert {row_id for row_id in frame.index} == set(frame["p"])
    by_values = t.with_id_from(pointers.p)
    assert len(pw.debug.table_to_pandas(by_values)) == len(pw.debug.table_to_pandas(t))


def test_static_tables_with_the_same_ids_share_their_columns():
    # as Pathway: debug tables with equal ids have one universe; other ids need a promise
    letters = pw.debug.table_from_markdown("  | lower\n1 | a\n2 | b")
    flags = pw.debug.table_from_markdown("  | keep\n1 | True\n2 | False")
    others = pw.debug.table_from_markdown("  | keep\n1 | True\n3 | False")
    assert_rows(letters.filter(flags.keep), [("a",)])
    assert_rows(letters.with_columns(*flags), [("a", True), ("b", False)])
    with pytest.raises(pw.errors.PlanError):
        letters.filter(others.keep)
    # a filter keeping every row: the program cannot know; with_universe_of says so
    every = flags.filter(pw.this.keep | ~pw.this.keep)
    with pytest.raises(pw.errors.PlanError):
        letters.select(every.keep)
    assert_rows(letters.select(pw.this.lower, every.with_universe_of(letters).keep), [("a", True), ("b", False)])


# -- ordered operators ----------------------------------------------------------------------------

def test_diff_subtracts_the_previous_row_in_time_order_per_instance():
    t = pw.debug.table_from_markdown(
        """
        t | i | v
        1 | 0 | 1
        2 | 1 | 2
        3 | 1 | 4
        3 | 0 | 7
        5 | 1 | 11
        5 | 0 | 16
        9 | 0 | 37
        """
    )
    # per instance in t order: i=0: 1, 7, 16, 37; i=1: 2, 4, 11
    result = t.select(pw.this.i, pw.this.v) + t.diff(t.t, t.v, instance=t.i)
    assert_rows(result, [(0, 1, None), (0, 7, 6), (0, 16, 9), (0, 37, 21), (1, 2, None), (1, 4, 2), (1, 11, 7)])
    assert str(t.diff(t.t, t.v).schema._dtypes()["diff_v"]) == "Optional[int]"

def test_sort_gives_prev_and_next_per_instance():
    t = pw.debug.table_from_markdown(
        """
          | name | v  | g
        1 | a    | 30 | 1
        2 | b    | 10 | 1
        3 | c    | 20 | 1
        4 | d    | 5  | 2
        5 | e    | 1  | 2
        """
    )
    names = {i: r[0] for i, r in frame_rows(pw.debug.table_to_pandas(t)).items()}
    neighbours = frame_rows(pw.debug.table_to_pandas(t.sort(key=pw.this.v, instance=pw.this.g)))
    got = {names[i]: (names.get(prev), names.get(nxt)) for i, (prev, nxt) in neighbours.items()}
    assert got == {
        "b": (None, "c"), "c": ("b", "a"), "a": ("c", None),
        "e": (None, "d"), "d": ("e", None),
    }


def test_deduplicate_keeps_the_last_accepted_value():
    t = pw.debug.table_from_markdown(
        """
          | k | v | __time__
        1 | a | 1 | 2
        4 | b | 2 | 2
        2 | a | 5 | 4
        5 | b | 9 | 4
        3 | a | 3 | 6
        """
    )
    result = t.deduplicate(value=pw.this.v, instance=pw.this.k, acceptor=lambda new, old: new > old)
    assert_changes(result, [
        [("a", 1, 1), ("b", 2, 1)],
        [("a", 1, -1), ("a", 5, 1), ("b", 2, -1), ("b", 9, 1)],
        [],  # 3 is not accepted after 5
    ])


def test_deduplicate_gives_the_acceptor_tuples_as_python_tuples():
    t = pw.debug.table_from_markdown(
        """
        a | b | __time__
        1 | 1 | 2
        1 | 2 | 4
        3 | 0 | 6
        """
    )
    def acceptor(new: tuple, old: tuple) -> bool:
        return new > old  # tuples (not dicts, which do not order) compare item by item

    result = t.deduplicate(value=pw.make_tuple(pw.this.a, pw.this.b), acceptor=acceptor)
    assert_changes(result, [
        [(1, 1, 1)],
        [(1, 1, -1), (1, 2, 1)],
        [(1, 2, -1), (3, 0, 1)],
    ])


def test_deduplicate_meets_a_steps_rows_in_the_order_of_their_values():
    # checked against Pathway 0.33.0: 4, 9, 8, 7, 5 arrive together after 1; in value
    # order 4 is accepted (>= 1 + 3), 5 not, 7 is (>= 4 + 3), 8 and 9 not
    t = pw.debug.table_from_markdown(
        """
        v | __time__
        1 |    2
        4 |    4
        9 |    4
        8 |    4
        7 |    4
        5 |    4
        """
    )
    result = t.deduplicate(value=pw.this.v, acceptor=lambda new, old: new >= old + 3)
    assert_changes(result, [[(1, 1)], [(1, -1), (7, 1)]])


def test_deduplicate_ignores_deletions():
    # as Pathway: deleting the accepted row does not bring back the row before it
    t = pw.debug.table_from_markdown(
        """
          | v | __time__ | __diff__
        1 | 1 |     2    |     1
        2 | 5 |     4    |     1
        2 | 5 |     6    |    -1
        3 | 2 |     8    |     1
        """
    )
    result = t.deduplicate(value=pw.this.v, acceptor=lambda new, old: new > old)
    assert_changes(result, [[(1, 1)], [(1, -1), (5, 1)], [], []])  # no change at times 6 and 8


def test_deduplicate_acceptor_failure_is_logged_keeping_error_values():
    def acceptor(new: int, old: int) -> bool:
        if new == 4:
            raise ValueError("encountered 4")
        return new > old

    t = pw.debug.table_from_markdown("a | __time__\n2 | 2\n4 | 4\n3 | 6")
    result = t.deduplicate(value=pw.this.a, acceptor=acceptor)
    final: dict = {}
    messages: list[str] = []
    pw.io.subscribe(result, lambda key, row, time, is_addition: final.update({key: row["a"]}) if is_addition else None)
    pw.io.subscribe(pw.global_error_log(), lambda key, row, time, is_addition: messages.append(row["message"]))
    pw.run(terminate_on_error=False)
    # 4 is rejected (and logged), so 3 is accepted after 2
    assert list(final.values()) == [3] and messages == ["ValueError: encountered 4"]

    graph.clear()
    pw.debug.table_from_markdown("a | __time__\n2 | 2\n4 | 4").deduplicate(value=pw.this.a, acceptor=acceptor)
    with pytest.raises(ValueError, match="encountered 4"):
        pw.run_all()


def test_deduplicate_keeps_its_state_across_runs_when_the_acceptor_changes(tmp_path):
    data = tmp_path / "in"
    data.mkdir()

    class S(pw.Schema):
        v: int

    def run(step: int, acceptor) -> list[tuple[int, bool]]:
        graph.clear()
        (data / f"{step}.csv").write_text("v\n" + {0: "1\n3\n", 1: "6\n8\n"}[step])
        seen: list[tuple[int, bool]] = []
        best = pw.io.csv.read(str(data), schema=S, mode="static").deduplicate(value=pw.this.v, acceptor=acceptor)
        pw.io.subscribe(best, lambda key, row, time, is_addition: seen.append((row["v"], is_addition)))
        pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state")))
        return sorted(seen)

    assert run(0, lambda new, old: new >= old + 2) == [(3, True)]
    # the stored 3 meets 6 and 8 with the new acceptor: 6 is not >= 3 + 4, 8 is
    assert run(1, lambda new, old: new >= old + 4) == [(3, False), (8, True)]


# -- windows ---------------------------------------------------------------------------------------

VISITS = """
    user_id | t
    alice   | 0
    alice   | 5
    alice   | 20
    alice   | 30
    bob     | 3
    bob     | 14
    """


def test_session_windows_with_shard_and_instance():
    t = pw.debug.table_from_markdown(VISITS)
    by_shard = t.windowby(t.t, window=pw.temporal.session(max_gap=10), shard=t.user_id).reduce(
        user=pw.this._pw_instance,
        user_again=t.user_id,
        start=pw.this._pw_window_start,
        end=pw.this._pw_window_end,
        n=pw.reducers.count(),
        last=pw.reducers.max(t.t),
    )
    # a gap of exactly max_gap (20 -> 30) starts a new session; 5 -> 20 too; 3 -> 14 too
    assert_rows(by_shard, [
        ("alice", "alice", 0, 5, 2, 5), ("alice", "alice", 20, 20, 1, 20), ("alice", "alice", 30, 30, 1, 30),
        ("bob", "bob", 3, 3, 1, 3), ("bob", "bob", 14, 14, 1, 14),
    ])
    by_instance = t.windowby(pw.this.t, window=pw.temporal.session(max_gap=16), instance=pw.this.user_id).reduce(
        pw.this.user_id, n=pw.reducers.count(), span=pw.this._pw_window_end - pw.this._pw_window_start
    )
    assert_rows(by_instance, [("alice", 4, 30), ("bob", 2, 11)])


def test_session_window_merges_sessions_incrementally():
    t = pw.debug.table_from_markdown(
        """
          | t  | __time__
        1 | 0  | 2
        2 | 20 | 2
        3 | 10 | 4
        """
    )
    sessions = t.windowby(pw.this.t, window=pw.temporal.session(max_gap=15)).reduce(
        start=pw.this._pw_window_start, end=pw.this._pw_window_end, n=pw.reducers.count()
    )
    assert_changes(sessions, [
        [(0, 0, 1, 1), (20, 20, 1, 1)],
        [(0, 0, 1, -1), (0, 20, 3, 1), (20, 20, 1, -1)],
    ])


def test_session_windows_over_datetimes():
    t = pw.debug.table_from_markdown(
        """
        at
        2024-01-01T10:00:00
        2024-01-01T10:04:00
        2024-01-01T10:20:00
        """
    ).select(at=pw.this.at.dt.strptime("%Y-%m-%dT%H:%M:%S"))
    sessions = t.windowby(pw.this.at, window=pw.temporal.session(max_gap=dt.timedelta(minutes=5))).reduce(
        start=pw.this._pw_window_start, end=pw.this._pw_window_end, n=pw.reducers.count()
    )
    ten = dt.datetime(2024, 1, 1, 10)
    assert_rows(sessions, [
        (ten, ten + dt.timedelta(minutes=4), 2), (ten + dt.timedelta(minutes=20), ten + dt.timedelta(minutes=20), 1),
    ])


def test_tumbling_and_sliding_windows():
    t = pw.debug.table_from_markdown(
        """
        g | t
        x | 12
        x | 14
        x | 17
        x | 25
        y | 13
        """
    )
    tumbling = t.windowby(pw.this.t, window=pw.temporal.tumbling(duration=10), instance=pw.this.g).reduce(
        pw.this._pw_instance, pw.this._pw_window_start, pw.this._pw_window_end, n=pw.reducers.count()
    )
    assert_rows(tumbling, [("x", 10, 20, 3), ("x", 20, 30, 1), ("y", 10, 20, 1)])
    sliding = t.filter(pw.this.g == "x").windowby(
        pw.this.t, window=pw.temporal.sliding(hop=5, duration=10)
    ).reduce(start=pw.this._pw_window_start, end=pw.this._pw_window_end, items=pw.reducers.sorted_tuple(pw.this.t))
    assert_rows(sliding, [
        (5, 15, (12, 14)), (10, 20, (12, 14, 17)), (15, 25, (17,)), (20, 30, (25,)), (25, 35, (25,)),
    ])


def test_windows_with_gaps_and_origin():
    t = pw.debug.table_from_markdown(
        """
        t
        12
        14
        17
        25
        """
    )
    # hop 10 > duration 5: windows [10, 15), [20, 25)...; 17 and 25 fall in gaps
    gaps = t.windowby(pw.this.t, window=pw.temporal.sliding(hop=10, duration=5)).reduce(
        start=pw.this._pw_window_start, n=pw.reducers.count()
    )
    # origin 13: windows [13, 23), [23, 33); 12 would be in [3, 13), before the origin: dropped
    later = t.windowby(pw.this.t, window=pw.temporal.tumbling(duration=10, origin=13)).reduce(
        start=pw.this._pw_window_start, n=pw.reducers.count()
    )
    assert_rows(gaps.concat_reindex(later), [(10, 2), (13, 2), (23, 1)])


def test_tumbling_windows_over_datetimes():
    t = pw.debug.table_from_markdown(
        """
        at
        2024-01-01T10:05:00
        2024-01-01T10:55:00
        2024-01-01T11:10:00
        """
    ).select(at=pw.this.at.dt.strptime("%Y-%m-%dT%H:%M:%S"))
    hourly = t.windowby(pw.this.at, window=pw.temporal.tumbling(duration=dt.timedelta(hours=1))).reduce(
        start=pw.this._pw_window_start, n=pw.reducers.count()
    )
    assert_rows(hourly, [(dt.datetime(2024, 1, 1, 10), 2), (dt.datetime(2024, 1, 1, 11), 1)])


def test_update_types_narrows_or_widens_and_refuses_unrelated_types():
    t = pw.debug.table_from_markdown("a | b\n1 | x\n2 | None")
    anything = t.select(a=pw.apply(lambda v: v * 10, pw.this.a), b=pw.this.b)
    assert str(anything.schema._dtypes()["a"]) == "Any"
    typed = anything.update_types(a=int, b=str)
    assert [str(k) for k in typed.schema._dtypes().values()] == ["int", "str"]
    assert_rows(typed.select(c=pw.this.a + 1), [(11,), (21,)])
    with pytest.raises(pw.errors.PlanTypeError, match=r"update_types\(b=...\).*\nCannot change type from Optional\(STR\) to INT\."):
        t.update_types(b=int)
    with pytest.raises(pw.errors.PlanError, match="has to be an existing table column name"):
        t.update_types(c=int)


def test_empty_table_and_select_without_columns():
    empty = pw.Table.empty(age=float, pet=str)
    assert [str(k) for k in empty.schema._dtypes().values()] == ["float", "str"]
    assert_rows(empty, [])
    t = pw.debug.table_from_markdown("a | b | c\n1 | 2 | 3")
    assert_rows(t.select(*pw.this.without("a", pw.this.c)), [(2,)])


# -- debug helpers --------------------------------------------------------------------------------------

def test_table_from_rows_in_schema_order_and_as_a_stream():
    class S(pw.Schema):
        name: str
        age: int

    assert_rows(pw.debug.table_from_rows(S, [("ann", 30), ("bob", 25)]), [("ann", 30), ("bob", 25)])
    stream = pw.debug.table_from_rows(S, [("ann", 30, 2, 1), ("bob", 25, 2, 1), ("ann", 30, 4, -1)], is_stream=True)
    assert_changes(stream, [[("ann", 30, 1), ("bob", 25, 1)], [("ann", 30, -1)]])


def test_schema_builder_from_column_definitions():
    schema = pw.schema_builder({"key": pw.column_definition(dtype=int, primary_key=True),
                                "value": pw.column_definition(dtype=str, default_value="")})
    assert schema.column_names() == ["key", "value"]
    assert schema.primary_key_columns() == ["key"]
    assert [str(k) for k in schema._dtypes().values()] == ["int", "str"]


def test_table_from_pandas_ids_match_markdown_labels():
    frame = pd.DataFrame({"name": ["A", "B"], "v": [1.5, 2.5]}, index=[1, 2])
    from_pandas = pw.debug.table_from_pandas(frame)
    assert [str(t) for t in from_pandas.schema._dtypes().values()] == ["str", "float"]
    from_markdown = pw.debug.table_from_markdown(BASE)
    # labels 1 and 2 name the same rows in both tables
    assert_rows(from_markdown.update_rows(from_pandas.select(pw.this.name, v=pw.cast(int, pw.this.v))),
                [("A", 1), ("B", 2), ("c", 3)])


def test_markdown_space_separated_labels_booleans_and_missing_values():
    labelled = pw.debug.table_from_markdown("""
            a   b
        1   x   2
        2   y   3
    """)
    assert labelled.column_names() == ["a", "b"]
    assert ids_of(labelled) == ids_of(pw.debug.table_from_markdown("  | a | b\n1 | x | 2\n2 | y | 3"))
    assert_rows(labelled, [("x", 2), ("y", 3)])
    values = pw.debug.table_from_markdown("""
        a     | b    | c   | d
        true  | NULL | NaN | NA
        FALSE | 2    | 1.5 | z
    """)
    assert [str(k) for k in values.schema._dtypes().values()] == ["bool", "Optional[int]", "Optional[float]", "Optional[str]"]
    assert_rows(values, [(True, None, None, None), (False, 2, 1.5, "z")])


def test_table_from_pandas_types_of_datetimes_durations_lists_and_tuples(capsys):
    frame = pd.DataFrame({
        "t": [pd.Timestamp("2024-01-01 10:00"), pd.Timestamp("2024-01-02")],
        "u": [pd.Timestamp("2024-01-01 10:00", tz="UTC"), pd.Timestamp("2024-01-02", tz="UTC")],
        "d": [pd.Timedelta(minutes=5), pd.Timedelta(seconds=1)],
        "l": [[1, 2], [3]],
        "tu": [(1, "a"), (2, "b")],
    })
    t = pw.debug.table_from_pandas(frame)
    assert [str(k) for k in t.schema._dtypes().values()] == [
        "DateTimeNaive", "DateTimeUtc", "Duration", "list[int]", "tuple[int, str]"
    ]
    utc = dt.timezone.utc
    assert_rows(t, [
        (dt.datetime(2024, 1, 1, 10), dt.datetime(2024, 1, 1, 10, tzinfo=utc), dt.timedelta(minutes=5), (1, 2), (1, "a")),
        (dt.datetime(2024, 1, 2), dt.datetime(2024, 1, 2, tzinfo=utc), dt.timedelta(seconds=1), (3,), (2, "b")),
    ])
    # durations print in pandas' notation, as Pathway prints them
    pw.debug.compute_and_print(t.select(pw.this.d), include_id=False)
    assert capsys.readouterr().out.split("\n")[:3] == ["d", "0 days 00:00:01", "0 days 00:05:00"]


def test_markdown_formats():
    framed = pw.debug.table_from_markdown(
        """
        | a | b   |
        |---|-----|
        | 1 | foo |
        | 2 |     |
        """
    )
    spaced = pw.debug.table_from_markdown(
        """
        a b
        1 foo
        """
    )
    assert framed.column_names() == ["a", "b"] and spaced.column_names() == ["a", "b"]
    assert framed.schema._dtypes()["b"].optional
    assert_rows(framed.concat_reindex(spaced), [(1, "foo"), (2, None), (1, "foo")])


def test_compute_and_print(capsys):
    t = pw.debug.table_from_markdown(
        """
          | k | n
        1 | b | 2
        2 | a | 1
        """
    )
    pw.debug.compute_and_print(t, include_id=False)
    assert capsys.readouterr().out.split("\n")[:3] == ["k | n", "a | 1", "b | 2"]
    # None prints as an empty cell and sorts first
    pw.debug.compute_and_print(pw.debug.table_from_markdown("a | b\n1 | None\n2 | 3\nNone | 4"), include_id=False)
    assert capsys.readouterr().out.split("\n")[:4] == ["a | b", "  | 4", "1 |", "2 | 3"]
    # several tables: one after another (as Pathway prints them)
    pw.debug.compute_and_print(pw.debug.table_from_markdown("x\n1"), pw.debug.table_from_markdown("y\n3\n2"), include_id=False)
    assert capsys.readouterr().out.split("\n") == ["x", "1", "y", "2", "3", ""]


def test_compute_and_print_update_stream(capsys):
    t = pw.debug.table_from_markdown(
        """
          | k | n | __time__ | __diff__
        1 | a | 1 | 2        | 1
        1 | a | 1 | 4        | -1
        """
    )
    pw.debug.compute_and_print_update_stream(t, include_id=False)
    lines = [line.split(" | ") for line in capsys.readouterr().out.strip().split("\n")]
    assert [c.strip() for c in lines[0]] == ["k", "n", "__time__", "__diff__"]
    body = [[c.strip() for c in line] for line in lines[1:]]
    # the times are the tables' __time__ values, as Pathway shows them; a static table's is 0
    assert body == [["a", "1", "2", "1"], ["a", "1", "4", "-1"]]
    pw.debug.compute_and_print_update_stream(pw.debug.table_from_markdown("k\nz"), include_id=False)
    assert [c.strip() for c in capsys.readouterr().out.strip().split("\n")[1].split("|")] == ["z", "0", "1"]


def test_odd_times_of_a_debug_table_are_doubled_with_pathways_warning(capsys):
    with pytest.warns(UserWarning, match="timestamps are required to be even; all timestamps will be doubled"):
        t = pw.debug.table_from_markdown("a | __time__\n1 | 1\n2 | 2\n3 | 7")
    pw.debug.compute_and_print_update_stream(t, include_id=False)
    rows = [line.split("|") for line in capsys.readouterr().out.strip().split("\n")[1:]]
    assert [int(row[1]) for row in rows] == [2, 4, 14]
    with pytest.raises(ValueError, match="cannot contain negative times"):
        pw.debug.table_from_markdown("a | __time__\n1 | -2")


def test_file_tables_computed_separately_can_be_combined(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "x.csv").write_text(f"k\n{name}\n")
    schema = pw.schema_from_types(k=str)
    a = pw.io.csv.read(str(tmp_path / "a"), schema=schema, mode="static")
    b = pw.io.csv.read(str(tmp_path / "b"), schema=schema, mode="static")
    assert_rows(a, [("a",)])
    assert_rows(b, [("b",)])
    assert_rows(a.concat_reindex(b), [("a",), ("b",)])


def _interval_pairs(left, right, lower, upper, how):
    """Interval join by brute force: matched (a, left t, right t), plus unmatched rows padded."""
    pairs = [(a, lt, rt) for a, lt in left for b, rt in right if a == b and lower <= rt - lt <= upper]
    if how in ("left", "outer"):
        pairs += [(a, lt, None) for a, lt in left if not any(p[:2] == (a, lt) for p in pairs)]
    if how in ("right", "outer"):
        pairs += [(None, None, rt) for b, rt in right if not any(p[0] == b and p[2] == rt for p in pairs if p[1] is not None)]
    return pairs


@pytest.mark.parametrize("how", ["inner", "left", "right", "outer"])
def test_interval_joins_match_rows_whose_times_are_within_the_bounds(how):
    left = [(1, 3), (1, 4), (1, 5), (1, 11), (2, 2), (2, 3), (3, 4)]
    right = [(1, 0), (1, 1), (1, 4), (1, 7), (2, 0), (2, 2), (4, 2)]
    t1 = pw.debug.table_from_markdown("a | t\n" + "\n".join(f"{a} | {t}" for a, t in left))
    t2 = pw.debug.table_from_markdown("b | t\n" + "\n".join(f"{b} | {t}" for b, t in right))
    joined = getattr(t1, f"interval_join_{how}")(t2, t1.t, t2.t, pw.temporal.interval(-2, 1), t1.a == t2.b)
    result = joined.select(t1.a, lt=t1.t, rt=t2.t)
    assert_rows(result, _interval_pairs(left, right, -2, 1, how))


def test_interval_join_over_datetimes_and_its_updates():
    t1 = pw.debug.table_from_markdown("""
          | t                   | __time__ | __diff__
        1 | 2024-01-01T10:00:00 | 2        | 1
        2 | 2024-01-01T10:10:00 | 2        | 1
        2 | 2024-01-01T10:10:00 | 4        | -1
    """).select(t=pw.this.t.dt.strptime("%Y-%m-%dT%H:%M:%S"))
    t2 = pw.debug.table_from_markdown("""
          | t                   | __time__
        7 | 2024-01-01T10:04:00 | 2
        8 | 2024-01-01T10:12:00 | 4
    """).select(t=pw.this.t.dt.strptime("%Y-%m-%dT%H:%M:%S"))
    window = pw.temporal.interval(dt.timedelta(minutes=-10), dt.timedelta(minutes=5))
    pairs = t1.interval_join(t2, t1.t, t2.t, window).select(lm=t1.t.dt.minute(), rm=t2.t.dt.minute())
    # 10:04 is within -10..+5 min of 10:00 and of 10:10 (time 2); 10:10 goes at time 4, and 10:12 is 12 min after 10:00
    assert_changes(pairs, [[(0, 4, 1), (10, 4, 1)], [(10, 4, -1)]])


def test_custom_reducers_fold_a_groups_rows_in_the_order_they_arrived():
    table = pw.debug.table_from_markdown("""
         a | b | __time__
         3 | 1 |     2
         4 | 1 |     2
        13 | 2 |     2
        16 | 2 |     4
         2 | 2 |     6
         4 | 1 |     6
    """)

    def weird(value: int) -> int:  # even values count one more
        return value + 1 if value % 2 == 0 else value

    @pw.reducers.stateful_many
    def many(state: int | None, rows: list[tuple[list[int], int]]) -> int:
        return (state or 0) + sum(weird(values[0]) * count for values, count in rows)

    @pw.reducers.stateful_single
    def single(state: int | None, value: int) -> int:
        return (state or 0) + weird(value)

    class Mean(pw.BaseCustomAccumulator):
        def __init__(self, total: float, count: int) -> None:
            self.total, self.count = total, count

        @classmethod
        def from_row(cls, row):
            return cls(row[0], 1)

        def update(self, other) -> None:
            self.total, self.count = self.total + other.total, self.count + other.count

        def compute_result(self) -> float:
            return self.total / self.count

    result = table.groupby(pw.this.b).reduce(
        pw.this.b, m=many(pw.this.a), s=single(pw.this.a), mean=pw.reducers.udf_reducer(Mean)(pw.this.a),
        distinct=pw.reducers.count_distinct_approximate(pw.this.a),
    )
    groups = {1: [3, 4, 4], 2: [13, 16, 2]}
    assert_rows(result, [
        (b, sum(map(weird, v)), sum(map(weird, v)), sum(v) / len(v), len(set(v))) for b, v in groups.items()
    ])


def test_accumulator_sort_by_orders_the_rows_of_one_time():
    class Affine(pw.BaseCustomAccumulator):  # the result depends on the order of updates
        def __init__(self, factor: int, summand: int) -> None:
            self.factor, self.summand, self.result = factor, summand, factor + summand

        @classmethod
        def from_row(cls, row):
            return cls(row[0], row[1])

        def update(self, other) -> None:
            self.result = self.result * other.factor + other.summand

        def compute_result(self) -> int:
            return self.result

        @classmethod
        def sort_by(cls, row):
            return row[2]

    t = pw.debug.table_from_markdown(
        """
        a  | b  | t | __time__
        3  | 1  | 2 | 2
        2  | -1 | 1 | 2
        4  | 2  | 3 | 4
        """
    )
    result = t.reduce(r=pw.reducers.udf_reducer(Affine)(pw.this.a, pw.this.b, pw.this.t))
    # time 2 in t order: (2, -1) gives 1, then (3, 1): 1 * 3 + 1 = 4; time 4: 4 * 4 + 2 = 18
    assert_rows(result, [(18,)])


def test_a_retraction_under_another_id_cancels_a_row_of_the_same_values():
    # rows of a debug stream without ids are numbered by position, so the -1 of row 3
    # does not name row 2's id; as in Pathway, reducers see the multiset of values
    t = pw.debug.table_from_markdown(
        """
        pet | age | __time__ | __diff__
        dog | 10  | 0        | 1
        dog | 7   | 0        | 1
        dog | 7   | 2        | -1
        """
    )
    result = t.groupby(pw.this.pet).reduce(pw.this.pet, n=pw.reducers.count(), total=pw.reducers.sum(pw.this.age))
    assert_rows(result, [("dog", 1, 10)])


def test_interval_join_refuses_times_and_bounds_of_different_kinds():
    numbers = pw.Table.empty(a=int, t=int)
    dates = pw.Table.empty(b=int, t=pw.DateTimeNaive)
    with pytest.raises(TypeError, match=r"but are of types \(INT, DATE_TIME_NAIVE, INT, INT\)"):
        numbers.interval_join(dates, numbers.t, dates.t, pw.temporal.interval(0, 1))
    # Pathway 0.33's whole sentence (from its test_interval_joins.py)
    with pytest.raises(TypeError, match=re.escape(
        "Arguments (self_time_expression, other_time_expression, lower_bound, upper_bound) "
        "have to be of types (INT, INT, INT, INT) or (FLOAT, FLOAT, FLOAT, FLOAT) or "
        "(DATE_TIME_NAIVE, DATE_TIME_NAIVE, DURATION, DURATION) or "
        "(DATE_TIME_UTC, DATE_TIME_UTC, DURATION, DURATION) but are of types "
        "(DATE_TIME_NAIVE, INT, INT, INT)."
    )):
        dates.interval_join(numbers, dates.t, numbers.t, pw.temporal.interval(-1, 2))
    with pytest.raises(TypeError, match=r"but are of types \(DATE_TIME_NAIVE, DATE_TIME_NAIVE, INT, DURATION\)"):
        other = dates.copy()
        dates.interval_join(other, dates.t, other.t, pw.temporal.interval(1, dt.timedelta(days=1)))


def test_session_windows_by_predicate_and_tables_unpacked_as_mappings():
    times = [1, 2, 5, 6, 20]
    t = pw.debug.table_from_markdown("t\n" + "\n".join(map(str, times)))
    sessions = t.windowby(pw.this.t, window=pw.temporal.session(predicate=lambda a, b: b - a <= 2)).reduce(
        s=pw.this._pw_window_start, e=pw.this._pw_window_end, n=pw.reducers.count()
    )
    assert_rows(sessions, [(1, 2, 2), (5, 6, 2), (20, 20, 1)])
    with pytest.raises(pw.errors.PlanError, match="either max_gap= or predicate="):
        pw.temporal.session()
    assert_rows(t.select(**t, u=pw.this.t + 1), [(v, v + 1) for v in times])


WINDOW_JOIN_LEFT = """
x | t  | k
1 | 1  | 1
2 | 5  | 1
3 | 6  | 2
4 | 12 | 1
"""
WINDOW_JOIN_RIGHT = """
y  | t  | k
7  | 2  | 1
8  | 6  | 1
9  | 7  | 2
10 | 30 | 1
"""


def test_window_join_pairs_rows_per_window_and_keeps_unmatched_rows_per_window():
    # expected rows recorded with Pathway 0.33.0
    a, b = pw.debug.table_from_markdown(WINDOW_JOIN_LEFT), pw.debug.table_from_markdown(WINDOW_JOIN_RIGHT)
    joined = a.window_join_outer(b, a.t, b.t, pw.temporal.sliding(hop=2, duration=4), a.k == b.k)
    result = joined.select(a.x, b.y, pw.this.k, s=pw.this._pw_window_start)
    assert_rows(result, [
        (None, 8, 1, 6), (None, 10, 1, 28), (None, 10, 1, 30), (1, None, 1, -2), (1, 7, 1, 0), (2, 7, 1, 2),
        (2, 8, 1, 4), (3, 9, 2, 4), (3, 9, 2, 6), (4, None, 1, 10), (4, None, 1, 12),
    ])


def test_session_window_join_makes_sessions_from_both_tables_times():
    a, b = pw.debug.table_from_markdown(WINDOW_JOIN_LEFT), pw.debug.table_from_markdown(WINDOW_JOIN_RIGHT)
    joined = a.window_join_left(b, a.t, b.t, pw.temporal.session(max_gap=3), pw.left.k == pw.right.k)
    result = joined.select(a.x, b.y, pw.this.k, s=pw.this._pw_window_start, e=pw.this._pw_window_end)
    assert_rows(result, [(1, 7, 1, 1, 2), (2, 8, 1, 5, 6), (3, 9, 2, 6, 7), (4, None, 1, 12, 12)])


def test_window_join_refuses_times_and_windows_of_different_kinds_and_keys_of_different_types():
    a, b = pw.debug.table_from_markdown(WINDOW_JOIN_LEFT), pw.debug.table_from_markdown(WINDOW_JOIN_RIGHT)
    with pytest.raises(TypeError, match=r"Arguments \(left_time_expression, right_time_expression, window.hop\)"):
        a.window_join(b, a.t, b.t, pw.temporal.tumbling(dt.timedelta(days=1)))
    with pytest.raises(TypeError, match="Incompatible types in a join condition.\nThe types are: INT and STR"):
        a.window_join(b, a.t, b.t, pw.temporal.tumbling(2), a.k == b.k.to_string())


def test_windowby_refuses_times_and_windows_of_different_kinds():
    t = pw.debug.table_from_markdown("t\n1")
    with pytest.raises(TypeError, match=r"Arguments \(time_expr, window.hop, window.duration\) have to be of types"):
        t.windowby(t.t, window=pw.temporal.sliding(hop=dt.timedelta(seconds=1), duration=dt.timedelta(seconds=2)))


def test_join_results_group_and_reduce_like_tables():
    left, right = pw.debug.table_from_markdown(LEFT), pw.debug.table_from_markdown(RIGHT)
    joined = left.join(right, left.k == right.k)
    grouped = joined.groupby(pw.this.k).reduce(pw.this.k, n=pw.reducers.count(), bs=pw.reducers.sorted_tuple(right.b))
    assert_rows(grouped, [(2, 2, ("p", "p")), (4, 2, ("r", "s"))])
    assert_rows(joined.reduce(n=pw.reducers.count()), [(4,)])
    by_letter = joined.groupby(pw.left.a).reduce(pw.this.a, n=pw.reducers.count())
    assert_rows(by_letter, [("y", 1), ("z", 1), ("w", 2)])
    with pytest.raises(ValueError, match="group by pw.left.k or pw.right.k"):
        left.join_outer(right, left.k == right.k).groupby(pw.this.k)


def test_join_conditions_take_pathways_form():
    # Pathway's rules and words (recorded from Pathway 0.33): `left.col == right.col`, in that order
    a = pw.debug.table_from_markdown("k | x\n1 | 2")
    b = pw.debug.table_from_markdown("k | y\n1 | 3")
    with pytest.raises(ValueError, match="should be of form <left_table>.<column> == <right_table>.<column>"):
        a.join(b, a.k < b.k)
    with pytest.raises(ValueError, match="should be of form"):
        a.join(b, a.k + 1 == b.k)
    with pytest.raises(ValueError, match="not properly ordered"):
        a.join(b, b.k == a.k)
    with pytest.raises(ValueError, match="Right part of a join condition"):
        a.join(b, a.k == a.x)
    with pytest.raises(AssertionError):
        a.join(b, a.k == b.k, id=a.x)
    assert_rows(a.join(b, pw.left.k == pw.right.k).select(pw.left.x, pw.right.y), [(2, 3)])


def test_table_to_pandas_gives_pathways_dtypes():
    # recorded from Pathway 0.33: nullable Int64 for optional ints, objects for pointers
    t = pw.debug.table_from_markdown("a | e\n1 | 1\nNone | 2")
    frame = pw.debug.table_to_pandas(t.select(pw.this.a, pw.this.e, p=t.pointer_from(pw.this.e)))
    assert frame["a"].dtype == pd.Int64Dtype() and frame["e"].dtype == "int64" and frame["p"].dtype == object
    assert sorted(frame["a"].dropna().tolist()) == [1]


def test_float_sums_are_exact_and_custom_reducers_get_python_values():
    t = pw.debug.table_from_markdown("g | a | n\n1 | -10.1 | 1\n1 | -10.1 | 2\n1 | 1 | 3\n1 | 1 | 4\n1 | 10.1 | 5\n1 | 10.1 | 6")

    @pw.reducers.stateful_single
    def weighted(state: int | None, pair: tuple[int, int]) -> int:
        return (state or 0) + pair[0] * pair[1]

    result = t.groupby(pw.this.g).reduce(
        total=pw.reducers.sum(pw.this.a ** 21), weighted=weighted((pw.this.g, pw.this.n)),
    )
    # the correctly rounded sum (math.fsum), as Pathway's: adding floats in turn gives 0.0
    assert_rows(result, [(2.0, 21)])


def test_slices_refuse_unknown_columns_and_method_names():
    # Pathway's errors and words (recorded from Pathway 0.33)
    t = pw.debug.table_from_markdown("col | on\na | 11")
    with pytest.raises(KeyError, match=r"Column name 'foo' not found in a TableSlice\(\{'col': <table1>.col"):
        t.slice.without("foo")
    with pytest.raises(KeyError, match="Column name 'foo' not found"):
        t.slice.rename({"foo": "bar"})
    with pytest.raises(ValueError, match=r"'select' is a method name.*use \['select'\]"):
        t.slice.select


def test_windows_keep_the_rows_ids_for_reducers_and_float_windows_compare_as_pathway():
    t = pw.debug.table_from_markdown("t | a\n1 | 1\n2 | 2\n3 | 3")
    extremes = t.windowby(pw.this.t, window=pw.temporal.sliding(hop=1, duration=2)).reduce(
        start=pw.this._pw_window_start, min_id=pw.reducers.argmin(pw.this.a), ids=pw.reducers.sorted_tuple(pw.this.id),
    )
    # argmin and pw.this.id give the rows' own ids (not their copies' in the windows)
    looked_up = extremes.select(pw.this.start, a=t.ix(pw.this.min_id).a, n=pw.apply(len, pw.this.ids))
    assert_rows(looked_up, [(0, 1, 1), (1, 1, 2), (2, 2, 2), (3, 3, 1)])
    # 0.3 lies in [0.1, 0.4) and [0.2, 0.5) only: 0.0 + 0.3 is not above 0.3 (Pathway's answer)
    floats = pw.debug.table_from_markdown("t\n0.3")
    starts = floats.windowby(pw.this.t, window=pw.temporal.sliding(hop=0.1, duration=0.3)).reduce(s=pw.this._pw_window_start)
    assert [round(s, 9) for (s,) in rows(starts)] == [0.1, 0.2]
    # with ratio=, every time is in exactly that many windows
    counted = floats.windowby(pw.this.t, window=pw.temporal.sliding(hop=0.1, ratio=3)).reduce(s=pw.this._pw_window_start)
    assert len(rows(counted)) == 3


def test_promises_about_grouped_tables_are_about_their_groups():
    t1 = pw.debug.table_from_markdown("owner | age\nAlice | 10\nBob | 9\nAlice | 8")
    t2 = t1.filter(t1.age >= 9)
    g1, g2 = t1.groupby(t1.owner), t2.groupby(t2.owner)
    pw.universes.promise_is_subset_of(g2, g1)
    counts, oldest = g1.reduce(n=pw.reducers.count()), g2.reduce(oldest=pw.reducers.max(t2.age))
    # the promise lets the groups of t2 read the columns of t1's groups, by id
    assert_rows(oldest.select(pw.this.oldest, n=counts.restrict(oldest).n), [(10, 2), (9, 1)])
