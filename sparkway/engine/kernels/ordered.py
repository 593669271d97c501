"""Kernels whose result depends on an order: deduplicate (arrival order) and sort."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from sparkway.core.changes import ID


def deduplicate_groups(tables: list[pa.Table], params: Any) -> pa.Table:
    """Per group, the last row ``acceptor(new, old)`` accepted, in arrival order."""
    acceptor, as_python, payload = params
    (rows,) = tables
    rows = rows.sort_by([("_g", "ascending"), ("_time", "ascending"), (ID, "ascending")])
    groups = rows.column("_g").to_pylist()
    values = [as_python(v) for v in rows.column("_v").to_pylist()]
    chosen: dict[int, int] = {}
    for position, (group, value) in enumerate(zip(groups, values)):
        current = chosen.get(group)
        if current is None or acceptor(value, values[current]):
            chosen[group] = position
    picked = rows.take(pa.array(sorted(chosen.values()), pa.int64()))
    return pa.table({"_g": picked.column("_g"), ID: picked.column("_gid"), **{n: picked.column(n) for n in payload}})


def sort_groups(tables: list[pa.Table], params: Any) -> pa.Table:
    """``prev`` and ``next``: ids of the neighbours in (key, id) order within a group."""
    (rows,) = tables
    rows = rows.sort_by([("_g", "ascending"), ("_k", "ascending"), (ID, "ascending")])
    groups = rows.column("_g").to_numpy()
    ids = rows.column(ID).to_numpy()
    same_as_previous = np.zeros(len(ids), dtype=bool)
    same_as_previous[1:] = groups[1:] == groups[:-1]
    prev = pa.array(np.roll(ids, 1), pa.int64(), mask=~same_as_previous)
    same_as_next = np.append(same_as_previous[1:], False)
    nxt = pa.array(np.roll(ids, -1), pa.int64(), mask=~same_as_next)
    return pa.table({"_g": rows.column("_g"), ID: rows.column(ID), "prev": prev, "next": nxt})
