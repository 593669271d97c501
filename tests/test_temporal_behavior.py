"""Event-time gates (``ignore_late``, ``forget``, ``buffer``), temporal behaviors of windows
and interval joins, ``intervals_over``, and interval joins' corner cases.

Expected changes are worked out by hand from the rule each test names (the current time
of a gate is the largest event time of the steps before; a buffer's includes the step);
they agree with Pathway 0.33 (the oracle), where a test says "recorded", they were
recorded from it.  ``changes`` gives one list per step of the input (times 2, 4, 6...),
and one more for the last step after the input ended when a buffer holds rows.
"""

from __future__ import annotations

import datetime

import pytest
from tables import assert_changes, assert_rows

import sparkway as pw


def _events() -> pw.Table:
    return pw.debug.table_from_markdown(
        """
        a |  t | __time__
        1 |  2 |     2
        1 |  3 |     2
        2 |  4 |     2
        1 |  5 |     4
        2 |  8 |     4
        3 |  1 |     6
        1 | 15 |     8
        2 |  9 |     8
        1 |  7 |    10
        """
    )


def test_ignore_late_drops_rows_late_against_the_time_before_their_step() -> None:
    # now before each step: -, 4, 8, 8, 15; a row passes when t + 2 > now
    assert_changes(_events().ignore_late(pw.this.t, 2), [
        [(1, 2, 1), (1, 3, 1), (2, 4, 1)],  # 2 + 2 <= 4 only after this step
        [(1, 5, 1), (2, 8, 1)],
        [],  # 1 + 2 <= 8
        [(1, 15, 1), (2, 9, 1)],
        [],  # 7 + 2 <= 15
    ])


def test_forget_retracts_rows_at_the_next_step_after_the_time_reached_them() -> None:
    assert_changes(_events().forget(pw.this.t, 2), [
        [(1, 2, 1), (1, 3, 1), (2, 4, 1)],
        [(1, 2, -1), (1, 5, 1), (2, 8, 1)],  # now 4 reached 2 + 2
        [(1, 3, -1), (1, 5, -1), (2, 4, -1)],  # now 8; the late row (3, 1) never comes
        [(1, 15, 1), (2, 9, 1)],
        [(2, 8, -1), (2, 9, -1)],  # now 15
    ])


def test_buffer_holds_rows_until_the_time_of_their_step_reaches_them() -> None:
    assert_changes(_events().buffer(pw.this.t, 2), [
        [(1, 2, 1)],  # now 4 (this step's rows included)
        [(1, 3, 1), (1, 5, 1), (2, 4, 1)],  # now 8
        [(3, 1, 1)],
        [(2, 8, 1), (2, 9, 1)],  # now 15
        [(1, 7, 1)],
        [(1, 15, 1)],  # the input ended
    ])


def test_buffer_per_instance_measures_the_time_of_each_instance() -> None:
    held = _events()._buffer(pw.this.t + 2, pw.this.t, instance_column=pw.this.a)
    assert_changes(held, [
        [],  # instance 1 is at 3, instance 2 at 4
        [(1, 2, 1), (1, 3, 1), (2, 4, 1)],  # 1 at 5, 2 at 8
        [],  # 3 at 1
        [(1, 5, 1)],  # 1 at 15, 2 at 9
        [(1, 7, 1)],
        [(1, 15, 1), (2, 8, 1), (2, 9, 1), (3, 1, 1)],
    ])


def test_buffer_cancels_a_held_row_retracted_before_its_release() -> None:
    t = pw.debug.table_from_markdown(
        """
          | x | __time__ | __diff__
        1 | 1 |     2    |     1
        2 | 5 |     4    |     1
        2 | 5 |     6    |    -1
        3 | 9 |     8    |     1
        """
    )
    assert_changes(t.buffer(pw.this.x, 2), [[], [(1, 1)], [], [], [(9, 1)]])


def _values() -> pw.Table:
    return pw.debug.table_from_markdown(
        """
         t | v  | __time__
         1 | 10 |     2
         3 | 20 |     4
         6 | 30 |     6
         2 | 40 |     8
         7 | 50 |     8
        12 | 60 |    10
        """
    )


def _sums(behavior: object) -> pw.Table:
    t = _values()
    return t.windowby(t.t, window=pw.temporal.tumbling(5), behavior=behavior).reduce(
        pw.this._pw_window_start, total=pw.reducers.sum(pw.this.v)
    )


def test_window_cutoff_ignores_rows_of_closed_windows_and_keeps_results() -> None:
    # at time 8 the time before is 6 >= 5 + 0: window [0, 5) takes no more rows
    assert_changes(_sums(pw.temporal.common_behavior(cutoff=0)), [
        [(0, 10, 1)], [(0, 10, -1), (0, 30, 1)], [(5, 30, 1)], [(5, 30, -1), (5, 80, 1)], [(10, 60, 1)],
    ])


def test_window_cutoff_without_keep_results_retracts_closed_windows() -> None:
    assert_changes(_sums(pw.temporal.common_behavior(cutoff=0, keep_results=False)), [
        [(0, 10, 1)], [(0, 10, -1), (0, 30, 1)], [(5, 30, 1)],
        [(0, 30, -1), (5, 30, -1), (5, 80, 1)],  # window [0, 5) forgotten
        [(10, 60, 1)],
    ])


def test_exactly_once_gives_each_window_once_when_time_passes_its_end() -> None:
    assert_changes(_sums(pw.temporal.exactly_once_behavior()), [
        [], [], [(0, 30, 1)], [], [(5, 80, 1)], [(10, 60, 1)],  # the last one when the input ends
    ])


def test_interval_join_behavior_forgets_old_rows_of_each_side() -> None:
    # Pathway's test_forgetting: the second rows 0..2 of each side are late (cutoff 2),
    # and without keep_results the pairs of forgotten rows are retracted (recorded)
    rows = "\n".join(f"{t} | {2 * (k + 1)}" for k, t in enumerate([0, 1, 2, 3, 4] * 2))
    t1 = pw.debug.table_from_markdown("t | __time__\n" + rows)
    t2 = pw.debug.table_from_markdown("t | __time__\n" + rows)
    joined = t1.interval_join(
        t2, t1.t, t2.t, pw.temporal.interval(0, 0),
        behavior=pw.temporal.common_behavior(0, 2, keep_results=False),
    ).select(left_t=pw.left.t, right_t=pw.right.t)
    assert_rows(joined, [(3, 3)] * 4 + [(4, 4)] * 4)


def test_interval_join_reads_times_through_left_and_right_and_pads_outer_rows() -> None:
    t1 = pw.debug.table_from_markdown("a | t\n1 | 0\n2 | 1")
    t2 = pw.debug.table_from_markdown("b | t\n1 | 9\n2 | 10")
    joined = t1.interval_join_outer(t2, pw.left.t, pw.right.t, pw.temporal.interval(-1, 2)).select(
        pw.left.a, pw.right.b
    )
    assert_rows(joined, [(1, None), (2, None), (None, 1), (None, 2)])  # no pair is close enough


def test_intervals_over_groups_rows_around_each_point() -> None:
    t = pw.debug.table_from_markdown("t | v\n1 | 10\n2 | 1\n3 | 3\n8 | 2\n9 | 4\n10 | 8")
    points = pw.debug.table_from_markdown("p\n2\n6\n10")
    window = pw.temporal.intervals_over(at=points.p, lower_bound=-2, upper_bound=1)
    result = t.windowby(t.t, window=window).reduce(
        pw.this._pw_window_location, v=pw.reducers.sorted_tuple(pw.this.v), n=pw.reducers.count()
    )
    # [0, 3], [4, 7] (no rows: one row of Nones, as Pathway's outer windows), [8, 11]
    assert_rows(result, [(2, (1, 3, 10), 3), (6, (None,), 1), (10, (2, 4, 8), 3)])


def test_interval_join_of_a_table_with_itself_asks_for_a_copy() -> None:
    t = pw.debug.table_from_markdown("a | t\n1 | 0")
    with pytest.raises(ValueError, match=r"Use <table>.copy\(\)"):
        t.interval_join(t, t.t, t.t, pw.temporal.interval(-1, 0))


def test_windows_over_utc_date_times() -> None:
    t = pw.debug.table_from_markdown(
        """
        t                         | a
        2023-05-15T10:13:00+02:00 | 1
        2023-05-15T10:14:00+02:00 | 2
        2023-05-15T10:26:00+02:00 | 4
        2023-05-15T10:31:23+02:00 | 5
        2023-05-15T11:00:20+02:00 | 6
        """
    ).with_columns(t=pw.this.t.dt.strptime("%Y-%m-%dT%H:%M:%S%z"))
    result = t.windowby(t.t, window=pw.temporal.tumbling(datetime.timedelta(minutes=30))).reduce(
        low=pw.reducers.min(pw.this.a), high=pw.reducers.max(pw.this.a)
    )
    # windows from 08:00, 08:30 and 09:00 UTC
    assert_rows(result, [(1, 4), (5, 5), (6, 6)])
