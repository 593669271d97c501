"""Reducers: their result types, and the vectorized kernel computing them per group.

The kernel sees every row of the touched groups (``_g`` numbers a group), sorted here by
``_g`` first: every pyarrow group-by below then lists groups in ascending ``_g``, so the
columns of the different reducers line up without joins.
"""

from __future__ import annotations

from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

from sparkway.api import dtypes as dt
from sparkway.api.dtypes import DType


def result_type(kind: str, args: list[DType], params: tuple) -> DType:
    """The type of a reducer's result over arguments of the given types."""
    if kind not in _RESULT_TYPES:
        raise ValueError(f"unknown reducer {kind!r}; known: {', '.join(sorted(_RESULT_TYPES))}")
    return _RESULT_TYPES[kind](args)


_RESULT_TYPES: dict[str, Callable[[list[DType]], DType]] = {
    "count": lambda a: dt.INT,
    "count_distinct": lambda a: dt.INT,
    "sum": lambda a: a[0],
    "avg": lambda a: dt.FLOAT.with_optional(a[0].optional),
    "min": lambda a: a[0],
    "max": lambda a: a[0],
    "any": lambda a: a[0],
    "unique": lambda a: a[0],
    "earliest": lambda a: a[0],
    "latest": lambda a: a[0],
    "argmin": lambda a: dt.POINTER,
    "argmax": lambda a: dt.POINTER,
    "tuple": lambda a: DType("list", (a[0],)),
    "sorted_tuple": lambda a: DType("list", (a[0],)),
}


def reduce_groups(tables: list[pa.Table], params: Any) -> pa.Table:
    """One output row per ``_g``: ``_id`` (the group's pointer), the keys, the aggregates.

    ``params`` = (key column names, [(output name, kind, argument column names)]).
    """
    key_names, aggregates = params
    rows = tables[0].sort_by([("_g", "ascending"), ("_id", "ascending")])
    grouped = rows.group_by("_g", use_threads=False)
    firsts = grouped.aggregate([(c, "first") for c in ["_gid", *key_names]])
    columns: dict[str, pa.Array] = {
        "_g": firsts.column("_g"),
        "_id": firsts.column("_gid_first"),
        **{k: firsts.column(f"{k}_first") for k in key_names},
    }
    for name, kind, arg_names in aggregates:
        columns[name] = _AGGREGATORS[kind](rows, arg_names)
    return pa.table(columns)


def _simple(function: str) -> Callable[[pa.Table, list[str]], pa.Array]:
    """A pyarrow hash aggregation of the first argument (of ``_id`` when there is none)."""
    def aggregate(rows: pa.Table, args: list[str]) -> pa.Array:
        column = args[0] if args else "_id"
        spec = (column, function, pc.CountOptions(mode="all")) if "count" in function else (column, function)
        return rows.group_by("_g", use_threads=False).aggregate([spec]).column(f"{column}_{function}")
    return aggregate


def _by_order(column: str | None, descending: bool, pick: str) -> Callable[[pa.Table, list[str]], pa.Array]:
    """The ``pick`` column of the first row of each group in a given order."""
    def aggregate(rows: pa.Table, args: list[str]) -> pa.Array:
        order_by = column or args[0]
        ordered = rows.sort_by(
            [("_g", "ascending"), (order_by, "descending" if descending else "ascending"), ("_id", "ascending")]
        )
        target = pick if pick != "arg" else args[0]
        out = ordered.group_by("_g", use_threads=False).aggregate([(target, "first")])
        return out.column(f"{target}_first")
    return aggregate


def _unique(rows: pa.Table, args: list[str]) -> pa.Array:
    out = rows.group_by("_g", use_threads=False).aggregate(
        [(args[0], "first"), (args[0], "count_distinct", pc.CountOptions(mode="all"))]
    )
    if pc.max(out.column(f"{args[0]}_count_distinct")).as_py() > 1:
        raise ValueError("pw.reducers.unique: a group has more than one distinct value")
    return out.column(f"{args[0]}_first")


def _tuple(sort_values: bool) -> Callable[[pa.Table, list[str]], pa.Array]:
    def aggregate(rows: pa.Table, args: list[str]) -> pa.Array:
        source = rows.sort_by([("_g", "ascending"), (args[0], "ascending"), ("_id", "ascending")]) if sort_values else rows
        out = source.group_by("_g", use_threads=False).aggregate([(args[0], "list")])
        return out.column(f"{args[0]}_list")
    return aggregate


_AGGREGATORS: dict[str, Callable[[pa.Table, list[str]], pa.Array]] = {
    "count": _simple("count"),
    "count_distinct": _simple("count_distinct"),
    "sum": _simple("sum"),
    "avg": _simple("mean"),
    "min": _simple("min"),
    "max": _simple("max"),
    "any": _simple("first"),
    "unique": _unique,
    "earliest": _by_order("_time", False, "arg"),
    "latest": _by_order("_time", True, "arg"),
    "argmin": _by_order(None, False, "_id"),
    "argmax": _by_order(None, True, "_id"),
    "tuple": _tuple(False),
    "sorted_tuple": _tuple(True),
}
