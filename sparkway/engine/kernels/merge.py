"""Combining tables by row id: update_rows, update_cells, difference, intersect, ix.

Every input is grouped by the id it is matched on (``_g``); outputs keep ``_id``.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkway.core.changes import ERRORS, ID
from sparkway.engine.kernels.join import positions_join


#: keeping Error values, an ``ix`` holder carries the pointer it looks up in this column,
#: and a row whose pointer names no row gets Error values, with this message to log
POINTER, MISSING = "_pw_pointer", "_pw_missing"

MISSING_MESSAGE = (
    "key {k} exists in the universe (the table providing the ids) but not in the table restricted to it: "
    "with_universe_of(), restrict(), ix() and update_cells() need every id of the universe to be present "
    "there - use a left join or ix(..., optional=True) when ids can be absent"
)


def merge_groups(tables: list[pa.Table], params: Any) -> pa.Table:
    mode, payload, optional, *keep = params
    if mode == "ix" and keep:
        return _ix_keeping_errors(tables, payload, keep[0])
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
    return _looked_up(holders, target, payload, groups, li, ri)


def _looked_up(
    holders: pa.Table, target: pa.Table, payload: list[str], groups: Any, li: Any, ri: Any,
) -> pa.Table:
    columns = {"_g": groups, ID: pc.take(holders.column(ID), li)}
    # the holder's own columns (when they come along) and the looked-up ones
    columns.update({
        n: pc.take(holders.column(n), li) if n in holders.column_names else pc.take(target.column(n), ri)
        for n in payload
    })
    return pa.table(columns)


def _ix_keeping_errors(tables: list[pa.Table], payload: list[str], target_errors: str) -> pa.Table:
    """``ix`` in a run keeping Error values: a holder whose pointer names no row gets the
    looked-up columns as Error values (named, without the prefix of the looked-up
    columns, in ``target_errors``: the looked-up table's ERRORS) and a message in
    ``MISSING``."""
    holders, target = tables
    groups, li, ri = positions_join(holders, target, "left")
    out = _looked_up(holders, target, payload, groups, li, ri)
    missing = pc.is_null(ri)
    if not pc.any(missing).as_py():
        return out.append_column(MISSING, pa.nulls(out.num_rows, pa.string()))
    prefix = target_errors[: -len(ERRORS)]
    looked_up = [n[len(prefix):] for n in payload if n not in holders.column_names and n != target_errors]
    names = pa.array([looked_up] * out.num_rows, pa.list_(pa.string()))
    index = out.column_names.index(target_errors)
    out = out.set_column(index, target_errors, pc.if_else(missing, names, out.column(target_errors)))
    pointers = pc.take(holders.column(POINTER), li).to_pylist()
    messages = [
        MISSING_MESSAGE.format(k=_pointer_text(p)) if gone else None
        for p, gone in zip(pointers, missing.to_pylist())
    ]
    return out.append_column(MISSING, pa.array(messages, pa.string()))


def _pointer_text(value: int | None) -> str:
    return "None" if value is None else f"^{value & 0xFFFFFFFFFFFFFFFF:016X}"


_MODES = {
    "update_rows": _update_rows,
    "update_cells": _update_cells,
    "difference": _difference,
    "intersect": _intersect,
    "ix": _ix,
}
