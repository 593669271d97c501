"""Durations and date-times become integer nanoseconds exactly, everywhere."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tables import assert_rows

import sparkway as pw
from sparkway.core.durations import nanos, naive_of, timedelta_of, utc_of

EPOCH = dt.datetime(1970, 1, 1)


@given(st.integers(min_value=-(10**18), max_value=10**18))
def test_a_duration_is_its_exact_number_of_nanoseconds(n: int) -> None:
    assert nanos(dt.timedelta(microseconds=n // 1000)) == n // 1000 * 1000
    assert nanos(pd.Timedelta(n)) == n
    assert timedelta_of(n) == pd.Timedelta(n) and timedelta_of(n).value == n


@given(st.integers(min_value=1, max_value=10**9))
def test_millisecond_durations_have_no_rounding_error(ms: int) -> None:
    # int(total_seconds() * 1e9) is off for some of these, e.g. 1001 ms
    assert nanos(dt.timedelta(milliseconds=ms)) == ms * 1_000_000


@given(st.datetimes(min_value=dt.datetime(1700, 1, 1), max_value=dt.datetime(2260, 1, 1)), st.integers(0, 999))
def test_a_date_time_counts_nanoseconds_since_the_epoch(t: dt.datetime, below_micro: int) -> None:
    seconds = (t.toordinal() - EPOCH.toordinal()) * 86_400 + t.hour * 3600 + t.minute * 60 + t.second
    expected = seconds * 10**9 + t.microsecond * 1000
    assert nanos(t) == expected
    assert nanos(t.replace(tzinfo=dt.timezone.utc)) == expected
    with_nanos = pd.Timestamp(t) + pd.Timedelta(below_micro)
    assert nanos(with_nanos) == expected + below_micro
    assert naive_of(expected + below_micro) == with_nanos
    assert utc_of(expected) == pd.Timestamp(t, tz="UTC")


def test_date_times_beyond_64_bits_of_nanoseconds_are_refused() -> None:
    assert nanos(pd.Timestamp.max) == 2**63 - 1 and nanos(pd.Timestamp.min) == -(2**63) + 1
    for beyond in (dt.datetime(2262, 4, 12), dt.datetime(1677, 9, 21), dt.timedelta(days=106752)):
        with pytest.raises(OverflowError, match="1677-09-21 to 2262-04-11"):
            nanos(beyond)


def _floored(t: dt.datetime, step_ns: int) -> dt.datetime:
    """``t`` rounded down to a multiple of the step since the epoch, in integers."""
    ns = nanos(t)
    return naive_of(ns - ns % step_ns)


@pytest.mark.usefixtures("spark")
def test_dt_floor_by_milliseconds_is_a_multiple_of_the_duration_since_the_epoch() -> None:
    times = ["2024-01-01T00:00:00.001000", "2024-03-05T17:23:41.999999"]
    t = pw.debug.table_from_markdown("s\n" + "\n".join(times)).select(
        s=pw.this.s, t=pw.this.s.dt.strptime("%Y-%m-%dT%H:%M:%S.%f")
    )
    floored = t.select(pw.this.s, f=pw.this.t.dt.floor(dt.timedelta(milliseconds=1001)))
    expected = [(s, _floored(dt.datetime.fromisoformat(s), 1_001_000_000)) for s in times]
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
    starts = [_floored(dt.datetime(2024, 1, 1, 0, 0, 0, 1000), 1_001_000_000),
              _floored(dt.datetime(2024, 1, 1, 0, 0, 2, 500000), 1_001_000_000)]
    assert_rows(windows, [(s, s + width, 1) for s in starts])
