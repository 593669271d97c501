"""Values as text, the way Pathway writes them (``.to_string()``, printed tables).

Pathway's engine formats values with Rust's rules, which differ from Python's ``str`` in
a few places: a float's exponent has no ``+`` and no leading zeros (``2.5e20``,
``1e-5``), timestamps show nine fraction digits, durations read ``-16m -39s``.

>>> text_of(2.5e20), text_of(1e-05), text_of(None), text_of(True)
('2.5e20', '1e-5', 'None', 'True')
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from sparkway.core.dtypes import Json

_EXPONENT = re.compile(r"e\+?(-?)0*(\d)")
# a duration's parts, largest first, in microseconds
_DURATION_PARTS = (("d", 86_400_000_000), ("h", 3_600_000_000), ("m", 60_000_000), ("s", 1_000_000))


def text_of(value: Any) -> str:
    """``value`` as Pathway's ``to_string`` writes it."""
    if isinstance(value, float):
        return _EXPONENT.sub(r"e\1\2", repr(value))
    if isinstance(value, dt.datetime):
        text = value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond:06d}000"
        return text + value.strftime("%z") if value.tzinfo is not None else text
    if isinstance(value, dt.timedelta):
        return duration_text(value)
    if isinstance(value, Json):
        return json.dumps(value.value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def duration_text(value: dt.timedelta) -> str:
    """``-16m -39s``: days, hours, minutes, seconds, then nanoseconds, each with the
    duration's sign; zero parts are left out (so zero is the empty text)."""
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    sign = -1 if micros < 0 else 1
    left = abs(micros)
    parts = []
    for unit, size in _DURATION_PARTS:
        count, left = divmod(left, size)
        if count:
            parts.append(f"{sign * count}{unit}")
    if left:
        parts.append(f"{sign * left * 1000}ns")
    return " ".join(parts)
