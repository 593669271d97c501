"""``pw.temporal``: windows for ``table.windowby(time, window=..., instance=...)`` and
``table.window_join(other, time, other_time, window, ...)``; the directions of
``table.asof_join`` (``sparkway/api/asof.py``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable

from sparkway.core import dtypes as dt
from sparkway.core.dtypes import DType
from sparkway.core.expression import BinOp, Call, ColumnRef, Const, Expr, MakeTuple, dtype_text
from sparkway.core.type_rules import infer
from sparkway.errors import PlanError, PlanTypeError
from sparkway.plan import nodes as n


def _window_columns(table: Any, time_type: dt.DType, instance: Any) -> dict[str, dt.DType]:
    instance_type = infer(table._bind(instance), [table._node.columns]) if instance is not None else dt.INT.with_optional()
    return {"_pw_instance": instance_type, "_pw_window_start": time_type, "_pw_window_end": time_type}


def _grouped(windowed: Any, original: Any, instance: Any) -> Any:
    from sparkway.api.table import GroupedTable

    keys = [(name, ColumnRef(n.InputRef(0), name)) for name in ("_pw_instance", "_pw_window_start", "_pw_window_end")]
    aliases = {instance.name: "_pw_instance"} if isinstance(instance, ColumnRef) else {}
    return GroupedTable(windowed, keys, aliases)


@dataclass(frozen=True)
class SessionWindow:
    """Sessions: maximal runs of rows whose consecutive times are less than ``max_gap``
    apart (or, when ``max_gap`` is a function, for which it says so)."""

    max_gap: Any

    def assign(self, table: Any, time_expr: Expr, instance: Any) -> Any:
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

    def assign(self, table: Any, time_expr: Expr, instance: Any) -> Any:
        return _grouped(self._windowed(table, time_expr, instance), table, instance)

    def _windowed(self, table: Any, time_expr: Expr, instance: Any) -> Any:
        time = table._bind(time_expr)
        time_type = infer(time, [table._node.columns]).with_optional(False)
        starts = Call("window.starts", (time,), (self.hop, self.duration, self.origin))
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
        flat = with_starts.flatten("_pw_window_start")
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
        return f"({', '.join(dtype_text(k) for k in kinds_in_order)})"

    wanted = " or ".join(allowed(k) for k in (dt.INT, dt.FLOAT, dt.DATE_TIME_NAIVE, dt.DATE_TIME_UTC))
    found = ", ".join(dtype_text(k) for k in (*kinds, *given.values()))
    raise PlanTypeError(f"Arguments ({', '.join([*times, *parameters])}) have to be of types {wanted} but are of types ({found}).")


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
    return SlidingWindow(duration, duration, origin)


def sliding(hop: Any, duration: Any = None, ratio: int | None = None, origin: Any = None) -> SlidingWindow:
    """Windows of length ``duration`` (or ``ratio * hop``) starting every ``hop``."""
    if duration is None:
        if ratio is None:
            raise PlanError("sliding windows need duration= or ratio=")
        duration = hop * ratio
    return SlidingWindow(hop, duration, origin)
