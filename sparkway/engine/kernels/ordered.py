"""Kernels whose result depends on an order: deduplicate (arrival order) and sort."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from sparkway.core.changes import DIFF, ID


#: a deduplicate kernel's output column with the message of an acceptor's failure: such
#: a row (the rejected input row) is logged, not output
REJECTED = "_pw_rejected"


def deduplicate_instances(states: dict[int, Any], changes: pa.Table, params: Any) -> tuple[pa.Table, dict[int, Any]]:
    """Deduplicate as a ``GroupsKernel`` whose groups are instances: the state of an
    instance is its accepted row.  As in Pathway, only insertions count (a deletion of
    the accepted row does not bring back an earlier one), and the insertions of a step
    meet ``acceptor(new, old)`` in the order of their values.  An acceptor that raises
    fails the step, or with ``keep_errors`` rejects the row (the output has then the
    rejected rows with their error in ``REJECTED``)."""
    acceptor, as_python, payload, outputs, keep_errors = params  # outputs: the payload's columns output
    gids = changes.column("_gid").to_pylist()
    diffs = changes.column(DIFF).to_pylist()
    ids = changes.column(ID).to_pylist()
    rows = list(zip(*(changes.column(name).to_pylist() for name in payload)))
    value_at = payload.index("_v")
    values = [as_python(row[value_at]) for row in rows]
    out: list[tuple[int, tuple, int, str | None]] = []  # (id, row, diff, rejection)
    changed: dict[int, Any] = {}
    for gid, positions in _inserted_by_group(gids, diffs, values, ids).items():
        old = states.get(gid)
        current = old
        for i in positions:
            if current is not None:
                try:
                    accepted = acceptor(values[i], as_python(current[value_at]))
                except Exception as error:
                    if not keep_errors:
                        raise
                    out.append((ids[i], rows[i], 1, f"{type(error).__name__}: {error}"))
                    continue
                if not accepted:
                    continue
            current = rows[i]
        if current is not old:
            if old is not None:
                out.append((gid, old, -1, None))
            out.append((gid, current, 1, None))
            changed[gid] = current
    columns = {ID: pa.array([o[0] for o in out], pa.int64())}
    for name in outputs:
        j = payload.index(name)
        columns[name] = pa.array([o[1][j] for o in out], changes.schema.field(name).type)
    if keep_errors:
        columns[REJECTED] = pa.array([o[3] for o in out], pa.string())
    columns[DIFF] = pa.array([o[2] for o in out], pa.int64())
    return pa.table(columns), changed


def _inserted_by_group(gids: list[int], diffs: list[int], values: list[Any], ids: list[int]) -> dict[int, list[int]]:
    """Per group, the positions of its insertions, by value (then id: values that Python
    cannot order keep the order of their ids)."""
    groups: dict[int, list[int]] = {}
    for i, diff in enumerate(diffs):
        if diff > 0:
            groups.setdefault(gids[i], []).append(i)
    for positions in groups.values():
        positions.sort(key=lambda i: ids[i])
        try:
            positions.sort(key=lambda i: values[i])
        except TypeError:
            pass
    return groups


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
