"""Stored results of a select's non-deterministic columns (``Select.stored``).

A ``GroupsKernel`` (``sparkway.engine.stateful``) whose groups are rows: the state of a
row is the values of its stored columns as they were inserted.  A deletion retracts
those values (its own, computed without calling the functions, are placeholders), an
insertion stores its values.  As in Pathway, a row inserted twice without a deletion in
between, or deleted twice at once, is an error: its stored values would be ambiguous.
A deletion of a row that was never inserted (under its id) has no values to retract:
it is dropped (Pathway calls the functions for it).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from sparkway.core.changes import DIFF, ID


def replay_stored(states: dict[int, Any], changes: pa.Table, params: Any) -> tuple[pa.Table, dict[int, Any]]:
    """The changes with each deletion's stored columns replaced by the values stored at
    its insertion, and the new stored values (None where a row was deleted)."""
    names, stored = params  # the payload's columns; the positions of the stored ones
    gids = changes.column("_gid").to_pylist()
    ids = changes.column(ID).to_pylist()
    diffs = changes.column(DIFF).to_pylist()
    values = list(zip(*(changes.column(name).to_pylist() for name in names)))
    changed: dict[int, Any] = {}
    out_values: list[tuple] = []
    out_rows: list[int] = []  # the changes kept, by position
    order = sorted(range(len(ids)), key=lambda k: (gids[k], diffs[k]))  # a row's deletion first
    for i in order:
        gid, diff = gids[i], diffs[i]
        held = changed[gid] if gid in changed else states.get(gid)
        if diff < 0:
            if diff < -1:
                raise ValueError(
                    f"Got more deletions of a row with key: {_key(ids[i])} than insertions of that row. "
                    "Does the input delete a row (or a primary key) twice?"
                )
            if held is None:
                continue
            row = list(values[i])
            for position, value in zip(stored, held):
                row[position] = value
            out_values.append(tuple(row))
            out_rows.append(i)
            changed[gid] = None
        else:
            if held is not None or diff > 1:
                raise ValueError(
                    f"Got a second insertion of a row with key: {_key(ids[i])}, "
                    "but expected a deletion of that row first. Does the input insert a row (or a "
                    "primary key) twice without deleting it in between?"
                )
            out_values.append(values[i])
            out_rows.append(i)
            changed[gid] = tuple(values[i][position] for position in stored)
    columns = {ID: pa.array([ids[k] for k in out_rows], pa.int64())}
    for j, name in enumerate(names):
        columns[name] = pa.array([row[j] for row in out_values], changes.schema.field(name).type)
    columns[DIFF] = pa.array([diffs[k] for k in out_rows], pa.int64())
    return pa.table(columns), changed


def _key(row_id: int) -> str:
    """A row id as sparkway prints pointers in messages."""
    return f"^{row_id & 0xFFFFFFFFFFFFFFFF:016X}"
