"""Exact conversions between durations or timestamps and integer microseconds.

Spark, Arrow and the engine count time in microseconds.  ``timedelta.total_seconds()``
is a float, and ``int(td.total_seconds() * 1e6)`` is one microsecond short for some
durations (``timedelta(milliseconds=1001)`` gives 1000999), so every conversion goes
through these functions, which use integer arithmetic only.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

MICROSECOND = _dt.timedelta(microseconds=1)
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def micros(value: _dt.timedelta | _dt.datetime) -> int:
    """A duration in microseconds, or a timestamp in microseconds since the epoch
    (naive timestamps count from the naive epoch).

    >>> micros(_dt.timedelta(milliseconds=1001))
    1001000
    >>> micros(_dt.datetime(1970, 1, 1, 0, 0, 1))
    1000000
    """
    if isinstance(value, _dt.datetime):
        return (value - (_EPOCH if value.tzinfo is None else _EPOCH_UTC)) // MICROSECOND
    return value // MICROSECOND


def micros_or_number(value: Any) -> Any:
    """``micros`` of a duration or timestamp; any other value (a number, None) as it is:
    window parameters may be numbers when times are numbers."""
    if isinstance(value, (_dt.timedelta, _dt.datetime)):
        return micros(value)
    return value


def parse(value: Any) -> Any:
    """A duration given as text in pandas' notation (``"15min"``, ``"2h"``) as a
    ``timedelta``; any other value as it is.

    >>> parse("15min")
    datetime.timedelta(seconds=900)
    """
    if not isinstance(value, str):
        return value
    import pandas as pd  # only for text durations: pandas is slow to import

    return pd.Timedelta(value).to_pytimedelta()


def duration(microseconds: int) -> _dt.timedelta:
    """The duration of an integer number of microseconds.

    >>> duration(1500)
    datetime.timedelta(microseconds=1500)
    """
    return _dt.timedelta(microseconds=microseconds)
