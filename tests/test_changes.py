"""The change shape's arithmetic: consolidation, and the changes between two versions of
a table, which must agree with it row for row and in order."""

from __future__ import annotations

import datetime as dt
import random

import pyarrow as pa
import pytest

from sparkway.core.changes import consolidate, version_changes

FLOATS = [0.0, -0.0, 1.5, float("nan"), None]


def _versions(rng: random.Random, rows: int, with_list: bool) -> tuple[pa.Table, pa.Array]:
    """Two versions of a table (ids distinct in each), most rows shared between them,
    some of them with a value changed, some only in one version."""
    old_ids = rng.sample(range(rows * 2), rows)
    new_ids = [i for i in old_ids if rng.random() < 0.8] + rng.sample(range(rows * 2, rows * 3), rows // 5)

    def value(i: int, version: int) -> dict:
        changed = version == 1 and i % 7 == 0
        row = {
            "_id": i,
            "n": None if i % 11 == 0 else i + changed,
            "f": FLOATS[(i + changed) % len(FLOATS)],
            "s": None if i % 13 == 0 else f"s{i % 5 + changed}",
            "t": dt.datetime(2026, 1, 1) + dt.timedelta(seconds=i),
        }
        if with_list:
            row["l"] = [i, int(changed)]
        return row

    table = pa.Table.from_pylist([value(i, 0) for i in old_ids] + [value(i, 1) for i in new_ids])
    is_new = pa.array([False] * len(old_ids) + [True] * len(new_ids))
    return table, is_new


def _same(a: pa.Table, b: pa.Table) -> bool:
    return a.schema == b.schema and repr(a.to_pylist()) == repr(b.to_pylist())  # repr: NaN equals NaN


@pytest.mark.parametrize("with_list", [False, True], ids=["flat", "nested (compared by consolidate)"])
def test_version_changes_are_the_consolidated_difference(with_list: bool) -> None:
    rng = random.Random(7)
    for _ in range(20):
        table, is_new = _versions(rng, rng.randint(1, 60), with_list)
        expected = consolidate(table, pa.array([1 if new else -1 for new in is_new.to_pylist()], pa.int64()))
        assert _same(version_changes(table, is_new), expected)


def test_floats_cancel_by_their_bits() -> None:
    table = pa.table({"_id": [1, 2, 3, 1, 2, 3], "f": [float("nan"), 0.0, None, float("nan"), -0.0, None]})
    out = version_changes(table, pa.array([False] * 3 + [True] * 3))
    assert repr(out.to_pylist()) == repr([{"_id": 2, "f": 0.0, "_diff": -1}, {"_id": 2, "f": -0.0, "_diff": 1}])


def test_rows_repeating_an_id_within_a_version_are_consolidated_by_value() -> None:
    table = pa.table({"_id": [1, 1, 1], "x": ["a", "a", "a"]})
    assert version_changes(table, pa.array([False, False, True])).to_pylist() == [{"_id": 1, "x": "a", "_diff": -1}]
