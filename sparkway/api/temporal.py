"""``pw.temporal``: windows for ``table.windowby(time, window=..., instance=...)``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from sparkway.core import dtypes as dt
from sparkway.core.expression import BinOp, Call, ColumnRef, Const, Expr
from sparkway.core.type_rules import infer
from sparkway.errors import PlanError
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
        time = table._bind(time_expr)
        time_type = infer(time, [table._node.columns]).with_optional(False)
        columns = {**table._node.columns, **_window_columns(table, time_type, instance)}
        node = n.SessionWindow(columns, table._node, time, table._bind(instance) if instance is not None else None, self.max_gap)
        return _grouped(table._derive(node, equivalent=table), table, instance)


@dataclass(frozen=True)
class SlidingWindow:
    """Windows of length ``duration`` starting every ``hop`` (tumbling: hop == duration)."""

    hop: Any
    duration: Any
    origin: Any = None

    def assign(self, table: Any, time_expr: Expr, instance: Any) -> Any:
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
        windowed = table._derive(n.Select(columns, flat._node, exprs), equivalent=table)
        return _grouped(windowed, table, instance)


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
