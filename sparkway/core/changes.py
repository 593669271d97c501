"""The change shape: what moves between sources, operators and sinks.

A batch of changes is a table with the hidden row id ``_id``, the table's columns, and
``_diff``: +1 inserts the row, -1 retracts it; an update is a retraction and an insertion
with the same id.  Sinks receive each time's consolidated changes with the columns, then
``time`` and ``diff``.
"""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

from sparkway.core.dtypes import DType

ID = "_id"  # the row id (pw.Pointer), hidden from users' columns
DIFF = "_diff"  # +1 or -1 (any integer before consolidation)
# Only in a run with terminate_on_error=False: the names of the row's columns that hold an
# Error value (whose own values are then null); null when the row has none.
ERRORS = "_pw_errors"
# Only in a run with terminate_on_error=False, transient: the messages of the errors a
# change logs (array<string>).  A source's change with ``_diff`` 0 only logs them.
LOGGED = "_pw_logged"


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table``'s columns in ``schema``'s order, null where it has none (a batch written
    by a run that kept Error values, or did not).

    >>> conform(pa.table({"b": [1]}), pa.schema([("a", pa.string()), ("b", pa.int64())])).to_pylist()
    [{'a': None, 'b': 1}]
    """
    names = set(table.column_names)
    columns = [table.column(f.name) if f.name in names else pa.nulls(table.num_rows, f.type) for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def error_fields() -> list[pa.Field]:
    """The Arrow fields a source's batch has in a run keeping Error values."""
    return [pa.field(ERRORS, pa.list_(pa.string())), pa.field(LOGGED, pa.list_(pa.string()))]


def arrow_schema(columns: dict[str, DType]) -> pa.Schema:
    """The Arrow schema of a batch of changes: ``_id``, the columns, ``_diff``."""
    return pa.schema(
        [(ID, pa.int64())] + [(n, d.arrow_type()) for n, d in columns.items()] + [(DIFF, pa.int64())]
    )


def spark_schema(columns: dict[str, DType], *, with_id: bool = True, with_diff: bool = True) -> T.StructType:
    """The Spark schema of a batch of changes: ``_id``, the columns, ``_diff``."""
    fields = [T.StructField(ID, T.LongType(), False)] if with_id else []
    fields += [T.StructField(n, d.spark_type(), True) for n, d in columns.items()]
    if with_diff:
        fields.append(T.StructField(DIFF, T.LongType(), False))
    return T.StructType(fields)


def consolidate(rows: pa.Table, diffs: list[int] | pa.Array | pa.ChunkedArray) -> pa.Table:
    """``rows`` with a ``_diff`` column: the sum of ``diffs`` per distinct row, zeros dropped.

    Rows are compared by value (every column, the id included).  The first occurrence of
    a row stands for all of them, so the output order follows the input order.

    >>> t = pa.table({"_id": [1, 1, 2], "x": ["a", "a", "b"]})
    >>> consolidate(t, [1, -1, 1]).to_pylist()
    [{'_id': 2, 'x': 'b', '_diff': 1}]
    """
    diffs = diffs if isinstance(diffs, (pa.Array, pa.ChunkedArray)) else pa.array(diffs, pa.int64())
    if rows.num_rows == 0:
        return rows.append_column(DIFF, pa.array([], pa.int64()))
    if ID in rows.column_names and all_distinct(rows.column(ID)):
        # no two rows share an id, so none are equal (a first run's output, say)
        out = rows.append_column(DIFF, diffs.cast(pa.int64()))
        return out.filter(pc.not_equal(diffs, 0)) if pc.any(pc.equal(diffs, 0)).as_py() else out
    if all(_hashable(field.type) for field in rows.schema):
        totals, positions = _sums_by_hash(rows, diffs)
    else:
        totals, positions = _sums_by_value(rows, diffs.to_pylist())
    kept = np.flatnonzero(totals != 0)
    kept = kept[np.argsort(positions[kept], kind="stable")]
    taken = rows.take(pa.array(positions[kept]))
    return taken.append_column(DIFF, pa.array(totals[kept], pa.int64()))


def all_distinct(ids: pa.ChunkedArray | pa.Array) -> bool:
    """Whether no value of ``ids`` (int64, no nulls) repeats.  Sorted by numpy, a copy of
    8 bytes per row: Arrow's hash kernel (``count_distinct``) took 300 MB of the driver's
    memory for a first run's 2.9M ids, which its allocator then kept.

    >>> all_distinct(pa.array([3, 1, 2])), all_distinct(pa.array([3, 1, 3]))
    (True, False)
    """
    if ids.null_count:
        return False
    ordered = np.sort(ids.to_numpy())
    return bool((ordered[1:] != ordered[:-1]).all())


def version_changes(rows: pa.Table, is_new: pa.Array | pa.ChunkedArray) -> pa.Table:
    """The changes from one version of a table to the next: ``rows`` holds the rows of
    both (``is_new`` marks the next's), and a row in both, same id and same values,
    cancels.  The result is ``consolidate(rows, is_new ? 1 : -1)``.

    The rows of each version have distinct ids (a table's), so a row can only cancel the
    row of the other version with its id: one join on the id and a comparison per column
    find them, where ``consolidate`` would hash every column of every row.  Should an id
    repeat within a version (not a table's rows), ``consolidate`` does the work when a
    row would cancel twice; equal rows of one version otherwise stay apart, which sums to
    the same changes.

    >>> t = pa.table({"_id": [1, 2, 1, 2], "x": ["a", "b", "a", "c"]})
    >>> version_changes(t, pa.array([False, False, True, True])).to_pylist()
    [{'_id': 2, 'x': 'b', '_diff': -1}, {'_id': 2, 'x': 'c', '_diff': 1}]
    """
    diffs = pc.if_else(is_new, 1, -1).cast(pa.int64())
    if ID not in rows.column_names or not all(_comparable(field.type) for field in rows.schema):
        return consolidate(rows, diffs)
    positions = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    ids = pa.table({"_id": rows.column(ID), "_p": positions})
    old, new = ids.filter(pc.invert(is_new)), ids.filter(is_new)
    pairs = old.join(new, "_id", join_type="inner", left_suffix="_old", right_suffix="_new", use_threads=False)
    before, after = pairs.column("_p_old"), pairs.column("_p_new")
    same = pa.array(np.ones(pairs.num_rows, dtype=bool))
    try:
        for column in rows.columns:
            same = pc.and_(same, _same_values(column.take(before), column.take(after)))
    except pa.ArrowNotImplementedError:  # a type Arrow does not compare (intervals)
        return consolidate(rows, diffs)
    cancelling = np.concatenate([before.filter(same).to_numpy(), after.filter(same).to_numpy()])
    cancelled = np.zeros(rows.num_rows, dtype=bool)
    cancelled[cancelling] = True
    if np.count_nonzero(cancelled) != len(cancelling):
        return consolidate(rows, diffs)  # an id repeated within a version: not a table's rows
    kept = pa.array(~cancelled)
    return rows.filter(kept).append_column(DIFF, diffs.filter(kept))


def _comparable(kind: pa.DataType) -> bool:
    """Whether ``_same_values`` compares values of this type exactly as ``consolidate``."""
    return _hashable(kind) and not pa.types.is_null(kind)


def _same_values(a: pa.ChunkedArray, b: pa.ChunkedArray) -> pa.Array:
    """Per position, whether ``a`` and ``b`` hold the same value: nulls equal nulls, and
    floats are the same when their bits are (NaN equals NaN, -0.0 differs from 0.0), as
    ``consolidate`` compares them."""
    if pa.types.is_floating(a.type):
        bits = {16: pa.int16(), 32: pa.int32(), 64: pa.int64()}[a.type.bit_width]
        a, b = a.combine_chunks().view(bits), b.combine_chunks().view(bits)
    both_null = pc.and_(pc.is_null(a), pc.is_null(b))
    return pc.or_(pc.fill_null(pc.equal(a, b), False), both_null)


def _hashable(kind: pa.DataType) -> bool:
    """Whether Arrow's hash group-by takes the type as a key (nested types it does not)."""
    return not pa.types.is_nested(kind) and not pa.types.is_dictionary(kind) and not isinstance(kind, pa.ExtensionType)


def _sums_by_hash(rows: pa.Table, diffs: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Per distinct row: the sum of its diffs and its first position (NaN equals NaN,
    -0.0 differs from 0.0: rows are equal when their values are the same bits)."""
    keys = [f"_k{i}" for i in range(rows.num_columns)]  # the rows' own names may repeat ours
    keyed = pa.Table.from_arrays(
        [*rows.columns, diffs, pa.array(np.arange(rows.num_rows, dtype=np.int64))], names=[*keys, "_d", "_p"]
    )
    totals = keyed.group_by(keys, use_threads=False).aggregate([("_d", "sum"), ("_p", "min")])
    return totals.column("_d_sum").to_numpy(), totals.column("_p_min").to_numpy()


def _sums_by_value(rows: pa.Table, diffs: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """``_sums_by_hash`` for rows with nested values (lists, structs), compared in Python."""
    fingerprints = [pickle.dumps(row, protocol=5) for row in zip(*(c.to_pylist() for c in rows.columns))]
    totals: Counter[bytes] = Counter()
    first: dict[bytes, int] = {}
    for position, (fingerprint, diff) in enumerate(zip(fingerprints, diffs)):
        totals[fingerprint] += diff
        first.setdefault(fingerprint, position)
    return np.array(list(totals.values()), dtype=np.int64), np.array([first[f] for f in totals], dtype=np.int64)
