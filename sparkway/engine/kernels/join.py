"""Join kernel: pairs of left and right rows of the same group (equal join keys)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkway.core.changes import ID

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
    """
    how, left_payload, right_payload, bounds = params
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
    return pa.table(columns)


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
