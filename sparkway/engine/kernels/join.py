"""Join kernel: pairs of left and right rows of the same group (equal join keys)."""

from __future__ import annotations

from typing import Any

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
    """``_g``, ``_l_id``, ``_r_id``, then ``_l_<column>`` and ``_r_<column>``."""
    how, left_payload, right_payload = params
    left, right = tables
    groups, li, ri = positions_join(left, right, how)
    columns: dict[str, Any] = {
        "_g": groups,
        "_l_id": pc.take(left.column(ID), li),
        "_r_id": pc.take(right.column(ID), ri),
    }
    columns.update({f"_l_{n}": pc.take(left.column(n), li) for n in left_payload})
    columns.update({f"_r_{n}": pc.take(right.column(n), ri) for n in right_payload})
    return pa.table(columns)
