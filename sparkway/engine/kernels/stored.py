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
from sparkway.core.text import pointer_text


def replay_stored(states: dict[int, Any], changes: pa.Table, params: Any) -> tuple[pa.Table, dict[int, Any]]:
    """The changes with each deletion's stored columns replaced by the values stored at
    its insertion, and the new stored values (None where a row was deleted)."""
    names, stored = params  # the payload's columns; the positions of the stored ones
    gids = changes.column("_gid").to_pylist()
    ids = changes.column(ID).to_pylist()
    diffs = changes.column(DIFF).to_pylist()
    values = list(zip(*(changes.column(name).to_pylist() for name in names)))
    by_row: dict[int, list[int]] = {}
    for i, gid in enumerate(gids):
        by_row.setdefault(gid, []).append(i)
    changed: dict[int, Any] = {}
    out: list[tuple[int, tuple, int]] = []  # (id, values, diff)
    for gid, positions in by_row.items():
        deletions = [i for i in positions if diffs[i] < 0]
        insertions = [i for i in positions if diffs[i] > 0]
        if -sum(diffs[i] for i in deletions) > 1:
            raise ValueError(
                f"Got more deletions of a row with key: {pointer_text(ids[deletions[0]])} than insertions of that row. "
                "Does the input delete a row (or a primary key) twice?"
            )
        held = states.get(gid)
        if deletions and held is not None:
            row = list(values[deletions[0]])
            for position, value in zip(stored, held):
                row[position] = value
            out.append((ids[deletions[0]], tuple(row), -1))
            held = changed[gid] = None
        # a deletion of a row never inserted (under its id) has nothing to retract
        if sum(diffs[i] for i in insertions) > 1 or (insertions and held is not None):
            raise ValueError(
                f"Got a second insertion of a row with key: {pointer_text(ids[insertions[0]])}, "
                "but expected a deletion of that row first. Does the input insert a row (or a "
                "primary key) twice without deleting it in between?"
            )
        if insertions:
            inserted = values[insertions[0]]
            out.append((ids[insertions[0]], inserted, 1))
            changed[gid] = tuple(inserted[position] for position in stored)
    columns = {ID: pa.array([o[0] for o in out], pa.int64())}
    for j, name in enumerate(names):
        columns[name] = pa.array([o[1][j] for o in out], changes.schema.field(name).type)
    columns[DIFF] = pa.array([o[2] for o in out], pa.int64())
    return pa.table(columns), changed
