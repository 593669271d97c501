"""``pw.temporal.utc_now``, ``Table.inactivity_detection`` and
``Table.add_update_timestamp_utc``: tables driven by the clock.

``utc_now`` is a source that ticks (``sparkway.connectors.clock``): a program reading it
runs until it is stopped, as Pathway's does.  The time a row of a table was processed is
the time of its step (``processing_time``): the clock's, or a debug table's ``__time__``.
"""

from __future__ import annotations

import datetime
import functools
from typing import Any

from sparkway.api import reducers
from sparkway.api.functions import coalesce
from sparkway.api.table import Table
from sparkway.api.temporal import clock_table
from sparkway.api.thisclass import left, right, this
from sparkway.core.expression import Call, Const
from sparkway.errors import PlanError

__all__ = ["add_update_timestamp_utc", "inactivity_detection", "utc_now"]


@functools.cache
def utc_now(
    refresh_rate: datetime.timedelta = datetime.timedelta(seconds=60),
    initial_delay: datetime.timedelta = datetime.timedelta(seconds=0),
) -> Table:
    """A table that gets a row ``timestamp_utc`` with the current UTC time every
    ``refresh_rate`` (the first one ``initial_delay`` after the run starts); it never
    ends.  The same arguments give the same table.

    >>> import datetime, sparkway as pw
    >>> pw.temporal.utc_now(refresh_rate=datetime.timedelta(seconds=1)).column_names()
    ['timestamp_utc']
    """
    return clock_table(refresh_rate.total_seconds(), initial_delay.total_seconds())


def _get_now_timestamp_utc(for_test_only: Any) -> datetime.datetime:
    """The current UTC time on the driver (where the program is built)."""
    return datetime.datetime.now(tz=datetime.timezone.utc)


def _processed_at() -> Call:
    """When a row was processed: the time of its step, as a UTC date-time."""
    return Call("processing_time", (), ())


def inactivity_detection(
    self: Table,
    allowed_inactivity_period: datetime.timedelta,
    refresh_rate: datetime.timedelta = datetime.timedelta(seconds=1),
    instance: Any = None,
) -> Table:
    """Periods longer than ``allowed_inactivity_period`` in which this (append-only)
    table got no row, per ``instance`` when given: ``inactivity_timestamp_utc`` (when
    the last row came before the period) and ``resumed_activity_timestamp_utc`` (when
    the next one came; None while the period lasts).  The clock is read every
    ``refresh_rate``, so a period is reported up to that much late.  A period from the
    start of the run without any row has the ``instance`` None.

    >>> import datetime, sparkway as pw
    >>> t = pw.debug.table_from_markdown("v | __time__\\n1 | 2")
    >>> t.inactivity_detection(datetime.timedelta(seconds=5)).column_names()
    ['inactivity_timestamp_utc', 'resumed_activity_timestamp_utc']
    """
    if not self.is_append_only:
        raise PlanError("inactivity_detection watches the rows added to a table: the table must be append-only")
    now = utc_now(refresh_rate=refresh_rate).reduce(now_utc=reducers.latest(this.timestamp_utc))
    keyed = self.select(instance=instance if instance is not None else Const(None), at=_processed_at())
    last_activity = keyed.groupby(this.instance).reduce(this.instance, at=reducers.latest(this.at))
    started = _get_now_timestamp_utc(None)
    overdue = (
        last_activity.join_right(now)
        .select(left.instance, at=coalesce(left.at, started), now_utc=right.now_utc)
        .filter(this.at + allowed_inactivity_period < this.now_utc)
        .select(this.instance, inactivity_timestamp_utc=this.at)
    )
    periods = overdue._remove_retractions().groupby(this.instance, this.inactivity_timestamp_utc).reduce(
        this.instance, this.inactivity_timestamp_utc
    )
    activity_after = (
        periods.groupby(this.instance)
        .reduce(this.instance, inactivity_timestamp_utc=reducers.max(this.inactivity_timestamp_utc))
        .join_inner(last_activity, left.instance == right.instance)
        .select(left.instance, left.inactivity_timestamp_utc, resumed=right.at)
        .filter(this.inactivity_timestamp_utc < this.resumed)
    )
    resumed = activity_after._remove_retractions().groupby(this.instance, this.inactivity_timestamp_utc).reduce(
        this.instance, this.inactivity_timestamp_utc, resumed_activity_timestamp_utc=reducers.earliest(this.resumed)
    )
    result = periods.join_left(
        resumed, left.instance == right.instance, left.inactivity_timestamp_utc == right.inactivity_timestamp_utc
    ).select(left.instance, left.inactivity_timestamp_utc, right.resumed_activity_timestamp_utc)
    return result if instance is not None else result.without(this.instance)


def add_update_timestamp_utc(
    self: Table,
    refresh_rate: datetime.timedelta = datetime.timedelta(seconds=1),
    update_timestamp_column_name: str = "updated_timestamp_utc",
) -> Table:
    """This table with a column holding when each row was last inserted or updated (the
    clock read every ``refresh_rate``, so up to that much early); ids are kept.

    >>> import datetime, sparkway as pw
    >>> t = pw.debug.table_from_markdown("v\\n1")
    >>> t.add_update_timestamp_utc(datetime.timedelta(seconds=1)).column_names()
    ['v', 'updated_timestamp_utc']
    """
    now = utc_now(refresh_rate=refresh_rate).reduce(now_utc=reducers.latest(this.timestamp_utc))
    changes = self.with_columns(_pw_row_id=this.id).to_stream()
    started = datetime.datetime.now(tz=datetime.timezone.utc)
    stamped = changes.asof_now_join_left(now).select(
        *left, **{update_timestamp_column_name: coalesce(right.now_utc, started)}
    )
    table = stamped.stream_to_table(this.is_upsert).without(this.is_upsert)
    return table.with_id(this._pw_row_id).without(this._pw_row_id)
