"""Values as text, the way Pathway writes them (``.to_string()``, printed tables).

Pathway's engine formats values with Rust's rules, which differ from Python's ``str`` in
a few places: a float's exponent has no ``+`` and no leading zeros (``2.5e20``,
``1e-5``), not-a-number is ``NaN``, timestamps show nine fraction digits, durations read
``-16m -39s``.

>>> text_of(2.5e20), text_of(1e-05), text_of(float("nan")), text_of(float("-inf")), text_of(None), text_of(True)
('2.5e20', '1e-5', 'NaN', '-inf', 'None', 'True')
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkway.core import durations
from sparkway.core.dtypes import Json

_EXPONENT = re.compile(r"e\+?(-?)0*(\d)")
# a duration's parts, largest first, in nanoseconds
_DURATION_PARTS = (("d", 86_400 * 10**9), ("h", 3_600 * 10**9), ("m", 60 * 10**9), ("s", 10**9))


def text_of(value: Any) -> str:
    """``value`` as Pathway's ``to_string`` writes it."""
    if isinstance(value, float):
        return "NaN" if value != value else _EXPONENT.sub(r"e\1\2", repr(value))
    if isinstance(value, dt.datetime):
        return date_time_text(value)
    if isinstance(value, dt.timedelta):
        return duration_text(value)
    if isinstance(value, Json):
        return json.dumps(value.value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def float_texts(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``text_of`` of every float of ``values`` (nulls stay null).  Arrow writes the same
    shortest digits as Python's ``repr`` a hundred times faster, but chooses the
    exponent form by other rules: its text is kept where it has no exponent and Python
    would write none either (then ``1`` becomes ``1.0``); Python writes the others
    (magnitudes under 1e-4 or from 1e16, NaN, infinities, and where Arrow wrote one).

    >>> float_texts(pa.array([2.5e20, 1e-05, 0.5, 3.0, -0.0, 64747282728.39381, float("nan"), None])).to_pylist()
    ['2.5e20', '1e-5', '0.5', '3.0', '-0.0', '64747282728.39381', 'NaN', None]
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    values = values.cast(pa.float64())
    texts = pc.cast(values, pa.string())
    magnitude = pc.abs(values)
    by_python = pc.fill_null(pc.or_(
        pc.or_(pc.invert(pc.is_finite(values)), pc.match_substring(texts, "e")),
        pc.or_(pc.and_(pc.less(magnitude, 1e-4), pc.not_equal(magnitude, 0)), pc.greater_equal(magnitude, 1e16)),
    ), False)
    texts = pc.if_else(pc.match_substring_regex(texts, r"^-?\d+$"), pc.binary_join_element_wise(texts, ".0", ""), texts)
    if not pc.any(by_python).as_py():
        return texts
    return pc.replace_with_mask(texts, by_python, pa.array([text_of(v) for v in values.filter(by_python).to_pylist()],
                                                          pa.string()))


def pointer_text(row_id: int, *, short: bool = False) -> str:
    """A row id as sparkway writes it: ``^`` and its 16 hex digits (the first 8 in
    printed tables, where Pathway shortens its ids too).

    >>> pointer_text(-1), pointer_text(255, short=True)
    ('^FFFFFFFFFFFFFFFF', '^00000000')
    """
    digits = f"{row_id & 0xFFFFFFFFFFFFFFFF:016X}"
    return "^" + (digits[:8] if short else digits)


def date_time_text(value: dt.datetime) -> str:
    """``2024-01-02T03:04:05.123456789``: nine fraction digits (a pandas Timestamp's
    nanoseconds too), and ``+0000`` after a UTC date-time, which is shown in UTC.

    >>> date_time_text(dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone(dt.timedelta(hours=1))))
    '2024-01-02T02:04:05.000006000+0000'
    """
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc)
    text = value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond:06d}{getattr(value, 'nanosecond', 0):03d}"
    return text + "+0000" if value.tzinfo is not None else text


_EPOCH = dt.datetime(1970, 1, 1)


def nanos_text(count: int) -> str:
    """``date_time_text`` of the date-time ``count`` nanoseconds after 1970-01-01 (no zone).

    >>> nanos_text(-1)
    '1969-12-31T23:59:59.999999999'
    """
    seconds, fraction = divmod(count, 10**9)
    return (_EPOCH + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.") + f"{fraction:09d}"


def duration_text(value: dt.timedelta) -> str:
    """``-16m -39s``: days, hours, minutes, seconds, then nanoseconds, each with the
    duration's sign; zero parts are left out (so zero is the empty text).

    >>> duration_text(dt.timedelta(minutes=-16, seconds=-39)), duration_text(durations.timedelta_of(1_000_000_005))
    ('-16m -39s', '1s 5ns')
    """
    count = durations.nanos(value)
    sign = -1 if count < 0 else 1
    left = abs(count)
    parts = []
    for unit, size in _DURATION_PARTS:
        whole, left = divmod(left, size)
        if whole:
            parts.append(f"{sign * whole}{unit}")
    if left:
        parts.append(f"{sign * left}ns")
    return " ".join(parts)
