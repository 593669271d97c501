"""``pw.statistical``: ``interpolate`` (also ``Table.interpolate``).

Missing values are filled in from the nearest known values before and after them in
time order.  The whole table is gathered into one row (``pw.utils.col``'s functions over
all rows), sorted and filled in one pass: every change costs the whole table, so this
is meant for small tables (Pathway's costs a round per missing value in a row).
"""

from __future__ import annotations

import bisect
import enum
from typing import Any

from sparkway.api.table import Table
from sparkway.core.expression import ColumnRef
from sparkway.stdlib.utils.col import multiapply_all_rows

__all__ = ["InterpolateMode", "interpolate"]


class InterpolateMode(enum.Enum):
    """How ``interpolate`` fills a missing value: ``LINEAR``, on the line between the
    nearest known values before and after it."""

    LINEAR = 0


def interpolate(self: Table, timestamp: Any, *values: Any, mode: InterpolateMode = InterpolateMode.LINEAR) -> Table:
    """The table with the missing values (None) of the ``values`` columns filled in: on
    the line between the nearest known values before and after them in ``timestamp``
    order, or the only one of these two there is.  The columns hold floats.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("t | v\\n1 | 1\\n2 |\\n4 | 7\\n5 |")
    >>> pw.debug.compute_and_print(t.interpolate(pw.this.t, pw.this.v), include_id=False)
    t | v
    1 | 1.0
    2 | 3.0
    4 | 7.0
    5 | 7.0
    """
    if mode != InterpolateMode.LINEAR:
        raise ValueError("interpolate: Invalid mode. Only Interpolate.LINEAR is currently available.")
    timestamp = _column(self, timestamp, "timestamp")
    columns = [_column(self, value, "value") for value in values]
    if not columns:
        return self
    names = [c.name for c in columns]
    filled = multiapply_all_rows(timestamp, *columns, fun=_filled, result_col_names=names)
    kinds = {name: float | None for name in names}
    return self.with_columns(**{name: filled[name] for name in names}).update_types(**kinds)


def _filled(times: list[Any], *columns: list[Any]) -> list[list[float | None]]:
    """Each column with its missing values filled in, the rows taken in time order."""
    order = sorted(range(len(times)), key=lambda i: times[i])
    return [_filled_column([times[i] for i in order], [column[i] for i in order], order) for column in columns]


def _filled_column(times: list[Any], values: list[Any], order: list[int]) -> list[float | None]:
    """The values (in time order) filled in, put back in the rows' order."""
    known = [i for i, v in enumerate(values) if v is not None]
    out: list[float | None] = [None] * len(values)
    for position, (t, v) in enumerate(zip(times, values)):
        k = bisect.bisect_left(known, position)
        before = known[k - 1] if k > 0 else None
        after = known[k] if k < len(known) else None
        if v is not None:
            value = v
        elif before is None or after is None:
            nearest = before if after is None else after
            value = values[nearest] if nearest is not None else None
        else:
            slope = (values[after] - values[before]) / (times[after] - times[before])
            value = values[before] + (t - times[before]) * slope
        out[order[position]] = float(value) if value is not None else None
    return out


def _column(table: Table, column: Any, what: str) -> ColumnRef:
    """``column`` as a column of ``table``, or Pathway's error for anything else."""
    if isinstance(column, ColumnRef):
        return table[column.name]
    if isinstance(column, str):
        raise ValueError(
            f"Table.interpolate(): Invalid column reference for the parameter {what}, found a string. "
            f"Did you mean this.{column} instead of {column!r}?"
        )
    raise ValueError(f"Table.interpolate(): Invalid column reference for the parameter {what}.")
