"""Join kernel: pairs of left and right rows of the same group (equal join keys)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkway.core.changes import DIFF, ERRORS, ID
from sparkway.engine.kernels.ids import DUPLICATE_MESSAGE, MESSAGE, as_errors, fail_if_new, messages, repeated_ids

_JOIN_TYPES = {"inner": "inner", "left": "left outer", "right": "right outer", "outer": "full outer"}


def positions_join(left: pa.Table, right: pa.Table, how: str) -> tuple[pa.ChunkedArray, pa.ChunkedArray, pa.ChunkedArray]:
    """Row positions of matching ``_g`` in ``left`` and ``right`` (null where unmatched).

    Only positions go through Acero's join, which cannot carry every column type.
    """
    joined = pa.table({"_g": left.column("_g"), "_li": pa.array(range(left.num_rows), pa.int64())}).join(
        pa.table({"_g": right.column("_g"), "_ri": pa.array(range(right.num_rows), pa.int64())}),
        keys="_g",
        join_type=_JOIN_TYPES[how],
        coalesce_keys=True,
        use_threads=False,
    )
    return joined.column("_g"), joined.column("_li"), joined.column("_ri")


def join_groups(tables: list[pa.Table], params: Any) -> pa.Table:
    """``_g``, ``_l_id``, ``_r_id``, then ``_l_<column>`` and ``_r_<column>``.

    ``params`` = (how, left columns, right columns, interval bounds or None).  With
    bounds, each side has a ``_t`` column and a pair matches only when
    ``lower <= right _t - left _t <= upper``; outer kinds pad the rows left unmatched.
    With ``unique`` = (side, keeping errors), the pairs take that side's ids, which must
    then stay unique (see ``_unique_ids``).
    """
    how, left_payload, right_payload, bounds, *unique = params
    left, right = tables
    if bounds is None:
        groups, li, ri = positions_join(left, right, how)
    else:
        groups, li, ri = _interval_positions(left, right, how, bounds)
    columns: dict[str, Any] = {
        "_g": groups,
        "_l_id": pc.take(left.column(ID), li),
        "_r_id": pc.take(right.column(ID), ri),
    }
    columns.update({f"_l_{n}": pc.take(left.column(n), li) for n in left_payload})
    columns.update({f"_r_{n}": pc.take(right.column(n), ri) for n in right_payload})
    if unique:
        return _unique_ids(pa.table(columns), *unique[0], left_payload if unique[0][0] == "right" else right_payload)
    return pa.table(columns)


def _unique_ids(pairs: pa.Table, side: str, keep_errors: bool, other_payload: list[str]) -> pa.Table:
    """The pairs of a join whose ids come from one ``side``: a row of that side matching
    several rows would give them one id.  That fails the step; keeping Error values, one
    pair stays, with the other side's columns as Error values and a message (``MESSAGE``)."""
    own, other = ("_l", "_r") if side == "left" else ("_r", "_l")
    ids = pairs.column(f"{own}_id")
    repeated, first = repeated_ids(pairs.column("_g"), ids)
    if not keep_errors:
        fail_if_new(repeated, pairs.column("_g"), ids, DUPLICATE_MESSAGE)
        return pairs
    pairs = pairs.filter(pa.array(~repeated | first))
    repeated = repeated[~repeated | first]
    if not repeated.any():
        return pairs.append_column(MESSAGE, pa.nulls(pairs.num_rows, pa.string()))
    erred = [n for n in other_payload if n != ERRORS]
    blanked = [f"{other}_{n}" for n in erred] + [f"{other}_id"]
    pairs = as_errors(pairs, repeated, blanked, f"{other}_{ERRORS}", erred)
    return pairs.append_column(MESSAGE, messages(repeated, pairs.column(f"{own}_id"), DUPLICATE_MESSAGE))


def _interval_positions(
    left: pa.Table, right: pa.Table, how: str, bounds: tuple[Any, Any]
) -> tuple[pa.Array, pa.Array, pa.Array]:
    """``positions_join`` for pairs whose times are within the bounds."""
    groups, li, ri = (c.combine_chunks() for c in positions_join(left, right, "inner"))
    gap = pc.subtract(pc.take(right.column("_t"), ri), pc.take(left.column("_t"), li))
    close = pc.and_(pc.greater_equal(gap, bounds[0]), pc.less_equal(gap, bounds[1]))
    close = pc.fill_null(close, False)
    parts = [(groups.filter(close), li.filter(close), ri.filter(close))]
    if how in ("left", "outer"):
        alone = _unmatched(left.num_rows, parts[0][1])
        parts.append((pc.take(left.column("_g"), alone), alone, pa.nulls(len(alone), pa.int64())))
    if how in ("right", "outer"):
        alone = _unmatched(right.num_rows, parts[0][2])
        parts.append((pc.take(right.column("_g"), alone), pa.nulls(len(alone), pa.int64()), alone))
    # positions are int64 also where a part is empty (Arrow then may type it null)
    return tuple(pa.chunked_array([p[k].cast(pa.int64()) for p in parts], pa.int64()).combine_chunks() for k in range(3))


def _unmatched(rows: int, matched: pa.Array) -> pa.Array:
    """Positions 0..rows-1 that are not among ``matched``."""
    everything = pa.array(np.arange(rows, dtype=np.int64))
    return everything.filter(pc.invert(pc.is_in(everything, value_set=matched)))


def join_exactly_once(
    states: dict[int, Any], changes: pa.Table, params: Any
) -> tuple[pa.Table, dict[int, Any]]:
    """An inner join whose rows of one side (or both) join at most once, as a
    ``GroupsKernel`` whose groups are the join keys.

    ``params`` = (exactly once per side, left columns, right columns).  A group's state
    is, per side, the rows it still holds (a table of ``_id`` and the side's columns, or
    None): an exactly-once row leaves it when it matches.  So the rows held before a step
    never match each other (they would have matched when the later came), and the step's
    new pairs are all the pairs of the rows held after its changes.  Each pair is output
    once and never retracted.  An exactly-once row matching several rows in one step is
    an error, as in Pathway: which match would count is undefined.
    """
    once, left_payload, right_payload = params
    names = (left_payload, [f"_1_{name}" for name in right_payload])
    held = [_held_rows(states, changes, side, names[side]) for side in (0, 1)]
    left, right = held
    groups, li, ri = (c.combine_chunks().cast(pa.int64()) for c in positions_join(left, right, "inner"))
    for side, positions in ((0, li), (1, ri)):
        if once[side] and len(positions) and pc.max(pc.value_counts(positions).field("counts")).as_py() > 1:
            raise ValueError(
                "Repeated entry in a batch. A row of a join with "
                f"{'left' if side == 0 else 'right'}_exactly_once=True matched several rows in one step"
            )
    columns: dict[str, Any] = {"_l_id": pc.take(left.column(ID), li), "_r_id": pc.take(right.column(ID), ri)}
    columns.update({f"_l_{n}": pc.take(left.column(n), li) for n in names[0]})
    columns.update({f"_r_{n}": pc.take(right.column(c), ri) for n, c in zip(right_payload, names[1])})
    columns[DIFF] = pa.array(np.ones(len(groups), dtype=np.int64))
    for side, positions in ((0, li), (1, ri)):
        if once[side]:
            held[side] = held[side].filter(_unmatched_mask(held[side].num_rows, positions))
    touched = set(pc.unique(changes.column("_gid")).to_pylist())
    return pa.table(columns), _group_states(held, touched)


def _held_rows(states: dict[int, Any], changes: pa.Table, side: int, names: list[str]) -> pa.Table:
    """``_g`` (the group), ``_id`` and the side's columns: the rows a side holds after the
    step's changes (a retraction removes as many rows of its id)."""
    own = changes.filter(pc.equal(changes.column("_input"), side))
    shape = own.select(["_gid", ID, *names]).rename_columns(["_g", ID, *names])
    parts = [shape.slice(0, 0)]
    for gid, state in states.items():
        rows = state[side]
        if rows is not None and rows.num_rows:
            rows = rows.rename_columns([ID, *names]).add_column(0, "_g", pa.array(np.full(rows.num_rows, gid, dtype=np.int64)))
            parts.append(rows.cast(shape.schema))
    diffs = own.column(DIFF).to_numpy()
    inserted = np.repeat(np.flatnonzero(diffs > 0), diffs[diffs > 0])
    parts.append(shape.take(pa.array(inserted, pa.int64())))
    rows = pa.concat_tables(parts)
    retracted = np.flatnonzero(diffs < 0)
    if len(retracted) == 0:
        return rows
    counts = pa.table({
        "_g": own.column("_gid").take(retracted), ID: own.column(ID).take(retracted),
        "_n": pa.array(-diffs[retracted], pa.int64()),
    }).group_by(["_g", ID]).aggregate([("_n", "sum")])
    return rows.filter(pa.array(_surviving(rows, counts)))


def _surviving(rows: pa.Table, counts: pa.Table) -> np.ndarray:
    """Per row of ``rows``: False for the first ``_n_sum`` rows of each (``_g``, ``_id``)
    that ``counts`` names, True for the rest."""
    position = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    keyed = pa.table({"_g": rows.column("_g"), ID: rows.column(ID), "_pos": position})
    found = keyed.join(counts, keys=["_g", ID], join_type="left outer", use_threads=False).sort_by("_pos")
    removed = found.column("_n_sum").fill_null(0).to_numpy()
    groups, ids = rows.column("_g").to_numpy(), rows.column(ID).to_numpy()
    order = np.lexsort((np.arange(rows.num_rows), ids, groups))
    run_start = np.ones(len(order), dtype=bool)
    run_start[1:] = (groups[order][1:] != groups[order][:-1]) | (ids[order][1:] != ids[order][:-1])
    starts = np.maximum.accumulate(np.where(run_start, np.arange(len(order)), 0))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order)) - starts
    return rank >= removed


def _unmatched_mask(rows: int, matched: pa.Array) -> pa.Array:
    kept = np.ones(rows, dtype=bool)
    kept[matched.to_numpy(zero_copy_only=False)] = False
    return pa.array(kept)


def _group_states(held: list[pa.Table], touched: set[int]) -> dict[int, Any]:
    """The new state of every touched group: per side its rows (without ``_g``), or None;
    a group holding nothing is deleted (None)."""
    by_group: dict[int, list] = {gid: [None, None] for gid in touched}
    for side, rows in enumerate(held):
        rows = rows.sort_by("_g")
        gids = rows.column("_g").to_numpy()
        starts = [0, *(np.flatnonzero(gids[1:] != gids[:-1]) + 1).tolist(), len(gids)]
        for start, end in zip(starts[:-1], starts[1:]):
            if end > start:
                by_group[int(gids[start])][side] = rows.slice(start, end - start).drop_columns(["_g"])
    return {gid: (tuple(state) if any(s is not None for s in state) else None) for gid, state in by_group.items()}
