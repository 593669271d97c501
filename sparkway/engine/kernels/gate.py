"""Time gates (``TimeGate``): ``ignore_late``, ``forget``, ``late_forget`` and ``buffer``.

A gate compares each change's threshold with the operator's current time: the largest
time its input held so far, per instance.  Its output depends on when changes arrived, so
it is a ``GateKernel`` (``sparkway.engine.stateful``): it gets the changes themselves with
the stored state, ``{"now": {instance: time}, "rows": {id: [values, count, threshold,
instance]}}`` (``rows``: for the forgets the rows let through, for ``buffer`` the rows
held).  Python over the changes of a step, on the executor.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from sparkway.core.changes import DIFF, ID

THRESHOLD, TIME, INSTANCE = "_pw_gate_threshold", "_pw_gate_time", "_pw_gate_instance"


def gate(state: Any, changes: pa.Table, params: Any) -> tuple[pa.Table, Any]:
    """The changes a gate lets through in this step, and its new state."""
    mode, columns = params
    state = state or {"now": {}, "rows": {}}
    before = dict(state["now"])  # the current time each change meets
    ended = False
    out: list[tuple[int, tuple, int]] = []
    for row_id, values, diff, threshold, time, instance in _changes(changes, columns):
        if diff == 0:  # the input ended
            ended = True
            continue
        if time is not None and (instance not in state["now"] or time > state["now"][instance]):
            state["now"][instance] = time
        if mode == "buffer":
            _add(state["rows"], row_id, values, diff, threshold, instance)
        elif not _reached(threshold, before.get(instance)):
            out.append((row_id, values, diff))
            if mode != "ignore_late":
                _add(state["rows"], row_id, values, diff, threshold, instance)
    # rows the time before this step reached are retracted (``late_forget``: only at a
    # step with changes on time, as after an ``ignore_late``)
    if mode == "forget" or (mode == "late_forget" and out):
        out = _release(state["rows"], before, False, sign=-1) + out
    elif mode == "buffer":
        out = _release(state["rows"], state["now"], ended, sign=1)
    return _table(out, changes, columns), state if state["now"] or state["rows"] else None


def _changes(changes: pa.Table, columns: list[str]) -> Any:
    values = list(zip(*(changes.column(c).to_pylist() for c in columns))) if columns else [()] * changes.num_rows
    return zip(
        changes.column(ID).to_pylist(), values, changes.column(DIFF).to_pylist(),
        changes.column(THRESHOLD).to_pylist(), changes.column(TIME).to_pylist(), changes.column(INSTANCE).to_pylist(),
    )


def _reached(threshold: Any, now: Any) -> bool:
    return threshold is not None and now is not None and threshold <= now


def _add(rows: dict, row_id: int, values: tuple, diff: int, threshold: Any, instance: Any) -> None:
    entry = rows.get(row_id)
    if entry is None:
        rows[row_id] = [values, diff, threshold, instance]
        return
    if diff > 0:  # an insertion carries the row's current values
        entry[0], entry[2] = values, threshold
    entry[1] += diff
    if entry[1] == 0:
        del rows[row_id]


def _release(rows: dict, now: dict, everything: bool, sign: int) -> list[tuple[int, tuple, int]]:
    """Removes the rows whose threshold the time of their instance reached (all of them
    with ``everything``) and returns them as changes, each ``sign`` times its count."""
    due = [k for k, (_, _, threshold, instance) in rows.items() if everything or _reached(threshold, now.get(instance))]
    return [(k, rows[k][0], sign * rows.pop(k)[1]) for k in due]


def _table(out: list[tuple[int, tuple, int]], changes: pa.Table, columns: list[str]) -> pa.Table:
    data = {ID: pa.array([r[0] for r in out], pa.int64())}
    for j, name in enumerate(columns):
        data[name] = pa.array([r[1][j] for r in out], changes.schema.field(name).type)
    data[DIFF] = pa.array([r[2] for r in out], pa.int64())
    return pa.table(data)
