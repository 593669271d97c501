"""``pw.io.register_input_synchronization_group``: read several inputs in step with each
other, by the values of one column of each (the engine side is
``engine/synchronization.py``)."""

from __future__ import annotations

import dataclasses
import datetime
import math
from typing import Any

from sparkway.api.graph import source_of
from sparkway.api.table import Table
from sparkway.connectors.base import Synchronization
from sparkway.core import dtypes as dt
from sparkway.core.durations import nanos
from sparkway.core.expression import ColumnRef
from sparkway.errors import PlanError

#: a duration given as a number of seconds or as a ``datetime.timedelta`` (``pw.Duration``)
DurationLike = int | float | datetime.timedelta

_SUPPORTED = (dt.INT, dt.DATE_TIME_NAIVE, dt.DATE_TIME_UTC, dt.DURATION)
_TIMES = (dt.DATE_TIME_NAIVE, dt.DATE_TIME_UTC, dt.DURATION)


@dataclasses.dataclass(frozen=True)
class SynchronizedColumn:
    """A column of a synchronization group with its settings
    (``pw.io.register_input_synchronization_group``).

    ``priority``: a row of this column's table is read only once every source of higher
    priority has read up to its value (default 0: all sources alike).  ``idle_duration``
    (seconds, or a ``datetime.timedelta``): after this long without input, the source
    holds nobody back until it has input again (default None: it always takes part).

    >>> import sparkway as pw
    >>> class Logins(pw.Schema):
    ...     at: int
    >>> logins = pw.io.jsonlines.read("logins/", schema=Logins)
    >>> pw.io.SynchronizedColumn(logins.at, priority=1, idle_duration=10)  # doctest: +ELLIPSIS
    SynchronizedColumn(column=<table...>.at, priority=1, idle_duration=10)
    """

    column: ColumnRef
    priority: int = 0
    idle_duration: DurationLike | None = None


def register_input_synchronization_group(
    *columns: ColumnRef | SynchronizedColumn, max_difference: Any, name: str = "default",
) -> None:
    """Reads the tables of ``columns`` (each an unchanged table of an input connector,
    one column per table, at least two) so that the largest values read from the columns
    never differ by more than ``max_difference``: a source that is ahead is held back
    until the others catch up, a source behind is read on.

    The columns have one type, ``int``, ``pw.DateTimeNaive``, ``pw.DateTimeUtc`` or
    ``pw.Duration``; ``max_difference`` is an int for ints and a ``datetime.timedelta``
    otherwise.  Columns may be ``pw.io.SynchronizedColumn``s, with a priority and an idle
    duration.  Calls with the same ``name`` add to one group.  Rows are held back a
    transaction at a time (a file, a commit of a Python subject), in the order they were
    read; a source that has finished (static mode) holds nobody back.

    >>> import sparkway as pw
    >>> class Event(pw.Schema):
    ...     at: int
    >>> logins = pw.io.jsonlines.read("logins/", schema=Event)
    >>> payments = pw.io.jsonlines.read("payments/", schema=Event)
    >>> pw.io.register_input_synchronization_group(logins.at, payments.at, max_difference=600)
    """
    if len(columns) < 2:
        raise ValueError("At least two columns must participate in a connector group")
    if not isinstance(max_difference, (int, datetime.timedelta)):
        raise ValueError("The 'max_difference' must either be an integer or a datetime.timedelta")
    if max_difference < (0 if isinstance(max_difference, int) else datetime.timedelta(0)):
        raise ValueError("The 'max_difference' can't be negative")
    difference = int(max_difference) if isinstance(max_difference, int) else nanos(max_difference)
    types = set()
    for item in columns:
        column, priority, idle = (item, 0, None) if isinstance(item, ColumnRef) else (
            item.column, item.priority, item.idle_duration)
        idle_s = None if idle is None else duration_seconds(idle, "idle_duration")
        kind = _column_type(column)
        types.add(kind)
        _check_type(column, kind, max_difference)
        source = _input_source(column)
        _check_priority(priority)
        if source.synchronization is not None:
            raise ValueError("Only one column from a table can be used in a synchronization group")
        source.synchronization = Synchronization(name, column.name, difference, int(priority), idle_s)
    if len(types) > 1:
        raise ValueError(
            "All synchronization group column types must coincide. However several types have been detected: "
            + ", ".join(sorted(f"'{dt.engine_name(t)}'" for t in types))
        )


def duration_seconds(value: Any, parameter: str) -> float:
    """A duration parameter given as seconds (int or float) or a ``datetime.timedelta``,
    in seconds; refused when it is of another type, negative or not finite.

    >>> duration_seconds(datetime.timedelta(milliseconds=1500), "idle_duration")
    1.5
    """
    if isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise TypeError(f"'{parameter}' must be a number of seconds (int or float) or a datetime.timedelta, "
                        f"got {type(value).__name__}")
    if not math.isfinite(seconds):
        raise ValueError(f"'{parameter}' must be finite, got {value!r}")
    if seconds < 0:
        raise ValueError(f"'{parameter}' must be non-negative, got {value!r}")
    return seconds


def _column_type(column: ColumnRef) -> dt.DType:
    table = column.table
    if not isinstance(table, Table):
        raise PlanError(f"{column!r} names no table: give the column of an input table, e.g. table.{column.name}")
    if column.name == "id" and "id" not in table._node.columns:
        return table._id_type
    return table._node.columns[column.name]


def _check_type(column: ColumnRef, kind: dt.DType, max_difference: Any) -> None:
    hint = dt.pathway_annotation(kind)
    if kind not in _SUPPORTED:
        raise ValueError(f"Fields of type {hint} are not supported in connector groups")
    if isinstance(max_difference, int) and kind != dt.INT:
        raise ValueError(
            "If max_difference is an integer value, the values of a column must have a type of int. "
            f"However, the column '{column}' has type '{hint}'"
        )
    if isinstance(max_difference, datetime.timedelta) and kind not in _TIMES:
        raise ValueError(
            "If max_difference is a Duration, the values of a column must either have a type of DateTimeUtc, "
            f"DateTimeNaive or Duration. However, the column '{column}' has type '{hint}'"
        )


def _input_source(column: ColumnRef) -> Any:
    """The source of the column's table, which must be an input connector's table as read."""
    source = source_of(column.table)
    if source is None or not source.synchronizable:
        raise ValueError("Only unchanged columns of an input tables can be used in input synchronization groups")
    return source


def _check_priority(priority: Any) -> None:
    """Priorities are unsigned 64-bit integers in Pathway; refused as it refuses them."""
    if not isinstance(priority, int):
        raise TypeError(f"'{type(priority).__name__}' object cannot be interpreted as an integer")
    if priority < 0:
        raise OverflowError("can't convert negative int to unsigned")
    if priority >= 2**64:
        raise OverflowError("int too big to convert")
