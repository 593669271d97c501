"""``pw.temporal``: windows for ``table.windowby(time, window=..., instance=...)`` and
``table.window_join(other, time, other_time, window, ...)``; the directions of
``table.asof_join`` (``sparkway/api/asof.py``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable

from sparkway.core import dtypes as dt
from sparkway.core.dtypes import DType
from sparkway.core.expression import (
    BinOp, Call, ColumnRef, Const, Expr, IfElse, MakeTuple, transform, wrap,
)
from sparkway.core.type_rules import infer
from sparkway.errors import PlanError, PlanTypeError
from sparkway.plan import nodes as n


def _window_columns(table: Any, time_type: dt.DType, instance: Any) -> dict[str, dt.DType]:
    instance_type = infer(table._bind(instance), [table._node.columns]) if instance is not None else dt.INT.with_optional()
    return {"_pw_instance": instance_type, "_pw_window_start": time_type, "_pw_window_end": time_type}


def _grouped(windowed: Any, original: Any, instance: Any) -> Any:
    """The rows grouped by window: by ``_pw_window`` (where the rows have it, the window as
    one value), its start and end, and the instance, so that a window's result has the
    id ``pointer_from`` gives these values, as in Pathway."""
    from sparkway.api.table import GroupedTable

    names = ("_pw_window", "_pw_window_start", "_pw_window_end", "_pw_instance")
    if "_pw_window" not in windowed._node.columns:
        names = ("_pw_instance", "_pw_window_start", "_pw_window_end")
    keys = [(name, ColumnRef(n.InputRef(0), name)) for name in names]
    aliases = {instance.name: "_pw_instance"} if isinstance(instance, ColumnRef) else {}
    row_ids = _ROW_IDS if _ROW_IDS in windowed._node.columns else None
    return GroupedTable(windowed, keys, aliases, row_ids=row_ids, windows=True)


#: the column of a copy of a row in a window that holds the row's own id
_ROW_IDS = "_pw_row_id"


@dataclass(frozen=True)
class SessionWindow:
    """Sessions: maximal runs of rows whose consecutive times are less than ``max_gap``
    apart (or, when ``max_gap`` is a function, for which it says so)."""

    max_gap: Any

    def assign(self, table: Any, time_expr: Expr, instance: Any, behavior: Any = None) -> Any:
        """The rows grouped by session (``behavior`` is accepted and not applied, as in Pathway)."""
        return _grouped(self._windowed(table, time_expr, instance), table, instance)

    def _windowed(self, table: Any, time_expr: Expr, instance: Any) -> Any:
        time = table._bind(time_expr)
        time_type = infer(time, [table._node.columns]).with_optional(False)
        columns = {**table._node.columns, **_window_columns(table, time_type, instance)}
        node = n.SessionWindow(columns, table._node, time, table._bind(instance) if instance is not None else None, self.max_gap)
        return table._derive(node, equivalent=table)

    def type_parameters(self) -> dict[str, Any]:
        return {} if callable(self.max_gap) else {"max_gap": self.max_gap}

    def join_sides(self, left: Any, right: Any, left_time: Expr, right_time: Expr, on: tuple) -> tuple[Any, Any]:
        """Both tables, each row with the session it is in: sessions are made of the
        times of both tables together, per value of the join keys."""
        from sparkway.api.table import join_keys

        left_keys, right_keys = join_keys(left, right, on)
        rows = [
            side.select(_pw_time=time, _pw_key=MakeTuple(tuple(keys)), _pw_side=index, _pw_row=side.id)
            for index, (side, time, keys) in enumerate(((left, left_time, left_keys), (right, right_time, right_keys)))
        ]
        sessions = self._windowed(rows[0].concat_reindex(rows[1]), ColumnRef(n.InputRef(0), "_pw_time"), ColumnRef(n.InputRef(0), "_pw_key"))
        sides = []
        for index, side in enumerate((left, right)):
            mine = sessions.filter(ColumnRef(n.InputRef(0), "_pw_side") == index)
            joined = side.join(mine, side.id == ColumnRef(mine, "_pw_row"), id=side.id).select(
                *(ColumnRef(side, c) for c in side._node.columns),
                _pw_window_start=ColumnRef(mine, "_pw_window_start"), _pw_window_end=ColumnRef(mine, "_pw_window_end"),
            )
            sides.append(_with_window_tuple(joined, side))
        return sides[0], sides[1]


@dataclass(frozen=True)
class SlidingWindow:
    """Windows of length ``duration`` starting every ``hop`` (tumbling: hop == duration)."""

    hop: Any
    duration: Any
    origin: Any = None
    ratio: int | None = None  # given as a number of hops (tumbling: 1): each time is in that many

    def assign(self, table: Any, time_expr: Expr, instance: Any, behavior: Any = None) -> Any:
        """Each row once per window it is in, grouped by window, through ``behavior``'s gates."""
        windowed = self._windowed(table, time_expr, instance)
        if isinstance(behavior, ExactlyOnceBehavior):  # one result per window, when it is complete
            shift = behavior.shift if behavior.shift is not None else _zero_like(self.duration)
            behavior = CommonBehavior(self.duration + shift, shift, True)
        if behavior is not None:
            windowed = _window_behavior(windowed, table._bind(time_expr), behavior)
        return _grouped(_with_window_key(windowed, table), table, instance)

    def _windowed(self, table: Any, time_expr: Expr, instance: Any) -> Any:
        time = table._bind(time_expr)
        time_type = infer(time, [table._node.columns]).with_optional(False)
        starts = Call("window.starts", (time,), (self.hop, self.duration, self.origin, self.ratio))
        instance_expr = table._bind(instance) if instance is not None else Const(None)
        with_starts = table._derive(
            n.Select(
                {**table._node.columns, "_pw_instance": infer(instance_expr, [table._node.columns]),
                 "_pw_window_start": dt.DType("list", (time_type,))},
                table._node,
                tuple((c, ColumnRef(n.InputRef(0), c)) for c in table._node.columns)
                + (("_pw_instance", instance_expr), ("_pw_window_start", starts)),
            )
        )
        flat = with_starts.flatten("_pw_window_start", origin_id=_ROW_IDS)
        end = BinOp("+", ColumnRef(n.InputRef(0), "_pw_window_start"), Const(self.duration))
        columns = {**flat._node.columns, "_pw_window_end": time_type}
        exprs = tuple((c, ColumnRef(n.InputRef(0), c)) for c in flat._node.columns) + (("_pw_window_end", end),)
        return table._derive(n.Select(columns, flat._node, exprs), equivalent=table)

    def type_parameters(self) -> dict[str, Any]:
        given = {"hop": self.hop} if self.hop == self.duration else {"hop": self.hop, "duration": self.duration}
        return given if self.origin is None else {**given, "origin": self.origin}

    def join_sides(self, left: Any, right: Any, left_time: Expr, right_time: Expr, on: tuple) -> tuple[Any, Any]:
        """Each table with one row per window its rows are in."""
        return tuple(  # type: ignore[return-value]
            _with_window_tuple(self._windowed(side, time, None).without("_pw_instance"), side)
            for side, time in ((left, left_time), (right, right_time))
        )


@dataclass(frozen=True)
class IntervalsOverWindow:
    """One window per value of ``at``: the rows whose time is within
    ``[at + lower_bound, at + upper_bound]`` (``is_outer``: also a window without rows)."""

    at: Any
    lower_bound: Any
    upper_bound: Any
    is_outer: bool

    def assign(self, table: Any, time_expr: Expr, instance: Any, behavior: Any = None) -> Any:
        """The rows of each window (an interval join of the points with the table),
        grouped by window, ordered by time (``pw.reducers.tuple`` lists them so)."""
        from sparkway.api.table import GroupedTable, JoinMode

        points = self.at.table.select(_pw_at=self.at)
        how = JoinMode.LEFT if self.is_outer else JoinMode.INNER
        joined = points.interval_join(
            table, points._pw_at, time_expr, interval(self.lower_bound, self.upper_bound), how=how
        )
        location = ColumnRef(points, "_pw_at")
        windows = joined.select(
            **{c: ColumnRef(table, c) for c in table._node.columns},
            _pw_window_location=location,
            _pw_window_start=location + self.lower_bound,
            _pw_window_end=location + self.upper_bound,
            _pw_instance=_on_side(instance, table) if instance is not None else None,
            _pw_key=_on_side(time_expr, table),
            **{_ROW_IDS: ColumnRef(table, "id")},
        )
        names = ("_pw_window_location", "_pw_window_start", "_pw_window_end", "_pw_instance")
        keys = [(name, ColumnRef(n.InputRef(0), name)) for name in names]
        aliases = {instance.name: "_pw_instance"} if isinstance(instance, ColumnRef) else {}
        return GroupedTable(windows, keys, aliases, sort_by=ColumnRef(n.InputRef(0), "_pw_key"), row_ids=_ROW_IDS, windows=True)

    def type_parameters(self) -> dict[str, Any]:
        return {"lower_bound": self.lower_bound, "upper_bound": self.upper_bound}


def _on_side(expr: Any, table: Any) -> Expr:
    """``expr`` over ``table``, with ``pw.this`` read as ``table``."""
    from sparkway.api.thisclass import this

    return transform(wrap(expr), lambda e: ColumnRef(table, e.name) if isinstance(e, ColumnRef) and e.table is this else None)


def intervals_over(*, at: Any, lower_bound: Any, upper_bound: Any, is_outer: bool = True) -> IntervalsOverWindow:
    """Windows around points: for each value ``p`` of the column ``at`` (of any table),
    the rows whose time is within ``[p + lower_bound, p + upper_bound]``; ``windowby``'s
    ``_pw_window_location`` is ``p``.  With ``is_outer``, a point without rows has a
    window too (its reducers see one row of Nones).

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("t | v\\n1 | 10\\n2 | 1\\n5 | 3")
    >>> points = pw.debug.table_from_markdown("p\\n2\\n5")
    >>> pw.debug.compute_and_print(t.windowby(
    ...     t.t, window=pw.temporal.intervals_over(at=points.p, lower_bound=-1, upper_bound=0)
    ... ).reduce(pw.this._pw_window_location, v=pw.reducers.tuple(pw.this.v)), include_id=False)
    _pw_window_location | v
    2                   | (10, 1)
    5                   | (3,)
    """
    return IntervalsOverWindow(at, lower_bound, upper_bound, is_outer)


def windowby(table: Any, time_expr: Any, *, window: Any, behavior: Any = None, instance: Any = None) -> Any:
    """``table.windowby(time_expr, window=..., behavior=..., instance=...)``."""
    return table.windowby(time_expr, window=window, behavior=behavior, instance=instance)


def _window_behavior(windowed: Any, time: Expr, behavior: "CommonBehavior") -> Any:
    """The rows of windows (one per row and window) through the gates of ``behavior``:
    rows of windows ending ``cutoff`` before the current time are ignored; rows wait
    until the time reaches their window's start plus ``delay``; without
    ``keep_results``, the rows of a window are forgotten (and its result retracted)
    once the time reaches its end plus ``cutoff``.

    With ``keep_results``, nothing is forgotten: a window whose rows would be is
    ignored from then on, so its result cannot change anyway (Pathway forgets the rows
    to free memory and hides the retractions that follows)."""
    start, end = (ColumnRef(n.InputRef(0), c) for c in ("_pw_window_start", "_pw_window_end"))
    delays = _delays(behavior.delay)
    forgets = behavior.cutoff is not None and not behavior.keep_results
    if behavior.cutoff is not None and (delays or not forgets):
        windowed = windowed._gate("ignore_late", end + behavior.cutoff, time, None, equivalent=True)
    if delays:
        opening = start + behavior.delay
        windowed = windowed._gate("buffer", opening, time, None, equivalent=True)
        time = IfElse(time > opening, time, opening)  # a released row is as late as its release
    if forgets:  # without a buffer between, one gate does the ignore_late's work too
        mode = "forget" if delays else "late_forget"
        windowed = windowed._gate(mode, end + behavior.cutoff, time, None, equivalent=True)
    return windowed


def _delays(delay: Any) -> bool:
    """Whether a ``delay`` holds rows back: a row's time is always reached (by itself),
    so a delay of zero or less lets every row through at once."""
    return delay is not None and delay > _zero_like(delay)


def _zero_like(duration: Any) -> Any:
    """A zero of the kind of ``duration`` (0, 0.0 or a zero timedelta)."""
    return duration * 0


def with_behavior(table: Any, time: Expr, behavior: "CommonBehavior | None") -> Any:
    """One side of an interval join through the gates of ``behavior`` (by the side's
    ``time``): late rows ignored (``cutoff``), rows delayed (``delay``), rows forgotten
    ``cutoff`` after the current time passed them unless ``keep_results``.

    With ``keep_results`` rows are not forgotten, which Pathway does to free memory while
    keeping the results: there, a forgotten row no longer meets new rows of the other
    side that are not late themselves; here it still does."""
    if behavior is None:
        return table
    if not isinstance(behavior, CommonBehavior):
        raise PlanError(f"an interval join takes pw.temporal.common_behavior(...), not {behavior!r}")
    if _delays(behavior.delay):
        table = table._gate("buffer", wrap(time) + behavior.delay, time, None, equivalent=True)
    if behavior.cutoff is not None:
        mode = "ignore_late" if behavior.keep_results else "late_forget"
        table = table._gate(mode, wrap(time) + behavior.cutoff, time, None, equivalent=True)
    return table


def clock_table(refresh_s: float, initial_delay_s: float = 0.0) -> Any:
    """A table that gets a row ``timestamp_utc`` (the current UTC time) every ``refresh_s``
    seconds, and never ends (``pw.temporal.utc_now``)."""
    from sparkway.api.graph import table_from_source
    from sparkway.connectors.clock import ClockSource

    return table_from_source(ClockSource(refresh_s, initial_delay_s))


def asof_behavior(table: Any, time: Expr, behavior: "CommonBehavior | None") -> Any:
    """One side of an as-of join through the gates of ``behavior`` (by the side's
    ``time``), as Pathway applies them: rows delayed (``delay``), late rows ignored and
    old rows forgotten (``cutoff``); with ``keep_results`` the forgetting is marked, and
    the join's results of it are filtered out (``filter_out_results_of_forgetting``), so
    a forgotten row only stops being a peer of new rows."""
    if behavior is None:
        return table
    if not isinstance(behavior, CommonBehavior):
        raise PlanError(f"an asof join takes pw.temporal.common_behavior(...), not {behavior!r}")
    if behavior.delay is not None:
        table = table._gate("buffer", wrap(time) + behavior.delay, time, None, equivalent=True)
    if behavior.cutoff is not None and behavior.keep_results:
        table = table._gate("ignore_late", wrap(time) + behavior.cutoff, time, None, equivalent=True)
        table = table._gate("forget_marked", wrap(time) + behavior.cutoff, time, None, equivalent=True)
    elif behavior.cutoff is not None:
        table = table._gate("late_forget", wrap(time) + behavior.cutoff, time, None, equivalent=True)
    return table


def _with_window_key(windowed: Any, original: Any) -> Any:
    """``windowed`` with ``_pw_window`` = (instance, start, end): Pathway's value naming a
    sliding window."""
    parts = tuple(ColumnRef(n.InputRef(0), c) for c in ("_pw_instance", "_pw_window_start", "_pw_window_end"))
    window = MakeTuple(parts)
    columns = {**windowed._node.columns, "_pw_window": infer(window, [windowed._node.columns])}
    exprs = tuple((c, ColumnRef(n.InputRef(0), c)) for c in windowed._node.columns) + (("_pw_window", window),)
    return original._derive(n.Select(columns, windowed._node, exprs), equivalent=original)


def _with_window_tuple(windowed: Any, original: Any) -> Any:
    """``windowed`` with ``_pw_window`` = (start, end), answering for ``original``'s columns."""
    start, end = (ColumnRef(n.InputRef(0), c) for c in ("_pw_window_start", "_pw_window_end"))
    window = MakeTuple((start, end))
    columns = {**windowed._node.columns, "_pw_window": infer(window, [windowed._node.columns])}
    exprs = tuple((c, ColumnRef(n.InputRef(0), c)) for c in windowed._node.columns) + (("_pw_window", window),)
    return original._derive(n.Select(columns, windowed._node, exprs), equivalent=original)


def check_window_types(window: Any, times: dict[str, tuple[Any, Expr]]) -> None:
    """Times (by argument name: ``table, time``) must be numbers with number parameters,
    or date-times of one kind with durations (and an origin of that kind)."""
    check_time_types(times, {f"window.{name}": value for name, value in window.type_parameters().items()})


def check_time_types(times: dict[str, tuple[Any, Expr]], parameters: dict[str, Any] | None = None) -> None:
    """Times (by argument name: ``table, time``) must be numbers with number ``parameters``
    (by argument name), or date-times of one kind with durations (and an origin of that
    kind); the error is worded as Pathway words it."""
    parameters = parameters or {}
    kinds = [infer(table._bind(time), [table._node.columns]).with_optional(False) for table, time in times.values()]
    given = {name: dt.dtype_of_value(value) for name, value in parameters.items()}
    numbers = all(k in (dt.INT, dt.FLOAT) for k in (*kinds, *given.values()))
    dates = len(set(kinds)) == 1 and kinds[0] in (dt.DATE_TIME_NAIVE, dt.DATE_TIME_UTC) and all(
        kind == (kinds[0] if name.endswith("origin") else dt.DURATION) for name, kind in given.items()
    )
    if numbers or dates:
        return

    def allowed(time_kind: DType) -> str:
        parameter_kind = dt.DURATION if time_kind in (dt.DATE_TIME_NAIVE, dt.DATE_TIME_UTC) else time_kind
        kinds_in_order = [time_kind] * len(times) + [time_kind if p.endswith("origin") else parameter_kind for p in parameters]
        return f"({', '.join(dt.engine_name(k) for k in kinds_in_order)})"

    wanted = " or ".join(allowed(k) for k in (dt.INT, dt.FLOAT, dt.DATE_TIME_NAIVE, dt.DATE_TIME_UTC))
    found = ", ".join(dt.engine_name(k) for k in (*kinds, *given.values()))
    raise PlanTypeError(f"Arguments ({', '.join([*times, *parameters])}) have to be of types {wanted} but are of types ({found}).")


class Behavior:
    """What temporal operators do with late rows and when they give results: see
    ``common_behavior`` and ``exactly_once_behavior``."""


@dataclass(frozen=True)
class CommonBehavior(Behavior):
    """``delay``, ``cutoff`` and ``keep_results`` of ``common_behavior``."""

    delay: Any
    cutoff: Any
    keep_results: bool


@dataclass(frozen=True)
class ExactlyOnceBehavior(Behavior):
    """``shift`` of ``exactly_once_behavior``."""

    shift: Any


def common_behavior(delay: Any = None, cutoff: Any = None, keep_results: bool = True) -> CommonBehavior:
    """How a window or a temporal join treats time, measured against its current time:
    the largest event time its input held before the step (so rows arriving together
    meet the same time).

    * ``delay``: windows give results once the time reaches their start plus ``delay``
      (interval joins: a row joins once the time reaches its time plus ``delay``);
      rows still waiting when the input ends come out then;
    * ``cutoff``: rows of windows that ended ``cutoff`` before the current time (joins:
      rows ``cutoff`` older than it) are ignored;
    * ``keep_results=False``: the results of such windows (the rows of such joins, and
      their pairs) are also retracted.  Needs a ``cutoff``.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("t | v | __time__\\n1 | 10 | 2\\n6 | 20 | 4\\n2 | 30 | 6")
    >>> late_ignored = t.windowby(
    ...     t.t, window=pw.temporal.tumbling(5), behavior=pw.temporal.common_behavior(cutoff=0)
    ... ).reduce(pw.this._pw_window_start, total=pw.reducers.sum(pw.this.v))
    >>> pw.debug.compute_and_print(late_ignored, include_id=False)
    _pw_window_start | total
    0                | 10
    5                | 20
    """
    if cutoff is None and not keep_results:
        raise PlanError("common_behavior(keep_results=False) needs a cutoff: results are dropped cutoff after their time")
    return CommonBehavior(delay, cutoff, keep_results)


def exactly_once_behavior(shift: Any = None) -> ExactlyOnceBehavior:
    """Windows give one result each, when the time reaches their end plus ``shift``
    (0 when None); rows arriving after that are ignored.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("t | v | __time__\\n1 | 10 | 2\\n3 | 20 | 4\\n6 | 30 | 6")
    >>> once = t.windowby(
    ...     t.t, window=pw.temporal.tumbling(5), behavior=pw.temporal.exactly_once_behavior()
    ... ).reduce(pw.this._pw_window_start, total=pw.reducers.sum(pw.this.v))
    >>> pw.debug.compute_and_print_update_stream(once, include_id=False)  # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
    _pw_window_start | total | __time__ | __diff__
    0 | 30 | 6 | 1
    5 | 30 | ... | 1
    """
    return ExactlyOnceBehavior(shift)


class Direction(enum.Enum):
    """Which row of the other table an as-of join pairs a row with: the latest one at or
    before its time (``BACKWARD``), the earliest at or after it (``FORWARD``), or the
    closer of the two (``NEAREST``).

    >>> import sparkway as pw
    >>> pw.temporal.Direction.NEAREST.name
    'NEAREST'
    """

    BACKWARD = 0
    FORWARD = 1
    NEAREST = 2


@dataclass(frozen=True)
class Interval:
    """The bounds of an interval join: ``other_time - self_time`` within them."""

    lower_bound: Any
    upper_bound: Any


def interval(lower_bound: Any, upper_bound: Any) -> Interval:
    """Bounds for ``interval_join``, both included.

    >>> import sparkway as pw
    >>> pw.temporal.interval(-2, 1).upper_bound
    1
    """
    return Interval(lower_bound, upper_bound)


def session(*, max_gap: Any = None, predicate: Callable[[Any, Any], bool] | None = None) -> SessionWindow:
    """Session windows: consecutive times closer than ``max_gap``, or for which
    ``predicate(earlier, later)`` is true, are in one session (give one of the two).

    >>> import sparkway as pw
    >>> pw.temporal.session(max_gap=300).max_gap
    300
    """
    if (max_gap is None) == (predicate is None):
        raise PlanError("a session window needs either max_gap= or predicate=")
    return SessionWindow(max_gap if predicate is None else predicate)


def tumbling(duration: Any, origin: Any = None) -> SlidingWindow:
    """Consecutive windows of length ``duration``."""
    return SlidingWindow(duration, duration, origin, ratio=1)


def sliding(hop: Any, duration: Any = None, ratio: int | None = None, origin: Any = None) -> SlidingWindow:
    """Windows of length ``duration`` (or ``ratio * hop``) starting every ``hop``."""
    if duration is None:
        if ratio is None:
            raise PlanError("sliding windows need duration= or ratio=")
        duration = hop * ratio
    return SlidingWindow(hop, duration, origin, ratio)


def __getattr__(name: str) -> Any:
    """``pw.temporal.IntervalJoinResult`` and ``WindowJoinResult``: join results, defined
    with the other join results in the table module (which builds on this one)."""
    if name in ("IntervalJoinResult", "WindowJoinResult"):
        from sparkway.api import table

        return getattr(table, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
