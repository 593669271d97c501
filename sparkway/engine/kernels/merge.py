"""Combining tables by row id: update_rows, update_cells, difference, intersect,
restrict, ix.

Every input is grouped by the id it is matched on (``_g``); outputs keep ``_id``.  Where
the program promised something about the ids that the rows break (an id repeated in
``update_rows``, an update of a row that does not exist, ``restrict`` by an id the table
lacks), the step fails; keeping Error values, the rows at fault get Error values (or are
dropped) and the kernel gives the message to log (``sparkway.engine.kernels.ids``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkway.core.changes import ERRORS, ID
from sparkway.engine.kernels.ids import (
    DROPPED, DUPLICATE_MESSAGE, MESSAGE, MISSING_MESSAGE, NO_ROW_MESSAGE, as_errors, fail_if_new, messages,
    repeated_ids,
)
from sparkway.engine.kernels.join import positions_join


#: keeping Error values, an ``ix`` holder carries the pointer it looks up in this column,
#: and a row whose pointer names no row gets Error values, with a message in ``MISSING``
POINTER, MISSING = "_pw_pointer", MESSAGE
#: the modes whose kernels check the promises about ids (and, keeping Error values, give
#: ``MESSAGE`` and ``DROPPED`` columns)
CHECKED = ("update_rows", "update_cells", "restrict")


def merge_groups(tables: list[pa.Table], params: Any) -> pa.Table:
    mode, payload, optional, *keep = params
    if mode == "ix" and keep:
        return _ix_keeping_errors(tables, payload, keep[0])
    if mode in CHECKED:
        return _CHECKED[mode](tables, payload, bool(keep))
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
    pointers = pc.take(holders.column(POINTER), li)
    gone = missing.to_numpy(zero_copy_only=False)
    return out.append_column(MISSING, messages(gone, pointers, MISSING_MESSAGE))


def _checked_update_rows(tables: list[pa.Table], payload: list[str], keep_errors: bool) -> pa.Table:
    """``update_rows`` of tables whose ids must be unique; keeping Error values, an id
    repeated in either table gives no row."""
    repeats = [repeated_ids(t.column("_g"), t.column(ID)) for t in tables]
    if not keep_errors:
        for table, (repeated, _) in zip(tables, repeats):
            fail_if_new(repeated, table.column("_g"), table.column(ID), DUPLICATE_MESSAGE)
        return _update_rows(tables, payload, False)
    out = _update_rows(tables, payload, False)
    faulty = _faulty_rows(tables, repeats)
    out = out.filter(pc.invert(pc.is_in(out.column("_g"), faulty.column("_g"))))
    return pa.concat_tables([_with_messages(out), _message_rows(faulty, out.schema, DUPLICATE_MESSAGE)])


def _checked_update_cells(tables: list[pa.Table], payload: list[str], keep_errors: bool) -> pa.Table:
    """``update_cells`` whose updates must each name one row of the table; keeping Error
    values, a repeated id gives a row of Error values, an update of no row is dropped."""
    base, update = tables
    repeats = [repeated_ids(t.column("_g"), t.column(ID)) for t in tables]
    orphans = pc.invert(pc.is_in(update.column("_g"), base.column("_g"))).to_numpy(zero_copy_only=False)
    if not keep_errors:
        for table, (repeated, _) in zip(tables, repeats):
            fail_if_new(repeated, table.column("_g"), table.column(ID), DUPLICATE_MESSAGE)
        fail_if_new(orphans, update.column("_g"), update.column(ID), NO_ROW_MESSAGE)
        return _update_cells(tables, payload, False)
    faulty = _faulty_rows(tables, repeats)
    firsts = [t.filter(pa.array(~repeated | first)) for t, (repeated, first) in zip(tables, repeats)]
    out = _update_cells(firsts, payload, False)
    broken = pc.is_in(out.column("_g"), faulty.column("_g")).to_numpy(zero_copy_only=False)
    out = _with_messages(_as_errors(out, broken, payload), messages(broken, out.column(ID), DUPLICATE_MESSAGE))
    lost = update.filter(pa.array(orphans)).select(["_g", ID])
    return pa.concat_tables([out, _message_rows(lost, out.schema, NO_ROW_MESSAGE)])


def _checked_restrict(tables: list[pa.Table], payload: list[str], keep_errors: bool) -> pa.Table:
    """The rows of the first table whose ids the second has, whose ids must all be in the
    first; keeping Error values, an id it lacks gives a row of Error values."""
    base, other = tables
    groups, li, ri = positions_join(other, base, "left")
    ids = pc.take(other.column(ID), li)
    missing = pc.is_null(ri).to_numpy(zero_copy_only=False)
    if not keep_errors:
        fail_if_new(missing, groups, ids, MISSING_MESSAGE)
    out = pa.table({"_g": groups, ID: ids, **{n: pc.take(base.column(n), ri) for n in payload}})
    if not keep_errors:
        return out
    return _with_messages(_as_errors(out, missing, payload), messages(missing, ids, MISSING_MESSAGE))


def _faulty_rows(tables: list[pa.Table], repeats: list[tuple[np.ndarray, np.ndarray]]) -> pa.Table:
    """``_g`` and ``_id`` of the groups where a table repeats an id, once each."""
    found = [t.select(["_g", ID]).filter(pa.array(repeated & first)) for t, (repeated, first) in zip(tables, repeats)]
    rows = pa.concat_tables(found)
    return rows.group_by("_g", use_threads=False).aggregate([(ID, "first")]).rename_columns(["_g", ID])


def _as_errors(rows: pa.Table, broken: np.ndarray, payload: list[str]) -> pa.Table:
    """``rows`` whose columns are Error values where ``broken``."""
    names = [n for n in payload if n != ERRORS]
    return as_errors(rows, broken, names, ERRORS, names)


def _with_messages(rows: pa.Table, texts: pa.Array | None = None) -> pa.Table:
    """``rows`` with their messages to log (none by default), kept in the output."""
    texts = texts if texts is not None else pa.nulls(len(rows), pa.string())
    return rows.append_column(MESSAGE, texts).append_column(DROPPED, pa.array(np.zeros(len(rows), bool)))


def _message_rows(faulty: pa.Table, schema: pa.Schema, message: str) -> pa.Table:
    """A row per (``_g``, ``_id``) of ``faulty`` that only carries ``message`` about its id."""
    count = len(faulty)
    names = [name for name in schema.names if name not in (MESSAGE, DROPPED)]
    columns = {name: faulty.column(name) if name in ("_g", ID) else pa.nulls(count, schema.field(name).type) for name in names}
    columns[MESSAGE] = messages(np.ones(count, bool), faulty.column(ID), message)
    columns[DROPPED] = pa.array(np.ones(count, bool))
    fields = [schema.field(name) for name in names]
    return pa.table(columns).cast(pa.schema([*fields, pa.field(MESSAGE, pa.string()), pa.field(DROPPED, pa.bool_())]))


_CHECKED = {
    "update_rows": _checked_update_rows,
    "update_cells": _checked_update_cells,
    "restrict": _checked_restrict,
}

_MODES = {
    "update_rows": _update_rows,
    "update_cells": _update_cells,
    "difference": _difference,
    "intersect": _intersect,
    "ix": _ix,
}
