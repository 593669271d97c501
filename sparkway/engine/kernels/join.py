"""Join kernel: pairs of left and right rows of the same group (equal join keys)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkway.core.changes import ERRORS, ID
from sparkway.engine.kernels.ids import DUPLICATE_MESSAGE, MESSAGE, fail_if_new, messages, repeated_ids

_JOIN_TYPES = {"inner": "inner", "left": "left outer", "right": "right outer", "outer": "full outer"}


def positions_join(left: pa.Table, right: pa.Table, how: str) -> tuple[pa.ChunkedArray, pa.ChunkedArray, pa.ChunkedArray]:
    """Row positions of matching ``_g`` in ``left`` and ``right`` (null where unmatched).

    Only positions go through Acero's join, which cannot carry every column type.
    """
    joined = pa.table({"_g": left.column("_g"), "_li": pa.array(range(left.num_rows), pa.int64())}).join(
        pa.table({"_g": right.column("_g"), "_ri": pa.array(range(right.num_rows), pa.int64())}),
        keys="_g",
        join_type=_JOIN_TYPES[how],
        coalesce_keys=True,
        use_threads=False,
    )
    return joined.column("_g"), joined.column("_li"), joined.column("_ri")


def join_groups(tables: list[pa.Table], params: Any) -> pa.Table:
    """``_g``, ``_l_id``, ``_r_id``, then ``_l_<column>`` and ``_r_<column>``.

    ``params`` = (how, left columns, right columns, interval bounds or None).  With
    bounds, each side has a ``_t`` column and a pair matches only when
    ``lower <= right _t - left _t <= upper``; outer kinds pad the rows left unmatched.
    With ``unique`` = (side, keeping errors), the pairs take that side's ids, which must
    then stay unique (see ``_unique_ids``).
    """
    how, left_payload, right_payload, bounds, *unique = params
    left, right = tables
    if bounds is None:
        groups, li, ri = positions_join(left, right, how)
    else:
        groups, li, ri = _interval_positions(left, right, how, bounds)
    columns: dict[str, Any] = {
        "_g": groups,
        "_l_id": pc.take(left.column(ID), li),
        "_r_id": pc.take(right.column(ID), ri),
    }
    columns.update({f"_l_{n}": pc.take(left.column(n), li) for n in left_payload})
    columns.update({f"_r_{n}": pc.take(right.column(n), ri) for n in right_payload})
    if unique:
        return _unique_ids(pa.table(columns), *unique[0], left_payload if unique[0][0] == "right" else right_payload)
    return pa.table(columns)


def _unique_ids(pairs: pa.Table, side: str, keep_errors: bool, other_payload: list[str]) -> pa.Table:
    """The pairs of a join whose ids come from one ``side``: a row of that side matching
    several rows would give them one id.  That fails the step; keeping Error values, one
    pair stays, with the other side's columns as Error values and a message (``MESSAGE``)."""
    own, other = ("_l", "_r") if side == "left" else ("_r", "_l")
    ids = pairs.column(f"{own}_id")
    repeated, first = repeated_ids(pairs.column("_g"), ids)
    if not keep_errors:
        fail_if_new(repeated, pairs.column("_g"), ids, DUPLICATE_MESSAGE)
        return pairs
    pairs = pairs.filter(pa.array(~repeated | first))
    repeated = repeated[~repeated | first]
    if not repeated.any():
        return pairs.append_column(MESSAGE, pa.nulls(pairs.num_rows, pa.string()))
    blanked = pa.array(repeated)
    erred = [n for n in other_payload if n != ERRORS]
    for name in [f"{other}_{n}" for n in erred] + [f"{other}_id"]:
        column = pairs.column(name)
        pairs = pairs.set_column(pairs.column_names.index(name), name,
                                 pc.if_else(blanked, pa.nulls(pairs.num_rows, column.type), column))
    errors = f"{other}_{ERRORS}"
    names = pa.array([erred] * pairs.num_rows, pa.list_(pa.string()))
    pairs = pairs.set_column(pairs.column_names.index(errors), errors, pc.if_else(blanked, names, pairs.column(errors)))
    return pairs.append_column(MESSAGE, messages(repeated, pairs.column(f"{own}_id"), DUPLICATE_MESSAGE))


def _interval_positions(
    left: pa.Table, right: pa.Table, how: str, bounds: tuple[Any, Any]
) -> tuple[pa.Array, pa.Array, pa.Array]:
    """``positions_join`` for pairs whose times are within the bounds."""
    groups, li, ri = (c.combine_chunks() for c in positions_join(left, right, "inner"))
    gap = pc.subtract(pc.take(right.column("_t"), ri), pc.take(left.column("_t"), li))
    close = pc.and_(pc.greater_equal(gap, bounds[0]), pc.less_equal(gap, bounds[1]))
    close = pc.fill_null(close, False)
    parts = [(groups.filter(close), li.filter(close), ri.filter(close))]
    if how in ("left", "outer"):
        alone = _unmatched(left.num_rows, parts[0][1])
        parts.append((pc.take(left.column("_g"), alone), alone, pa.nulls(len(alone), pa.int64())))
    if how in ("right", "outer"):
        alone = _unmatched(right.num_rows, parts[0][2])
        parts.append((pc.take(right.column("_g"), alone), pa.nulls(len(alone), pa.int64()), alone))
    # positions are int64 also where a part is empty (Arrow then may type it null)
    return tuple(pa.chunked_array([p[k].cast(pa.int64()) for p in parts], pa.int64()).combine_chunks() for k in range(3))


def _unmatched(rows: int, matched: pa.Array) -> pa.Array:
    """Positions 0..rows-1 that are not among ``matched``."""
    everything = pa.array(np.arange(rows, dtype=np.int64))
    return everything.filter(pc.invert(pc.is_in(everything, value_set=matched)))
