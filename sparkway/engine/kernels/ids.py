"""Checks that rows keep unique ids through the operators that rely on it.

A program can promise things about ids that its data then breaks: a join whose ``id=``
comes from one side while a row of that side matches several rows, ``update_rows`` of a
table repeating an id, ``restrict`` by ids the restricted table lacks.  The kernels that
meet such rows (all rows of one id are in one group of theirs, so the check costs a pass
over the rows of the touched groups, no shuffle) fail with these messages, or, keeping
Error values, log them.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkway.core.text import pointer_text

#: the column of a kernel's output (kept Error values only) holding a message to log for
#: the row; a row that is only there to carry a message has ``DROPPED`` set
MESSAGE, DROPPED = "_pw_missing", "_pw_dropped"

DUPLICATE_MESSAGE = (
    "duplicate key {k}: two rows with the same id reached an operation that needs unique ids (a join with id= "
    "taken from one side, update_rows()/update_cells(), or a source repeating a primary key) - drop the explicit "
    "id= from the join, deduplicate the source, or give the sources distinct primary keys"
)
MISSING_MESSAGE = (
    "key {k} exists in the universe (the table providing the ids) but not in the table restricted to it: "
    "with_universe_of(), restrict(), ix() and update_cells() need every id of the universe to be present "
    "there - use a left join or ix(..., optional=True) when ids can be absent"
)
NO_ROW_MESSAGE = "updating a row that does not exist, key: {k}"


def key_text(value: int | None) -> str:
    """A row id (or None) as messages name it."""
    return "None" if value is None else pointer_text(value)


def repeated_ids(groups: pa.Array | pa.ChunkedArray, ids: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: whether another row of the same group version (``_g``) has its id, and
    whether it is the first row of its (group, id); a null id is never repeated."""
    valid = pc.is_valid(ids).to_numpy(zero_copy_only=False)
    pairs = np.stack([
        np.asarray(pc.fill_null(groups, 0).to_numpy(zero_copy_only=False), np.int64),
        np.asarray(pc.fill_null(ids, 0).to_numpy(zero_copy_only=False), np.int64),
    ], axis=1)
    if len(pairs) == 0:
        return np.zeros(0, bool), np.zeros(0, bool)
    _, first_index, inverse, counts = np.unique(pairs, axis=0, return_index=True, return_inverse=True, return_counts=True)
    first = np.zeros(len(pairs), bool)
    first[first_index] = True
    return (counts[inverse.reshape(-1)] > 1) & valid, first


def fail_if_new(broken: np.ndarray, groups: pa.Array | pa.ChunkedArray, ids: pa.Array | pa.ChunkedArray,
                message: str) -> None:
    """Raises ``KeyError(message)`` for the first ``broken`` row of the step's new rows
    (odd ``_g``); old rows broke the rule already, in a run keeping Error values."""
    new = np.asarray(pc.bit_wise_and(pc.fill_null(groups, 0), 1).to_numpy(zero_copy_only=False)) == 1
    offenders = np.flatnonzero(broken & new)
    if len(offenders):
        raise KeyError(message.format(k=key_text(ids[int(offenders[0])].as_py())))


def as_errors(rows: pa.Table, broken: np.ndarray, columns: list[str], errors: str, named: list[str]) -> pa.Table:
    """``rows`` where ``broken`` with ``columns`` as Error values: their values null, and
    ``named`` (the columns as the user knows them) listed in the ``errors`` column."""
    if not broken.any():
        return rows
    flags = pa.array(broken)
    for name in columns:
        column = rows.column(name)
        rows = rows.set_column(rows.column_names.index(name), name, pc.if_else(flags, pa.nulls(len(rows), column.type), column))
    listed = pa.array([named] * len(rows), pa.list_(pa.string()))
    return rows.set_column(rows.column_names.index(errors), errors, pc.if_else(flags, listed, rows.column(errors)))


def messages(flags: np.ndarray, ids: pa.Array | pa.ChunkedArray, message: str) -> pa.Array:
    """``message`` about each row's id where ``flags``, else null."""
    texts: list[str | None] = [None] * len(flags)
    for position in np.flatnonzero(flags).tolist():  # only the rows at fault, which are few
        texts[position] = message.format(k=key_text(ids[position].as_py()))
    return pa.array(texts, pa.string())
