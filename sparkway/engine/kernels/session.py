"""Session windows: maximal runs of one instance's rows with gaps below ``max_gap``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkway.core.changes import ID
from sparkway.core.durations import micros_or_number


def _as_numbers(column: pa.ChunkedArray, max_gap: Any) -> tuple[np.ndarray, float]:
    """Times and gap on one numeric scale (microseconds for date-times)."""
    if pa.types.is_timestamp(column.type):
        micros = pc.cast(column, pa.timestamp("us", tz=column.type.tz)).cast(pa.int64())
        gap = float(micros_or_number(max_gap))
        return micros.to_numpy(), gap
    return column.to_numpy(), float(max_gap)


def sessionize(tables: list[pa.Table], params: Any) -> pa.Table:
    """Every row with ``_pw_window_start``/``_pw_window_end``: its session's first and
    last time, and ``_pw_instance``."""
    (max_gap, payload) = params
    (rows,) = tables
    rows = rows.sort_by([("_g", "ascending"), ("_t", "ascending"), (ID, "ascending")])
    groups = rows.column("_g").to_numpy()
    new_session = np.ones(len(groups), dtype=bool)
    if callable(max_gap):  # a user's predicate(earlier, later): called per consecutive pair
        times = rows.column("_t").to_pylist()
        together = [bool(max_gap(a, b)) for a, b in zip(times, times[1:])]
        new_session[1:] = (groups[1:] != groups[:-1]) | ~np.array(together, dtype=bool)
    else:
        numbers, gap = _as_numbers(rows.column("_t"), max_gap)
        new_session[1:] = (groups[1:] != groups[:-1]) | ((numbers[1:] - numbers[:-1]) >= gap)
    session = np.cumsum(new_session) - 1
    starts = np.flatnonzero(new_session)
    ends = np.append(starts[1:], len(groups)) - 1
    time_column = rows.column("_t")
    return pa.table(
        {
            "_g": rows.column("_g"),
            ID: rows.column(ID),
            **{name: rows.column(name) for name in payload},
            "_pw_instance": rows.column("_inst"),
            "_pw_window_start": pc.take(time_column, pa.array(starts[session])),
            "_pw_window_end": pc.take(time_column, pa.array(ends[session])),
        }
    )
