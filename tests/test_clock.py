"""Tables driven by the clock (``pw.temporal.utc_now``, ``Table.inactivity_detection``,
``Table.add_update_timestamp_utc``), ``Table.interpolate``, and how ``pw.debug`` prints
streams.

The clock is replaced by a debug table of ticks where a test needs exact times (as
Pathway's own tests do): a row's processing time is then its step's ``__time__``.
Expected outputs are worked out by hand from the rule each test names.
"""

from __future__ import annotations

import datetime
import os
import signal

import pytest
from tables import assert_changes, assert_rows, changes

import sparkway as pw
from sparkway.stdlib import time_utils

UTC = datetime.timezone.utc


def _ms(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000, UTC)


@pytest.fixture
def ticks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The clock ticks every ``refresh_rate`` from time 0 to 1,000 ms, at those times; the
    program starts at time 0."""

    def fake_utc_now(refresh_rate: datetime.timedelta) -> pw.Table:
        every = int(refresh_rate.total_seconds() * 1000)
        rows = [(ms, ms, 1) for ms in range(0, 1000, every)]
        stream = pw.debug.table_from_rows(pw.schema_from_types(ms=int), rows, is_stream=True)
        return stream.select(timestamp_utc=pw.this.ms.dt.utc_from_timestamp(unit="ms"))

    monkeypatch.setattr(time_utils, "utc_now", fake_utc_now)
    monkeypatch.setattr(time_utils, "_get_now_timestamp_utc", lambda _: _ms(0))


def _activity(times: list[tuple[str, int]]) -> pw.Table:
    rows = "\n".join(f"{who} | {ms}" for who, ms in times)
    return pw.debug.table_from_markdown(f"who | __time__\n{rows}")


def test_inactivity_detection_reports_a_gap_once_the_clock_passes_it(ticks: None) -> None:
    # rows at 0, 100 and 700; 250 ms allowed, the clock read every 200 ms: the gap after
    # 100 is seen at 400 (100 + 250 < 400), and it ends at 700
    found = _activity([("a", 0), ("a", 100), ("a", 700)]).inactivity_detection(
        datetime.timedelta(milliseconds=250), refresh_rate=datetime.timedelta(milliseconds=200)
    )
    assert [batch for batch in changes(found) if batch] == [
        [(_ms(100), None, 1)],
        [(_ms(100), None, -1), (_ms(100), _ms(700), 1)],
    ]


def test_inactivity_detection_per_instance_and_from_the_start(ticks: None) -> None:
    allowed, refresh = datetime.timedelta(milliseconds=150), datetime.timedelta(milliseconds=200)
    found = _activity([("a", 0), ("b", 600)]).inactivity_detection(allowed, refresh, instance=pw.this.who)
    # a is idle after 0 (seen at 200) and never resumes; b after 600 (seen at 800); b's
    # time before its first row is no gap of b's
    assert_rows(found, [("a", _ms(0), None), ("b", _ms(600), None)])
    empty = pw.Table.empty(who=str).inactivity_detection(allowed, refresh, instance=pw.this.who)
    # no row at all: an inactivity since the start (time 0), with no instance
    assert_rows(empty, [(None, _ms(0), None)])


def test_inactivity_detection_needs_an_append_only_table() -> None:
    t = pw.debug.table_from_markdown("v\n1").groupby(pw.this.v).reduce(pw.this.v)
    with pytest.raises(pw.errors.PlanError, match="append-only"):
        t.inactivity_detection(datetime.timedelta(seconds=1))


def test_add_update_timestamp_utc_stamps_rows_with_the_clock_when_they_change(ticks: None) -> None:
    t = pw.debug.table_from_markdown(
        """
          | v  | __time__ | __diff__
        1 | 10 |    0     |    1
        2 | 20 |    0     |    1
        1 | 10 |   250    |   -1
        1 | 11 |   250    |    1
        2 | 20 |   450    |   -1
        """
    )
    stamped = t.add_update_timestamp_utc(refresh_rate=datetime.timedelta(milliseconds=200))
    # the clock read at 0, 200, 400...: an update at 250 gets 200
    assert [batch for batch in changes(stamped) if batch] == [
        [(10, _ms(0), 1), (20, _ms(0), 1)],
        [(10, _ms(0), -1), (11, _ms(200), 1)],
        [(20, _ms(0), -1)],
    ]
    assert sorted(pw.debug.table_to_pandas(stamped).index) == sorted(pw.debug.table_to_pandas(t).index)


def test_utc_now_ticks_with_the_clock_until_the_run_is_stopped() -> None:
    seen: list[datetime.datetime] = []

    def on_change(key: int, row: dict, time: int, is_addition: bool) -> None:
        seen.append(row["timestamp_utc"])
        if len(seen) == 3:  # the run would go on forever: stop it as SIGINT does
            os.kill(os.getpid(), signal.SIGINT)

    before = datetime.datetime.now(UTC)
    pw.io.subscribe(pw.temporal.utc_now(refresh_rate=datetime.timedelta(milliseconds=300)), on_change)
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)
    assert len(seen) == 3 and before <= seen[0]
    gaps = [(b - a).total_seconds() for a, b in zip(seen, seen[1:])]
    assert all(gap >= 0.3 for gap in gaps), gaps


def test_interpolate_fills_missing_values_between_known_ones() -> None:
    t = pw.debug.table_from_markdown(
        """
          | t | a | b  | __time__
        1 | 3 | 6 |    |    2
        2 | 1 |   | 1  |    2
        3 | 4 |   |    |    2
        4 | 7 | 0 | 7  |    2
        5 | 5 | 2 |    |    4
        """
    )
    # in time order: t=1 (b=1), 3 (a=6), 4, 7 (a=0, b=7); from time 4 also t=5 (a=2),
    # which moves a at t=4 from 6 - 6/4 to halfway between 6 and 2
    filled = t.interpolate(pw.this.t, pw.this.a, pw.this.b)
    assert filled.typehints()["a"] == float | None
    assert_changes(filled, [
        [(1, 6.0, 1.0, 1), (3, 6.0, 3.0, 1), (4, 4.5, 4.0, 1), (7, 0.0, 7.0, 1)],
        [(4, 4.5, 4.0, -1), (4, 4.0, 4.0, 1), (5, 2.0, 5.0, 1)],
    ])
    with pytest.raises(ValueError, match="found a string"):
        t.interpolate(pw.this.t, "a")


def test_update_stream_is_printed_by_time_diff_and_values(capsys: pytest.CaptureFixture) -> None:
    held = pw.debug.table_from_markdown("k | v | __time__\n2 | b | 2\n1 | a | 2")
    pw.debug.compute_and_print_update_stream(held.buffer(pw.this.k, 5), include_id=False)
    # rows the buffer held until the input ended show Pathway's time of the end of input
    assert capsys.readouterr().out.splitlines()[1:] == [
        "1 | a | 18446744073709551614 | 1",
        "2 | b | 18446744073709551614 | 1",
    ]
    t = pw.debug.table_from_markdown("k | v | __time__ | __diff__\n2 | b | 2 | 1\n1 | a | 2 | 1\n1 | a | 4 | -1")
    pw.debug.compute_and_print_update_stream(t, include_id=False)
    assert capsys.readouterr().out.splitlines()[1:] == [
        "1 | a | 2        | 1", "2 | b | 2        | 1", "1 | a | 4        | -1",
    ]


def test_sliding_windows_have_pathways_window_key_and_ids() -> None:
    t = pw.debug.table_from_markdown("t | v\n1 | 10\n4 | 20")
    result = t.windowby(t.t, window=pw.temporal.sliding(hop=2, duration=4)).reduce(
        pw.this._pw_window, total=pw.reducers.sum(pw.this.v)
    )
    assert_rows(result, [((None, -2, 2), 10), ((None, 0, 4), 10), ((None, 2, 6), 20), ((None, 4, 8), 20)])
    ids = result.select(same=pw.this.id == result.pointer_from(
        pw.this._pw_window, pw.this._pw_window[1], pw.this._pw_window[2], pw.this._pw_window[0]))
    assert_rows(ids, [(True,)] * 4)
