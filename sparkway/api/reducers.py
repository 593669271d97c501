"""``pw.reducers``: aggregates for ``groupby(...).reduce(...)``.

>>> import sparkway as pw
>>> t = pw.debug.table_from_markdown("w | n\\na | 1\\na | 4")
>>> r = t.groupby(t.w).reduce(t.w, total=pw.reducers.sum(t.n), top=pw.reducers.max(t.n))
>>> r.column_names()
['w', 'total', 'top']
"""

from __future__ import annotations

import builtins
from typing import Any

from sparkway.core.expression import ReducerExpr, wrap


def _reducer(kind: str, *args: Any, params: builtins.tuple = ()) -> ReducerExpr:
    return ReducerExpr(kind, builtins.tuple(wrap(a) for a in args), params)


def count(*args: Any) -> ReducerExpr:
    """The number of rows in the group."""
    return _reducer("count")


def count_distinct(arg: Any) -> ReducerExpr:
    """The number of distinct values."""
    return _reducer("count_distinct", arg)


def sum(arg: Any) -> ReducerExpr:  # noqa: A001 - Pathway's name
    """The sum of the values."""
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


def argmin(arg: Any) -> ReducerExpr:
    """The id of the row with the smallest value (the smallest id among ties)."""
    return _reducer("argmin", arg)


def argmax(arg: Any) -> ReducerExpr:
    """The id of the row with the largest value (the smallest id among ties)."""
    return _reducer("argmax", arg)


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


def earliest(arg: Any) -> ReducerExpr:
    """The value of the row that arrived first."""
    return _reducer("earliest", arg)


def latest(arg: Any) -> ReducerExpr:
    """The value of the row that arrived last."""
    return _reducer("latest", arg)
