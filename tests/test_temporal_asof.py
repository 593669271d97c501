"""As-of joins (``asof_join*``) and as-of-now joins (``asof_now_join*``).

Every expected output here was recorded by running the same program with Pathway 0.33
(the oracle).  The tables avoid two rows of one table with the same time and keys: which
of them Pathway picks depends on its row ids, which sparkway's are not.
"""

from __future__ import annotations

import pytest
from tables import assert_changes, assert_rows

import sparkway as pw


def _tables() -> tuple[pw.Table, pw.Table]:
    t1 = pw.debug.table_from_markdown(
        """
           | K | val | t
         1 | 0 | 1   | 1
         2 | 0 | 2   | 4
         3 | 1 | 3   | 5
         4 | 0 | 4   | 7
         5 | 0 | 5   | 10
        """
    )
    t2 = pw.debug.table_from_markdown(
        """
           | K | val | t
        21 | 0 | 7   | 2
        22 | 0 | 3   | 4
        23 | 0 | 8   | 9
        24 | 1 | 5   | 9
        """
    )
    return t1, t2


# (instance, t, side, left val, right val) per row; recorded from Pathway
EXPECTED = {
    ("LEFT", "BACKWARD"): [(0, 1, False, 1, -1), (0, 10, False, 5, 8), (0, 4, False, 2, 3), (0, 7, False, 4, 3), (1, 5, False, 3, -1)],
    ("LEFT", "FORWARD"): [(0, 1, False, 1, 7), (0, 10, False, 5, -1), (0, 4, False, 2, 3), (0, 7, False, 4, 8), (1, 5, False, 3, 5)],
    ("LEFT", "NEAREST"): [(0, 1, False, 1, 7), (0, 10, False, 5, 8), (0, 4, False, 2, 3), (0, 7, False, 4, 8), (1, 5, False, 3, 5)],
    ("RIGHT", "BACKWARD"): [(0, 2, True, 1, 7), (0, 4, True, 2, 3), (0, 9, True, 4, 8), (1, 9, True, 3, 5)],
    ("RIGHT", "FORWARD"): [(0, 2, True, 2, 7), (0, 4, True, 2, 3), (0, 9, True, 5, 8), (1, 9, True, None, 5)],
    ("RIGHT", "NEAREST"): [(0, 2, True, 1, 7), (0, 4, True, 2, 3), (0, 9, True, 5, 8), (1, 9, True, 3, 5)],
    # in outer joins a row at the same time as a row of the other table (t=4) is matched
    # with it one way only: the left row sorts first, so it sees the right one forward
    ("OUTER", "BACKWARD"): [
        (0, 1, False, 1, -1), (0, 10, False, 5, 8), (0, 2, True, 1, 7), (0, 4, False, 2, 7), (0, 4, True, 2, 3),
        (0, 7, False, 4, 3), (0, 9, True, 4, 8), (1, 5, False, 3, -1), (1, 9, True, 3, 5),
    ],
    ("OUTER", "FORWARD"): [
        (0, 1, False, 1, 7), (0, 10, False, 5, -1), (0, 2, True, 2, 7), (0, 4, False, 2, 3), (0, 4, True, 4, 3),
        (0, 7, False, 4, 8), (0, 9, True, 5, 8), (1, 5, False, 3, 5), (1, 9, True, None, 5),
    ],
}


@pytest.mark.parametrize("how, direction", list(EXPECTED))
def test_asof_join_pairs_each_row_with_the_nearest_row_in_the_direction(how: str, direction: str) -> None:
    t1, t2 = _tables()
    result = t1.asof_join(
        t2, t1.t, t2.t, t1.K == t2.K, how=getattr(pw.JoinMode, how),
        direction=getattr(pw.temporal.Direction, direction), defaults={t2.val: -1},
    ).select(pw.this.instance, pw.this.t, pw.this.side, lv=t1.val, rv=t2.val)
    assert_rows(result, EXPECTED[how, direction])


def test_asof_join_with_instances_and_without_defaults() -> None:
    t1, t2 = _tables()
    result = t1.asof_join_outer(t2, pw.left.t, pw.right.t, left_instance=t1.K, right_instance=t2.K).select(
        pw.this.instance, pw.this.t, lv=pw.left.val, rv=pw.right.val
    )
    assert_rows(result, [
        (0, 1, 1, None), (0, 10, 5, 8), (0, 2, 1, 7), (0, 4, 2, 3), (0, 4, 2, 7), (0, 7, 4, 3), (0, 9, 4, 8),
        (1, 5, 3, None), (1, 9, 3, 5),
    ])


def test_asof_join_without_keys_nearest_on_computed_times() -> None:
    t1, t2 = _tables()
    result = t1.asof_join_right(t2, t1.t * 2, t2.t * 2, direction=pw.temporal.Direction.NEAREST).select(
        pw.this.instance, at=pw.this.t, **pw.right, lt=pw.left.t
    )
    # Pathway puts the columns of **pw.right after the other named ones
    assert result.column_names() == ["instance", "at", "lt", "K", "val", "t"]
    assert_rows(result, [(None, 18, 10, 0, 8, 9), (None, 18, 10, 1, 5, 9), (None, 4, 1, 0, 7, 2), (None, 8, 4, 0, 3, 4)])


def test_asof_join_column_types_are_optional_where_a_row_may_be_missing() -> None:
    t1, t2 = _tables()
    left = t1.asof_join_left(t2, t1.t, t2.t, t1.K == t2.K).select(lv=t1.val, rv=t2.val)
    defaulted = t1.asof_join_left(t2, t1.t, t2.t, defaults={t2.val: -1}).select(rv=t2.val)
    outer = t1.asof_join_outer(t2, t1.t, t2.t).select(pw.this.t, pw.this.side, lv=t1.val)
    assert [str(t) for t in left.schema._dtypes().values()] == ["int", "Optional[int]"]
    assert [str(t) for t in defaulted.schema._dtypes().values()] == ["int"]
    assert [str(t) for t in outer.schema._dtypes().values()] == ["int", "bool", "Optional[int]"]


def test_asof_join_updates_a_match_when_a_late_row_arrives_or_leaves() -> None:
    t1 = pw.debug.table_from_markdown(
        """
        value | event_time | __time__
          2   |      2     |     4
          3   |      5     |     6
          4   |      1     |     8
          5   |      7     |    14
        """
    )
    t2 = pw.debug.table_from_markdown(
        """
        id | value | event_time | __time__ | __diff__
         1 |   42  |      1     |     2    |    1
         2 |    8  |      4     |    10    |    1
         2 |    8  |      4     |    12    |   -1
         3 |    9  |      6     |    12    |    1
        """
    )
    result = t1.asof_join_left(t2, t1.event_time, t2.event_time).select(
        lv=t1.value, rv=t2.value, lt=t1.event_time, rt=t2.event_time
    )
    assert_changes(result, [
        [],  # time 2: no left rows yet
        [(2, 42, 2, 1, 1)],
        [(3, 42, 5, 1, 1)],
        [(4, 42, 1, 1, 1)],
        [(3, 42, 5, 1, -1), (3, 8, 5, 4, 1)],  # the late row at time 4 is nearer
        [(3, 8, 5, 4, -1), (3, 42, 5, 1, 1)],  # it left; the row at time 6 is after 5
        [(5, 9, 7, 6, 1)],
    ])


def test_asof_join_refuses_inner_joins_and_times_of_different_kinds() -> None:
    t1, t2 = _tables()
    with pytest.raises(pw.errors.PlanError, match="left, right or outer"):
        t1.asof_join(t2, t1.t, t2.t, how=pw.JoinMode.INNER)
    dates = pw.Table.empty(t=pw.DateTimeNaive)
    with pytest.raises(TypeError, match=r"Arguments \(t_left, t_right\) have to be of types"):
        t1.asof_join_left(dates, t1.t, dates.t)


def _stream() -> tuple[pw.Table, pw.Table]:
    data = pw.debug.table_from_markdown(
        """
        id | value | instance | __time__ | __diff__
         2 |   4   |    1     |     4    |     1
         3 |   7   |    1     |     4    |     1
         2 |   4   |    1     |    10    |    -1
         5 |   5   |    1     |    10    |     1
         7 |   2   |    2     |    14    |     1
        """
    )
    queries = pw.debug.table_from_markdown(
        """
        value | instance | __time__
          1   |    1     |     2
          2   |    1     |     4
          4   |    1     |    10
          5   |    2     |    16
          6   |    3     |    16
        """
    )
    return data, queries


@pytest.mark.parametrize("how", ["INNER", "LEFT"])
def test_asof_now_join_answers_each_query_with_the_data_of_its_time_only(how: str) -> None:
    data, queries = _stream()
    result = queries.asof_now_join(data, queries.instance == data.instance, how=getattr(pw.JoinMode, how)).select(
        query=pw.left.value, ans=pw.right.value
    )
    # a query sees the data changes of its own time; later changes do not update it
    unmatched = how == "LEFT"
    assert_changes(result, [
        [(1, None, 1)] if unmatched else [],  # time 2
        [(2, 4, 1), (2, 7, 1)],
        [(4, 5, 1), (4, 7, 1)],
        [],  # time 14: data only
        [(5, 2, 1), *([(6, None, 1)] if unmatched else [])],
    ])


def test_asof_now_join_with_left_ids_keeps_the_queries_universe() -> None:
    data, queries = _stream()
    result = queries.asof_now_join_left(data, pw.left.instance == pw.right.instance, id=pw.left.id).select(
        pw.left.value, ans=pw.right.value
    )
    assert result._universe is queries._universe
    # so the queries' own operations read the result's columns
    assert queries.select(pw.this.value, ans=result.ans).column_names() == ["value", "ans"]
