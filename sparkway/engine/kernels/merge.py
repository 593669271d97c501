"""Combining tables by row id: update_rows, update_cells, difference, intersect, ix.

Every input is grouped by the id it is matched on (``_g``); outputs keep ``_id``.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkway.core.changes import ID
from sparkway.engine.kernels.join import positions_join


def merge_groups(tables: list[pa.Table], params: Any) -> pa.Table:
    mode, payload, optional = params
    return _MODES[mode](tables, payload, optional)


def _output(rows: pa.Table, ids: Any, payload: list[str]) -> pa.Table:
    return pa.table({"_g": rows.column("_g"), ID: ids, **{n: rows.column(n) for n in payload}})


def _update_rows(tables: list[pa.Table], payload: list[str], optional: bool) -> pa.Table:
    base, update = tables
    # a row of `update` wins: drop base rows whose id the update has
    kept = base.filter(pc.invert(pc.is_in(base.column("_g"), update.column("_g"))))
    rows = pa.concat_tables([kept.select(["_g", ID, *payload]), update.select(["_g", ID, *payload])])
    return _output(rows, rows.column(ID), payload)


def _update_cells(tables: list[pa.Table], payload: list[str], optional: bool) -> pa.Table:
    base, update = tables
    groups, li, ri = positions_join(base, update, "left")
    present = pc.is_valid(ri)
    columns = {"_g": groups, ID: pc.take(base.column(ID), li)}
    for name in payload:
        old = pc.take(base.column(name), li)
        columns[name] = pc.if_else(present, pc.take(update.column(name), ri), old) if name in update.column_names else old
    return pa.table(columns)


def _difference(tables: list[pa.Table], payload: list[str], optional: bool) -> pa.Table:
    base, other = tables
    rows = base.filter(pc.invert(pc.is_in(base.column("_g"), other.column("_g"))))
    return _output(rows, rows.column(ID), payload)


def _intersect(tables: list[pa.Table], payload: list[str], optional: bool) -> pa.Table:
    rows = tables[0]
    for other in tables[1:]:
        rows = rows.filter(pc.is_in(rows.column("_g"), other.column("_g")))
    return _output(rows, rows.column(ID), payload)


def _ix(tables: list[pa.Table], payload: list[str], optional: bool) -> pa.Table:
    holders, target = tables
    groups, li, ri = positions_join(holders, target, "left")
    if not optional and pc.any(pc.is_null(ri)).as_py():
        raise KeyError("ix: a pointer names a row that does not exist; use ix(..., optional=True)")
    columns = {"_g": groups, ID: pc.take(holders.column(ID), li)}
    # the holder's own columns (when they come along) and the looked-up ones
    columns.update({
        n: pc.take(holders.column(n), li) if n in holders.column_names else pc.take(target.column(n), ri)
        for n in payload
    })
    return pa.table(columns)


_MODES = {
    "update_rows": _update_rows,
    "update_cells": _update_cells,
    "difference": _difference,
    "intersect": _intersect,
    "ix": _ix,
}
