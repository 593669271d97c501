"""Kernels of the operators between tables and streams of changes.

* ``upserts`` (``StreamToTable``, a ``GateKernel`` per id): the state is the row the id
  holds (its values), the changes are stream rows (events), the output is the difference
  the step's events make;
* ``consistent_rows`` (``FilterOutForgetting`` with ``ensure_consistency``, a
  ``GateKernel`` per id): the state is the row shown under the id;
* ``snapshots`` (``Snapshots``, a kernel over arrangements): every row of the new
  version, when it differs from the old one.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkway.core.changes import DIFF, ID

#: the payload column of a stream row saying whether it is an upsert
UPSERT = "_pw_is_upsert"


def upserts(state: Any, changes: pa.Table, params: Any) -> tuple[pa.Table, Any]:
    """One id's row after the stream rows of a step: the last upsert's values, or none
    after a deletion (deletions count first: of one time's rows, an upsert wins).  Rows
    of the stream retracted (a stream is only ever appended to) are not events."""
    columns, flagged = params
    values = _values(changes, columns)
    inputs = changes.column("_input").to_pylist()
    flags = changes.column(UPSERT).to_pylist() if flagged else [True] * changes.num_rows
    new = state
    events = [(i == 0 and flag, row) for i, flag, row, diff in zip(inputs, flags, values, changes.column(DIFF).to_pylist())
              if diff > 0]
    if any(not upsert for upsert, _ in events):
        new = None
    upserted = [row for upsert, row in events if upsert]
    if upserted:
        new = max(upserted, key=repr) if len(set(map(repr, upserted))) > 1 else upserted[0]
    out = [] if new == state else [(state, -1)] * (state is not None) + [(new, 1)] * (new is not None)
    return _rows(changes, columns, out), new


def consistent_rows(state: Any, changes: pa.Table, params: Any) -> tuple[pa.Table, Any]:
    """The changes of one id that keep its rows consistent with the row shown (the
    state): a retraction of another row is dropped; an insertion of a row other than the
    one shown first retracts it."""
    columns = params
    shown = state
    out: list[tuple[tuple, int]] = []
    ordered = sorted(zip(changes.column(DIFF).to_pylist(), _values(changes, columns)), key=lambda c: c[0])
    for diff, row in ordered:  # retractions first
        if diff < 0 and row == shown:
            out.append((row, -1))
            shown = None
        elif diff > 0 and row != shown:
            if shown is not None:
                out.append((shown, -1))
            out.append((row, 1))
            shown = row
    return _rows(changes, columns, out), shown


def snapshots(tables: list[pa.Table], params: Any) -> pa.Table:
    """Every row of the new version of the (one) group, unless it holds the same rows as
    the old version; its ``_g`` tells the step's new version from the old one."""
    columns = params
    rows = tables[0]
    is_new = pc.equal(pc.bit_wise_and(rows.column("_g"), 1), 1)
    new, old = rows.filter(is_new), rows.filter(pc.invert(is_new))
    if sorted(map(repr, _keyed(new, columns))) == sorted(map(repr, _keyed(old, columns))):
        new = new.slice(0, 0)
    return new.select(["_g", ID, *columns])


def _keyed(rows: pa.Table, columns: list[str]) -> list[tuple]:
    return list(zip(rows.column(ID).to_pylist(), *(rows.column(c).to_pylist() for c in columns)))


def _values(changes: pa.Table, columns: list[str]) -> list[tuple]:
    return list(zip(*(changes.column(c).to_pylist() for c in columns))) if columns else [()] * changes.num_rows


def _rows(changes: pa.Table, columns: list[str], out: list[tuple[tuple, int]]) -> pa.Table:
    """Changes of the id of ``changes``: (values, diff) as a table ``_id``, columns, ``_diff``."""
    row_id = changes.column(ID)[0].as_py()
    data = {ID: pa.array([row_id] * len(out), pa.int64())}
    for j, name in enumerate(columns):
        data[name] = pa.array([values[j] for values, _ in out], changes.schema.field(name).type)
    data[DIFF] = pa.array([diff for _, diff in out], pa.int64())
    return pa.table(data)
