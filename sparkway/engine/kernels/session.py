"""Session windows: maximal runs of one instance's rows with gaps below ``max_gap``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkway.core.changes import ID
from sparkway.core.durations import nanos_or_number


def sessionize(tables: list[pa.Table], params: Any) -> pa.Table:
    """Every row with ``_pw_window_start``/``_pw_window_end``: its session's first and
    last time, and ``_pw_instance``.  ``params``: the gap (or a predicate), how to give
    the predicate times, the columns holding the time and the instance, and the input's
    columns (passed through)."""
    (max_gap, as_python, time_column, instance_column, payload) = params
    (rows,) = tables
    rows = rows.sort_by([("_g", "ascending"), (time_column, "ascending"), (ID, "ascending")])
    groups = rows.column("_g").to_numpy()
    new_session = np.ones(len(groups), dtype=bool)
    if callable(max_gap):  # a user's predicate(earlier, later): called per consecutive pair
        times = [as_python(t) for t in rows.column(time_column).to_pylist()]
        together = [bool(max_gap(a, b)) for a, b in zip(times, times[1:])]
        new_session[1:] = (groups[1:] != groups[:-1]) | ~np.array(together, dtype=bool)
    else:
        # times are numbers, or date-times in nanoseconds (and then the gap a duration)
        times = rows.column(time_column).to_numpy()
        gap = nanos_or_number(max_gap)
        new_session[1:] = (groups[1:] != groups[:-1]) | ((times[1:] - times[:-1]) >= gap)
    session = np.cumsum(new_session) - 1
    starts = np.flatnonzero(new_session)
    ends = np.append(starts[1:], len(groups)) - 1
    time_values = rows.column(time_column)
    return pa.table(
        {
            "_g": rows.column("_g"),
            ID: rows.column(ID),
            **{name: rows.column(name) for name in payload},
            "_pw_instance": rows.column(instance_column),
            "_pw_window_start": pc.take(time_values, pa.array(starts[session])),
            "_pw_window_end": pc.take(time_values, pa.array(ends[session])),
        }
    )
