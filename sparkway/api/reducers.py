"""``pw.reducers``: aggregates for ``groupby(...).reduce(...)``.

>>> import sparkway as pw
>>> t = pw.debug.table_from_markdown("w | n\\na | 1\\na | 4")
>>> r = t.groupby(t.w).reduce(t.w, total=pw.reducers.sum(t.n), top=pw.reducers.max(t.n))
>>> r.column_names()
['w', 'total', 'top']
"""

from __future__ import annotations

import builtins
from typing import Any, Callable

from sparkway.core.expression import PointerFrom, ReducerExpr, wrap


def _reducer(kind: str, *args: Any, params: builtins.tuple = ()) -> ReducerExpr:
    return ReducerExpr(kind, builtins.tuple(wrap(a) for a in args), params)


def count(*args: Any) -> ReducerExpr:
    """The number of rows in the group."""
    return _reducer("count")


def count_distinct(*args: Any) -> ReducerExpr:
    """The number of distinct values (of several columns: distinct combinations).

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a | b\\n1 | 2\\n1 | 2\\n1 | 3")
    >>> pw.debug.compute_and_print(t.reduce(a=pw.reducers.count_distinct(t.a),
    ...     ab=pw.reducers.count_distinct(t.a, t.b)), include_id=False)
    a | ab
    1 | 2
    """
    return _reducer("count_distinct", _one_value(args))


def _one_value(args: builtins.tuple) -> Any:
    """One argument as it is; several (or none) as the id their values would make, equal
    exactly when the values are (tuples of values cannot be grouped by Arrow)."""
    return args[0] if len(args) == 1 else PointerFrom(builtins.tuple(wrap(a) for a in args))


def sum(arg: Any, strict: bool = False) -> ReducerExpr:  # noqa: A001 - Pathway's name
    """The sum of the values.  sparkway sums a group's values anew at each step, which is
    what Pathway's ``strict=True`` asks for, so ``strict`` changes nothing here."""
    return _reducer("sum", arg)


def avg(arg: Any) -> ReducerExpr:
    """The mean of the values."""
    return _reducer("avg", arg)


def min(arg: Any) -> ReducerExpr:  # noqa: A001
    """The smallest value."""
    return _reducer("min", arg)


def max(arg: Any) -> ReducerExpr:  # noqa: A001
    """The largest value."""
    return _reducer("max", arg)


def argmin(arg: Any, id: Any = None) -> ReducerExpr:  # noqa: A002 - Pathway's name
    """The id of the row with the smallest value (the smallest id among ties); with ``id``,
    that column's value in the row instead (the smallest among ties).

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("name | age\\nBob | 18\\nAl | 18\\nEve | 20")
    >>> pw.debug.compute_and_print(t.reduce(youngest=pw.reducers.argmin(t.age, t.name)), include_id=False)
    youngest
    Al
    """
    return _reducer("argmin", arg) if id is None else _reducer("argmin", arg, id)


def argmax(arg: Any, id: Any = None) -> ReducerExpr:  # noqa: A002 - Pathway's name
    """The id of the row with the largest value (the smallest id among ties); with ``id``,
    that column's value in the row instead (the smallest among ties)."""
    return _reducer("argmax", arg) if id is None else _reducer("argmax", arg, id)


def unique(arg: Any) -> ReducerExpr:
    """The value all rows of the group share (an error if they differ)."""
    return _reducer("unique", arg)


def any(arg: Any) -> ReducerExpr:  # noqa: A001
    """Some value of the group (the one of the row with the smallest id)."""
    return _reducer("any", arg)


def tuple(arg: Any, skip_nones: bool = False) -> ReducerExpr:  # noqa: A001
    """All values, in the order of the rows' ids; ``skip_nones`` leaves None out."""
    return _reducer("tuple", arg, params=(skip_nones,))


def sorted_tuple(arg: Any, skip_nones: bool = False) -> ReducerExpr:
    """All values, sorted; ``skip_nones`` leaves None out."""
    return _reducer("sorted_tuple", arg, params=(skip_nones,))


def ndarray(arg: Any, *, skip_nones: bool = False) -> ReducerExpr:
    """All values of the group as a numpy array, in the order of the rows' ids (or of
    groupby's ``sort_by``); arrays are stacked into an array of one more dimension.
    ``skip_nones`` leaves None out.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("w | n\\na | 4\\na | 1")
    >>> pw.debug.compute_and_print(
    ...     t.groupby(t.w, sort_by=t.n).reduce(ns=pw.reducers.ndarray(t.n)), include_id=False)
    ns
    [1 4]
    """
    return _reducer("ndarray", arg, params=(skip_nones,))


def earliest(arg: Any) -> ReducerExpr:
    """The value of the row that arrived first."""
    return _reducer("earliest", arg)


def latest(arg: Any) -> ReducerExpr:
    """The value of the row that arrived last."""
    return _reducer("latest", arg)


def count_distinct_approximate(*args: Any, precision: int = 12) -> ReducerExpr:
    """The number of distinct values; sparkway counts them exactly."""
    return _reducer("count_distinct", _one_value(args))


def stateful_many(combine: Callable[[Any, list[builtins.tuple[list[Any], int]]], Any]) -> Callable[..., ReducerExpr]:
    """A reducer from ``combine(state, rows)``: ``state`` is None at first, ``rows`` the
    group's ``(values, count)`` of one processing time; times come in order.

    sparkway recomputes a group from its current rows when it changes, so ``combine``
    sees the rows a group holds (grouped by the time they arrived), not their retractions.

    >>> import sparkway as pw
    >>> @pw.reducers.stateful_many
    ... def total(state, rows):
    ...     return (state or 0) + sum(values[0] * count for values, count in rows)
    >>> type(total(pw.this.a)).__name__
    'ReducerExpr'
    """
    return lambda *args: _reducer("stateful", *args, params=(combine, True))


def stateful_single(combine: Callable[..., Any]) -> Callable[..., ReducerExpr]:
    """A reducer from ``combine(state, *values)``, called for each row in the order rows
    arrived (``state`` is None at first); for groups that only grow."""
    return lambda *args: _reducer("stateful", *args, params=(combine, False))


class BaseCustomAccumulator:
    """Base of accumulators for ``udf_reducer``: define ``from_row(cls, row)``,
    ``update(self, other)`` and ``compute_result(self)``; ``neutral`` and ``retract`` are
    optional (sparkway recomputes a changed group from its rows), and a classmethod
    ``sort_by(cls, row)`` orders the rows of one time (rows of earlier times come first).

    >>> import sparkway as pw
    >>> class Product(pw.BaseCustomAccumulator):
    ...     def __init__(self, value):
    ...         self.value = value
    ...     @classmethod
    ...     def from_row(cls, row):
    ...         return cls(row[0])
    ...     def update(self, other):
    ...         self.value *= other.value
    ...     def compute_result(self):
    ...         return self.value
    >>> product = pw.reducers.udf_reducer(Product)
    >>> t = pw.debug.table_from_markdown("g | n\\na | 2\\na | 3\\nb | 5")
    >>> pw.debug.compute_and_print(t.groupby(t.g).reduce(t.g, p=product(t.n)), include_id=False)
    g | p
    a | 6
    b | 5
    """

    @classmethod
    def from_row(cls, row: list[Any]) -> "BaseCustomAccumulator":
        raise NotImplementedError("an accumulator defines from_row(cls, row)")

    def update(self, other: "BaseCustomAccumulator") -> None:
        raise NotImplementedError("an accumulator defines update(self, other)")

    def compute_result(self) -> Any:
        raise NotImplementedError("an accumulator defines compute_result(self)")


def udf_reducer(accumulator: type[BaseCustomAccumulator]) -> Callable[..., ReducerExpr]:
    """A reducer from an accumulator class: one accumulator per row (``from_row``), merged
    with ``update`` in the order rows arrived, then ``compute_result``."""
    return lambda *args: _reducer("accumulator", *args, params=(accumulator,))
