"""Consolidation: equal rows of one time cancel or merge, so each row changes at most once."""

from __future__ import annotations

import pickle
from collections import Counter

import pyarrow as pa


def consolidate(rows: pa.Table, diffs: list[int]) -> pa.Table:
    """``rows`` with a ``_diff`` column: the sum of ``diffs`` per distinct row, zeros dropped.

    Rows are compared by value (every column, the id included).  The first occurrence of
    a row stands for all of them, so the output order follows the input order.
    """
    if rows.num_rows == 0:
        return rows.append_column("_diff", pa.array([], pa.int64()))
    fingerprints = [pickle.dumps(row, protocol=5) for row in zip(*(c.to_pylist() for c in rows.columns))]
    totals: Counter[bytes] = Counter()
    first: dict[bytes, int] = {}
    for position, (fingerprint, diff) in enumerate(zip(fingerprints, diffs)):
        totals[fingerprint] += diff
        first.setdefault(fingerprint, position)
    kept = [(first[f], total) for f, total in totals.items() if total != 0]
    kept.sort()
    taken = rows.take(pa.array([p for p, _ in kept], pa.int64()))
    return taken.append_column("_diff", pa.array([t for _, t in kept], pa.int64()))
