"""Exact conversions between durations or timestamps and integer microseconds.

Spark, Arrow and the engine count time in microseconds.  ``timedelta.total_seconds()``
is a float, and ``int(td.total_seconds() * 1e6)`` is one microsecond short for some
durations (``timedelta(milliseconds=1001)`` gives 1000999), so every conversion goes
through these functions, which use integer arithmetic only.
"""

from __future__ import annotations

import datetime as _dt
import re
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


# units of text durations, as pandas names them (its older one-letter aliases too)
_UNITS = {
    "W": _dt.timedelta(weeks=1), "w": _dt.timedelta(weeks=1), "D": _dt.timedelta(days=1),
    "d": _dt.timedelta(days=1), "h": _dt.timedelta(hours=1), "H": _dt.timedelta(hours=1),
    "min": _dt.timedelta(minutes=1), "T": _dt.timedelta(minutes=1), "m": _dt.timedelta(minutes=1),
    "s": _dt.timedelta(seconds=1), "S": _dt.timedelta(seconds=1), "ms": _dt.timedelta(milliseconds=1),
    "L": _dt.timedelta(milliseconds=1), "us": MICROSECOND, "U": MICROSECOND,
    "ns": _dt.timedelta(0), "N": _dt.timedelta(0),  # below sparkway's microsecond precision
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
    """A duration given as text (``"15min"``, ``"2h3min"``, ``"D"``: a number and a unit,
    repeated; a unit alone counts once) as a ``timedelta``; other values as they are.

    >>> parse("2h3min"), parse("D")
    (datetime.timedelta(seconds=7380), datetime.timedelta(days=1))
    """
    if not isinstance(value, str):
        return value
    total, position = _dt.timedelta(0), 0
    for part in _PART.finditer(value):
        number, unit = part.groups()
        if part.start() != position or unit not in _UNITS:
            raise ValueError(f"cannot read {value!r} as a duration: write it like '15min', '2h30min' or '1D'")
        total += _UNITS[unit] * float(number or 1)
        position = part.end()
    if position != len(value) or position == 0:
        raise ValueError(f"cannot read {value!r} as a duration: write it like '15min', '2h30min' or '1D'")
    return total


def duration(microseconds: int) -> _dt.timedelta:
    """The duration of an integer number of microseconds.

    >>> duration(1500)
    datetime.timedelta(microseconds=1500)
    """
    return _dt.timedelta(microseconds=microseconds)
