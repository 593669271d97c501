"""Reducers: the vectorized kernel computing them per group (their types: ``core.type_rules``).

The kernel sees every row of the touched groups (``_g`` numbers a group), sorted here by
``_g`` first: every pyarrow group-by below then lists groups in ascending ``_g``, so the
columns of the different reducers line up without joins.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column
from pyspark.sql import functions as F

from sparkway.core.changes import ID
from sparkway.core.dtypes import ARRAY_ARROW, array_from_python, array_to_python, from_python, to_python
from sparkway.core.type_rules import return_type


def reduce_groups(tables: list[pa.Table], params: Any) -> pa.Table:
    """One output row per ``_g``: ``_id`` (the group's pointer), the keys, the aggregates.

    ``params`` = (key column names, [(output name, kind, argument column names, reducer
    params)], whether Error values are kept).  Keeping them, a reducer that fails for a
    group (a custom reducer raising, ``unique`` over distinct values) gives it a null and
    a message, in a column ``_pw_error_<name>`` after the aggregates.
    """
    key_names, aggregates, keep_errors = params
    rows = tables[0].sort_by([("_g", "ascending"), (ID, "ascending")])
    firsts = rows.select(["_g", "_gid", *key_names]).take(_first_positions(rows))
    columns: dict[str, pa.Array] = {
        "_g": firsts.column("_g"),
        ID: firsts.column("_gid"),
        **{k: firsts.column(k) for k in key_names},
    }
    messages = {}
    for name, kind, arg_names, reducer_params in aggregates:
        if keep_errors and kind in _FALLIBLE:
            columns[name], messages[f"_pw_error_{name}"] = _FALLIBLE[kind](rows, arg_names, reducer_params)
        else:
            columns[name] = _AGGREGATORS[kind](rows, arg_names, reducer_params)
    return pa.table(columns | messages)


def fallible(kind: str) -> bool:
    """Whether a reducer can fail for a group (and then, keeping Error values, gives an Error)."""
    return kind in _FALLIBLE


Aggregator = Callable[[pa.Table, list[str], tuple], pa.Array]


def _first_positions(rows: pa.Table) -> pa.Array:
    """Per group (in ascending ``_g``, as ``rows`` are sorted), the position of its first row.

    Values are then taken by position: pyarrow's hash_first has no kernel for every type
    (tuples are structs, which it cannot aggregate).
    """
    positions = pa.table({"_g": rows.column("_g"), "_pos": pa.array(np.arange(rows.num_rows), pa.int64())})
    return positions.group_by("_g", use_threads=False).aggregate([("_pos", "min")]).column("_pos_min")


def _simple(function: str) -> Aggregator:
    """A pyarrow hash aggregation of the first argument (of ``_id`` when there is none)."""
    def aggregate(rows: pa.Table, args: list[str], params: tuple) -> pa.Array:
        column = args[0] if args else ID
        spec = (column, function, pc.CountOptions(mode="all")) if "count" in function else (column, function)
        return rows.group_by("_g", use_threads=False).aggregate([spec]).column(f"{column}_{function}")
    return aggregate


def _sum(rows: pa.Table, args: list[str], params: tuple) -> pa.Array:
    """Sums; of floats exact (the correctly rounded sum, as Pathway's: 1e21 + 2 - 1e21 is
    2), of numpy arrays (stored as structs, which pyarrow cannot add) element-wise."""
    column = rows.column(args[0])
    if pa.types.is_floating(column.type):
        return _exact_float_sums(rows.column("_g"), column)
    if column.type != ARRAY_ARROW:
        return _simple("sum")(rows, args, params)
    totals: dict[int, Any] = {}
    for g, stored in zip(rows.column("_g").to_pylist(), column.to_pylist()):
        value = array_to_python(stored)
        totals[g] = value if g not in totals else totals[g] + value
    return pa.array([array_from_python(totals[g]) for g in sorted(totals)], ARRAY_ARROW)


def _exact_float_sums(groups: pa.ChunkedArray, column: pa.ChunkedArray) -> pa.Array:
    """Per group (``groups`` ascending), ``math.fsum`` of its values, None where all are null."""
    g = groups.to_numpy()
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    values = column.fill_null(0.0).to_numpy()
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    ends = np.r_[starts[1:], len(g)]
    return pa.array(
        [math.fsum(values[a:b]) if valid[a:b].any() else None for a, b in zip(starts, ends)], pa.float64()
    )


def _by_order(column: str | None, descending: bool, pick: str) -> Aggregator:
    """The ``pick`` column of the first row of each group in a given order."""
    def aggregate(rows: pa.Table, args: list[str], params: tuple) -> pa.Array:
        order_by = column or args[0]
        target = pick if pick != "arg" else args[0]
        if pick == ID and len(args) > 1:  # argmin(value, other): other's value, the smallest among ties
            target = args[1]
        ordered = rows.sort_by([
            ("_g", "ascending"), (order_by, "descending" if descending else "ascending"),
            (target, "ascending"), (ID, "ascending"),
        ])
        return ordered.column(target).take(_first_positions(ordered))
    return aggregate


def _any(rows: pa.Table, args: list[str], params: tuple) -> pa.Array:
    """The value of the group's row with the smallest id (``rows`` are sorted by id)."""
    return rows.column(args[0]).take(_first_positions(rows))


_NOT_UNIQUE = "pw.reducers.unique: a group has more than one distinct value"


def _distinct_counts(rows: pa.Table, args: list[str]) -> pa.Array:
    out = rows.group_by("_g", use_threads=False).aggregate([(args[0], "count_distinct", pc.CountOptions(mode="all"))])
    return out.column(f"{args[0]}_count_distinct")


def _unique(rows: pa.Table, args: list[str], params: tuple) -> pa.Array:
    if pc.max(_distinct_counts(rows, args)).as_py() > 1:
        raise ValueError(_NOT_UNIQUE)
    return _any(rows, args, params)


def _unique_or_error(rows: pa.Table, args: list[str], params: tuple) -> tuple[pa.Array, pa.Array]:
    several = pc.greater(_distinct_counts(rows, args), 1)
    values = pc.if_else(several, pa.nulls(len(several), rows.schema.field(args[0]).type), _any(rows, args, params))
    groups = pc.unique(rows.column("_g")).to_pylist()  # ascending, as the aggregates list them
    failing = {g for g, bad in zip(groups, several.to_pylist()) if bad}
    firsts: dict[int, list] = {}
    for g, value in zip(rows.column("_g").to_pylist(), rows.column(args[0]).to_pylist()):
        if g in failing and value not in firsts.setdefault(g, []) and len(firsts[g]) < 2:
            firsts[g].append(value)
    messages = [_not_unique_message(firsts[g]) if g in failing else None for g in groups]
    return values, pa.array(messages, pa.string())


def _not_unique_message(values: list) -> str:
    """Pathway's message, which names two of the values as its engine types them."""
    names = {bool: "Bool", int: "Int", float: "Float", str: "String"}
    shown = ", ".join(f"{names.get(type(v), type(v).__name__)}({v!r})" for v in values)
    return f"More than one distinct value passed to the unique reducer: {shown}"


def _tuple(sort_values: bool) -> Aggregator:
    """All values of a group, in id order (``rows`` come sorted by id), in the order of
    groupby's ``sort_by``, or sorted; ``params[0]`` (skip_nones) leaves None out."""
    def aggregate(rows: pa.Table, args: list[str], params: tuple) -> pa.Array:
        source = rows
        if sort_values:
            # None first, as Pathway sorts it
            source = rows.take(pc.sort_indices(
                rows, sort_keys=[("_g", "ascending"), (args[0], "ascending"), (ID, "ascending")],
                null_placement="at_start",
            ))
        elif params and params[-1] == "sort_by":  # groupby's sort_by: the last argument
            ordered = rows.append_column("_order", _sortable(rows.column(args[-1])))
            source = ordered.sort_by([("_g", "ascending"), ("_order", "ascending"), (ID, "ascending")])
        # lists of positions, then the values taken by position (hash_list has no kernel for structs)
        positions = pa.table({"_g": source.column("_g"), "_pos": pa.array(np.arange(source.num_rows), pa.int64())})
        owned = positions.group_by("_g", use_threads=False).aggregate([("_pos", "list")]).column("_pos_list")
        owned = owned.combine_chunks()
        lengths = pc.list_value_length(owned).to_numpy(zero_copy_only=False)
        offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]), pa.int32())
        values = source.column(args[0]).combine_chunks().take(pc.list_flatten(owned))
        lists = pa.ListArray.from_arrays(offsets, values)
        return _without_nulls(lists) if params and params[0] else lists
    return aggregate


def _sortable(values: pa.ChunkedArray) -> pa.ChunkedArray | pa.Array:
    """A column Arrow can sort by: ``values`` itself, or, for arrays and tuples (which
    Arrow cannot sort), each value's rank in Python's order of their elements."""
    if not pa.types.is_nested(values.type):
        return values

    def key(value: Any) -> tuple:
        if value is None:
            return (0,)
        if values.type == ARRAY_ARROW:  # by elements, then shape
            return (1, value["ints"] if value["ints"] is not None else value["floats"], value["shape"])
        return (1, list(value.values()) if isinstance(value, dict) else value)
    keys = [key(v) for v in values.to_pylist()]
    ranks = np.empty(len(keys), np.int64)
    ranks[sorted(range(len(keys)), key=keys.__getitem__)] = np.arange(len(keys))
    return pa.array(ranks)


def _without_nulls(lists: pa.ListArray) -> pa.ListArray:
    """The lists with their null items removed (hash_list keeps them, whatever the options)."""
    items = pc.list_flatten(lists)
    owners = pc.list_parent_indices(lists)
    valid = pc.is_valid(items)
    kept_items, kept_owners = items.filter(valid), owners.filter(valid).to_numpy()
    offsets = np.concatenate([[0], np.cumsum(np.bincount(kept_owners, minlength=len(lists)))])
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), kept_items)


def _ndarray(rows: pa.Table, args: list[str], params: tuple) -> pa.Array:
    """All values of a group as one array, in id order (or groupby's ``sort_by``): a
    vector of numbers, or the group's arrays stacked (numpy's ``np.stack``: they must have one shape)."""
    lists = _tuple(False)(rows, args, params)
    values = lists.values
    if pa.types.is_struct(values.type):  # arrays: numpy stacks each group's (on the executor)
        groups = [[array_to_python(a) for a in group] for group in lists.to_pylist()]
        return pa.array([array_from_python(np.stack(group)) for group in groups], ARRAY_ARROW)
    lengths = pc.list_value_length(lists).cast(pa.int64())
    shapes = pa.ListArray.from_arrays(pa.array(np.arange(len(lists) + 1), pa.int32()), lengths)
    is_int = pa.types.is_integer(values.type)
    ints = lists.cast(pa.list_(pa.int64())) if is_int else pa.nulls(len(lists), pa.list_(pa.int64()))
    floats = pa.nulls(len(lists), pa.list_(pa.float64())) if is_int else lists.cast(pa.list_(pa.float64()))
    return pa.StructArray.from_arrays([shapes, ints, floats], fields=list(ARRAY_ARROW))


def written_in_python(kind: str) -> bool:
    """Whether a reducer is the user's Python code (its params end with its arguments' types)."""
    return kind in ("stateful", "accumulator")


def _custom(fold: Callable[[Any, list[tuple[int, list[tuple]]]], Any], keep_errors: bool = False) -> Callable:
    """A reducer written in Python (``stateful_many``, ``udf_reducer``...): ``fold``
    gets the reducer's params and a group's rows as (arrival time, values) batches, in the
    order they arrived, as the Python values users see.  A Python loop over the rows: the
    user's function needs them.  With ``keep_errors``, a group whose fold raises gets a
    null and the error's message."""
    def aggregate(rows: pa.Table, args: list[str], params: tuple) -> Any:
        *params, arg_types = params
        ordered = rows.sort_by([("_g", "ascending"), ("_time", "ascending"), (ID, "ascending")])
        groups = ordered.column("_g").to_pylist()
        times = ordered.column("_time").to_pylist()
        columns = [[convert(v) for v in ordered.column(a).to_pylist()] for a, convert in zip(args, map(to_python, arg_types))]
        values = list(zip(*columns)) or [()] * len(groups)
        kind = return_type(params[0].compute_result if isinstance(params[0], type) else params[0])
        convert = from_python(kind)
        results, messages, start = [], [], 0
        while start < len(groups):
            end = start
            while end < len(groups) and groups[end] == groups[start]:
                end += 1
            batches: dict[int, list[tuple]] = {}
            for k in range(start, end):
                batches.setdefault(times[k], []).append(values[k])
            if not keep_errors:
                results.append(convert(fold(params, sorted(batches.items()))))
            else:
                try:
                    results.append(convert(fold(params, sorted(batches.items()))))
                    messages.append(None)
                except Exception as error:
                    results.append(None)
                    messages.append(f"{type(error).__name__}: {error}")
            start = end
        values_out = pa.array(results, kind.arrow_type())
        return (values_out, pa.array(messages, pa.string())) if keep_errors else values_out
    return aggregate


def _stateful(params: tuple, batches: list[tuple[int, list[tuple]]]) -> Any:
    combine, many = params
    state = None
    for _, rows in batches:
        if many:
            state = combine(state, [(list(values), 1) for values in rows])
        else:
            for values in rows:
                state = combine(state, *values)
    return state


def _accumulated(params: tuple, batches: list[tuple[int, list[tuple]]]) -> Any:
    (accumulator,) = params
    ordered = getattr(accumulator, "sort_by", None)
    total = None
    for _, rows in batches:
        if ordered is not None:  # the order of the rows of one time, when the class defines one
            rows = sorted(rows, key=lambda values: ordered(list(values)))
        for values in rows:
            one = accumulator.from_row(list(values))
            if total is None:
                total = one
            else:
                total.update(one)
    return total.compute_result()


_AGGREGATORS: dict[str, Aggregator] = {
    "count": _simple("count"),
    "count_distinct": _simple("count_distinct"),
    "sum": _sum,
    "avg": _simple("mean"),
    "min": _simple("min"),
    "max": _simple("max"),
    "any": _any,
    "unique": _unique,
    "earliest": _by_order("_time", False, "arg"),
    "latest": _by_order("_time", True, "arg"),
    "argmin": _by_order(None, False, ID),
    "argmax": _by_order(None, True, ID),
    "tuple": _tuple(False),
    "sorted_tuple": _tuple(True),
    "ndarray": _ndarray,
    "stateful": _custom(_stateful),
    "accumulator": _custom(_accumulated),
}

#: reducers that can fail for a group, computing (values, messages) when Error values are kept
_FALLIBLE: dict[str, Callable[[pa.Table, list[str], tuple], tuple[pa.Array, pa.Array]]] = {
    "unique": _unique_or_error,
    "stateful": _custom(_stateful, keep_errors=True),
    "accumulator": _custom(_accumulated, keep_errors=True),
}


# -- accumulated reducers ---------------------------------------------------------------------

#: reducers whose value follows from sums kept per group (of diffs, of diff * value):
#: a step then costs O(changed rows), however many rows a group holds
ACCUMULABLE = {"count", "sum"}


def accumulable(aggregates: list[tuple[str, str, list[str], tuple]], arg_types: dict[str, pa.DataType]) -> bool:
    """Whether every aggregate of a reduce can be kept as sums: ``count``, and ``sum`` of
    integers (a float sum kept this way would not be exact under retractions)."""
    return all(
        kind in ACCUMULABLE and (kind == "count" or pa.types.is_integer(arg_types[args[0]]))
        for _, kind, args, _ in aggregates
    )


def contributions(payload: dict[str, Column], diff: Column, params: Any) -> dict[str, Column]:
    """What each change adds to its group's sums, as Spark expressions (summed per group
    by Spark, before the shuffle): per ``sum`` aggregate, ``diff * value`` in two halves,
    ``_s<j>h`` of the value's high 32 bits and ``_s<j>l`` of its low ones (no step's sum
    of them can overflow; ``from_sums`` joins them modulo 2**64, as a 64-bit sum wraps
    around), and ``diff`` where the value is not null (``_n<j>``).  ``count`` is the sum
    of diffs, which arrangements keep anyway."""
    _, aggregates, _ = params
    out = {}
    for j, (_, kind, args, _) in enumerate(aggregates):
        if kind == "sum":
            value = payload[args[0]].cast("long")
            out[f"_s{j}h"] = diff * F.shiftright(value, 32)
            out[f"_s{j}l"] = diff * value.bitwiseAND(F.lit(0xFFFFFFFF))
            out[f"_n{j}"] = diff * value.isNotNull().cast("long")
    return out


def from_sums(groups: pa.Table, params: Any) -> pa.Table:
    """The reduce's rows (``_id``, keys, aggregates) of groups given by their sums:
    ``_gid``, ``_count`` (rows held), the keys by name and ``contributions``' sums."""
    key_names, aggregates, _ = params
    columns: dict[str, Any] = {ID: groups.column("_gid"), **{k: groups.column(k) for k in key_names}}
    for j, (name, kind, _, _) in enumerate(aggregates):
        if kind == "count":
            columns[name] = groups.column("_count")
        else:  # a sum of nulls only is null
            high, low = (pc.fill_null(groups.column(f"_s{j}{half}"), 0) for half in "hl")
            total = pc.add(pc.shift_left(high, 32), low)  # unchecked: wraps around as Pathway's sums do
            columns[name] = pc.if_else(pc.greater(groups.column(f"_n{j}"), 0), total, None)
    return pa.table(columns)
