"""Durations and timestamps become integer microseconds exactly, everywhere."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tables import assert_rows

import sparkway as pw
from sparkway.core.durations import duration, micros

EPOCH = dt.datetime(1970, 1, 1)


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_a_duration_is_its_exact_number_of_microseconds(n: int) -> None:
    assert micros(dt.timedelta(microseconds=n)) == n
    assert duration(n) == dt.timedelta(microseconds=n)


@given(st.integers(min_value=1, max_value=10**9))
def test_millisecond_durations_have_no_rounding_error(ms: int) -> None:
    # int(total_seconds() * 1e6) is one short for some of these, e.g. 1001 ms
    assert micros(dt.timedelta(milliseconds=ms)) == ms * 1000


@given(st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1)))
def test_a_timestamp_counts_microseconds_since_the_epoch(t: dt.datetime) -> None:
    seconds = (t.toordinal() - EPOCH.toordinal()) * 86_400 + t.hour * 3600 + t.minute * 60 + t.second
    assert micros(t) == seconds * 1_000_000 + t.microsecond
    assert micros(t.replace(tzinfo=dt.timezone.utc)) == micros(t)


def _floored(t: dt.datetime, step_us: int) -> dt.datetime:
    """``t`` rounded down to a multiple of the step since the epoch, in integers."""
    us = micros(t)
    return EPOCH + dt.timedelta(microseconds=us - us % step_us)


@pytest.mark.usefixtures("spark")
def test_dt_floor_by_milliseconds_is_a_multiple_of_the_duration_since_the_epoch() -> None:
    times = ["2024-01-01T00:00:00.001000", "2024-03-05T17:23:41.999999"]
    t = pw.debug.table_from_markdown("s\n" + "\n".join(times)).select(
        s=pw.this.s, t=pw.this.s.dt.strptime("%Y-%m-%dT%H:%M:%S.%f")
    )
    floored = t.select(pw.this.s, f=pw.this.t.dt.floor(dt.timedelta(milliseconds=1001)))
    expected = [(s, _floored(dt.datetime.fromisoformat(s), 1_001_000)) for s in times]
    # as Pathway gives it: 2023-12-31 23:59:59.835 for the first
    assert expected[0][1] == dt.datetime(2023, 12, 31, 23, 59, 59, 835000)
    assert_rows(floored, expected)


@pytest.mark.usefixtures("spark")
def test_tumbling_windows_of_millisecond_durations_have_exact_bounds() -> None:
    t = pw.debug.table_from_markdown("s\n2024-01-01T00:00:00.001000\n2024-01-01T00:00:02.500000").select(
        at=pw.this.s.dt.strptime("%Y-%m-%dT%H:%M:%S.%f")
    )
    width = dt.timedelta(milliseconds=1001)
    windows = t.windowby(pw.this.at, window=pw.temporal.tumbling(duration=width)).reduce(
        start=pw.this._pw_window_start, end=pw.this._pw_window_end, n=pw.reducers.count()
    )
    starts = [_floored(dt.datetime(2024, 1, 1, 0, 0, 0, 1000), 1_001_000),
              _floored(dt.datetime(2024, 1, 1, 0, 0, 2, 500000), 1_001_000)]
    assert_rows(windows, [(s, s + width, 1) for s in starts])
