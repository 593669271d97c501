"""Exact conversions between durations or date-times and integer nanoseconds.

As in Pathway, a ``DateTimeNaive``, a ``DateTimeUtc`` and a ``Duration`` are 64-bit
integers of nanoseconds: a naive date-time counts from 1970-01-01 (a wall-clock
reading), a UTC one from 1970-01-01 UTC (an instant), so the date-times that fit are
those from 1677-09-21 to 2262-04-11, as in pandas.  Users see them as pandas'
``Timestamp`` and ``Timedelta``, which keep nanoseconds.

``timedelta.total_seconds()`` is a float, and ``int(td.total_seconds() * 1e9)`` is off
for some durations (``timedelta(milliseconds=1001)``), so every conversion goes through
these functions, which use integer arithmetic only.
"""

from __future__ import annotations

import datetime as _dt
import re
from decimal import Decimal, InvalidOperation
from typing import Any

import pandas as pd
from dateutil.tz import tzutc

MICROSECOND = _dt.timedelta(microseconds=1)
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
#: the zone of the UTC date-times users get (pandas' ``Timestamp(..., tz=tzutc())``, as Pathway's)
UTC = tzutc()
#: the smallest and largest nanoseconds a value may hold (pandas keeps -2**63 for NaT)
LOWEST, HIGHEST = -(2**63) + 1, 2**63 - 1
RANGE_TEXT = "date-times from 1677-09-21 to 2262-04-11 and durations up to about 292 years"


def nanos(value: _dt.timedelta | _dt.datetime) -> int:
    """A duration in nanoseconds, or a date-time in nanoseconds since the epoch (naive
    date-times count from the naive epoch); pandas' Timestamps and Timedeltas keep their
    nanoseconds.  A value beyond 64 bits of nanoseconds is an OverflowError.

    >>> nanos(_dt.timedelta(milliseconds=1001)), nanos(pd.Timedelta(7))
    (1001000000, 7)
    >>> nanos(_dt.datetime(1970, 1, 1, 0, 0, 1)), nanos(pd.Timestamp("1970-01-01T00:00:00.000000012"))
    (1000000000, 12)
    """
    if isinstance(value, _dt.datetime):
        below_micro = getattr(value, "nanosecond", 0)
        if isinstance(value, pd.Timestamp):
            value = value.to_pydatetime(warn=False)
        span = value - (_EPOCH if value.tzinfo is None else _EPOCH_UTC)
    else:
        below_micro = getattr(value, "nanoseconds", 0)
        span = value
    count = (span // MICROSECOND) * 1000 + below_micro
    if not LOWEST <= count <= HIGHEST:
        raise OverflowError(f"{value} does not fit in 64 bits of nanoseconds ({RANGE_TEXT})")
    return count


def nanos_or_number(value: Any) -> Any:
    """``nanos`` of a duration or date-time; any other value (a number, None) as it is:
    window parameters may be numbers when times are numbers."""
    if isinstance(value, (_dt.timedelta, _dt.datetime)):
        return nanos(value)
    return value


def timedelta_of(count: int) -> pd.Timedelta:
    """The duration of ``count`` nanoseconds, as users see durations.

    >>> timedelta_of(1500)
    Timedelta('0 days 00:00:00.000001500')
    """
    return pd.Timedelta(count)


def naive_of(count: int) -> pd.Timestamp:
    """The naive date-time ``count`` nanoseconds after 1970-01-01.

    >>> naive_of(1)
    Timestamp('1970-01-01 00:00:00.000000001')
    """
    return pd.Timestamp(count)


def utc_of(count: int) -> pd.Timestamp:
    """The UTC date-time ``count`` nanoseconds after 1970-01-01 UTC."""
    return pd.Timestamp(count, tz=UTC)


# units of text durations, as pandas names them (its older one-letter aliases too), in nanoseconds
_UNITS = {
    **dict.fromkeys(("W", "w"), 7 * 86_400 * 10**9), **dict.fromkeys(("D", "d"), 86_400 * 10**9),
    **dict.fromkeys(("h", "H"), 3_600 * 10**9), **dict.fromkeys(("min", "T", "m"), 60 * 10**9),
    **dict.fromkeys(("s", "S"), 10**9), **dict.fromkeys(("ms", "L"), 10**6),
    **dict.fromkeys(("us", "U"), 10**3), **dict.fromkeys(("ns", "N"), 1),
}
# units of ``int.dt.to_duration(unit)``, as Pathway names them: nanoseconds per unit
NANOS_PER_UNIT = {
    **dict.fromkeys(("W",), 7 * 86_400 * 10**9),
    **dict.fromkeys(("D", "day", "days"), 86_400 * 10**9),
    **dict.fromkeys(("h", "hr", "hour", "hours"), 3_600 * 10**9),
    **dict.fromkeys(("m", "min", "minute", "minutes"), 60 * 10**9),
    **dict.fromkeys(("s", "sec", "second", "seconds"), 10**9),
    **dict.fromkeys(("ms", "millisecond", "milliseconds", "millis", "milli"), 10**6),
    **dict.fromkeys(("us", "microsecond", "microseconds", "micros", "micro"), 10**3),
    **dict.fromkeys(("ns", "nano", "nanos", "nanosecond", "nanoseconds"), 1),
}
_PART = re.compile(r"\s*(\d+(?:\.\d+)?)?\s*([A-Za-z]+)")


def parse(value: Any) -> Any:
    """A duration given as text (``"15min"``, ``"2h3min"``, ``"D"``, ``"10ns"``: a number
    and a unit, repeated; a unit alone counts once) as a ``pd.Timedelta``; other values
    as they are.

    >>> parse("2h3min") == _dt.timedelta(seconds=7380), parse("1.5us")
    (True, Timedelta('0 days 00:00:00.000001500'))
    """
    if not isinstance(value, str):
        return value
    total, position = 0, 0
    for part in _PART.finditer(value):
        number, unit = part.groups()
        if part.start() != position or unit not in _UNITS:
            raise ValueError(f"cannot read {value!r} as a duration: write it like '15min', '2h30min' or '1D'")
        try:
            total += int(Decimal(number or 1) * _UNITS[unit])  # exact: no float rounding
        except InvalidOperation:
            raise ValueError(f"cannot read {value!r} as a duration") from None
        position = part.end()
    if position != len(value) or position == 0:
        raise ValueError(f"cannot read {value!r} as a duration: write it like '15min', '2h30min' or '1D'")
    return timedelta_of(total)
