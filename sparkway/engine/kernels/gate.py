"""Time gates (``TimeGate``): ``ignore_late``, ``forget``, ``late_forget``, ``buffer`` and
``forget_marked``.

A gate compares each change's threshold with the operator's current time: the largest
time its input held so far, per instance.  Its output depends on when changes arrived, so
it is a ``GateKernel`` (``sparkway.engine.stateful``): it gets the changes themselves with
the stored state, ``{"now": {instance: time}, "rows": {id: entry}, "due": {instance:
time}}``, where an entry is ``[values, count, threshold, instance]``, or a list of them for
an id under which rows of different values are held (a stream repeats ids); ``rows``: for
the forgets the rows let through, for ``buffer`` the rows held; ``due`` (``forget_marked``):
the times the next forgetting step forgets up to.  Python over the changes of a step, on
the executor.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from sparkway.core.changes import DIFF, ID

THRESHOLD, TIME, INSTANCE = "_pw_gate_threshold", "_pw_gate_time", "_pw_gate_instance"


def gate(state: Any, changes: pa.Table, params: Any) -> tuple[pa.Table, Any]:
    """The changes a gate lets through in this step, and its new state.  A change of
    ``_diff`` 0 marks a step without input: the input ended, or (``forgetting`` in the
    params) a forgetting step."""
    mode, columns, forgetting = params
    state = state or {"now": {}, "rows": {}}
    before = dict(state["now"])  # the current time each change meets
    ended = False
    out: list[tuple[int, tuple, int]] = []
    for row_id, values, diff, threshold, time, instance in _changes(changes, columns):
        if diff == 0:
            ended = not forgetting
            continue
        if time is not None and (instance not in state["now"] or time > state["now"][instance]):
            state["now"][instance] = time
        if mode == "buffer":
            _add(state["rows"], row_id, values, diff, threshold, instance)
        elif mode == "forget_marked" or not _reached(threshold, before.get(instance)):
            out.append((row_id, values, diff))
            if mode != "ignore_late":
                _add(state["rows"], row_id, values, diff, threshold, instance)
    # rows the time before this step reached are retracted (``late_forget``: only at a
    # step with changes on time, as after an ``ignore_late``; ``forget_marked``: in the
    # forgetting step that follows)
    if mode == "forget" or (mode == "late_forget" and out):
        out = _release(state["rows"], before, False, sign=-1) + out
    elif mode == "buffer":
        out = _release(state["rows"], state["now"], ended, sign=1)
    elif mode == "forget_marked" and forgetting:
        out = _release(state["rows"], state.pop("due", {}), False, sign=-1)
    elif mode == "forget_marked":
        state["due"] = before
    kept = state["now"] or state["rows"]
    return _table(out, changes, columns), state if kept else None


def _changes(changes: pa.Table, columns: list[str]) -> Any:
    values = list(zip(*(changes.column(c).to_pylist() for c in columns))) if columns else [()] * changes.num_rows
    return zip(
        changes.column(ID).to_pylist(), values, changes.column(DIFF).to_pylist(),
        changes.column(THRESHOLD).to_pylist(), changes.column(TIME).to_pylist(), changes.column(INSTANCE).to_pylist(),
    )


def _reached(threshold: Any, now: Any) -> bool:
    return threshold is not None and now is not None and threshold <= now


def _entries(held: list | None) -> list[list]:
    if held is None:
        return []
    return held if isinstance(held[0], list) else [held]


def _add(rows: dict, row_id: int, values: tuple, diff: int, threshold: Any, instance: Any) -> None:
    """Counts a change for the row of the same id and values (a retraction of values
    held under no entry: for the earliest row of its id)."""
    entries = _entries(rows.get(row_id))
    entry = next((e for e in entries if e[0] == values), None)
    if entry is None and diff < 0:
        entry = next((e for e in entries if e[1] > 0), None)
    if entry is None:
        entries.append([values, diff, threshold, instance])
    else:
        if diff > 0:
            entry[2] = threshold
        entry[1] += diff
        if entry[1] == 0:
            entries.remove(entry)
    if entries:
        rows[row_id] = entries[0] if len(entries) == 1 else entries
    else:
        rows.pop(row_id, None)


def _release(rows: dict, now: dict, everything: bool, sign: int) -> list[tuple[int, tuple, int]]:
    """Removes the rows whose threshold the time of their instance reached (all of them
    with ``everything``) and returns them as changes, each ``sign`` times its count."""
    out = []
    for row_id in list(rows):
        entries = _entries(rows[row_id])
        due = [e for e in entries if everything or _reached(e[2], now.get(e[3]))]
        out.extend((row_id, e[0], sign * e[1]) for e in due)
        left = [e for e in entries if not any(e is d for d in due)]
        if left:
            rows[row_id] = left[0] if len(left) == 1 else left
        else:
            del rows[row_id]
    return out


def _table(out: list[tuple[int, tuple, int]], changes: pa.Table, columns: list[str]) -> pa.Table:
    data = {ID: pa.array([r[0] for r in out], pa.int64())}
    for j, name in enumerate(columns):
        data[name] = pa.array([r[1][j] for r in out], changes.schema.field(name).type)
    data[DIFF] = pa.array([r[2] for r in out], pa.int64())
    return pa.table(data)
