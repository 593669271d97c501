"""Reducers kept as sums (``count``, ``sum`` of integers: ``_apply_accumulated``) give,
step by step, what the same reducers give when a group's rows are kept and recomputed."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest
from tables import changes

import sparkway as pw

pytestmark = pytest.mark.usefixtures("spark")


def _update_stream(seed: int, times: int = 8) -> tuple[str, list[tuple[str, int | None]]]:
    """A markdown update stream of (k, v) rows, with retractions and values updated in
    place, and the rows left at the end."""
    rng = random.Random(seed)
    live: dict[int, tuple[str, int | None]] = {}
    lines, next_id = ["id | k | v | __time__ | __diff__"], 1
    for time in range(2, 2 * times + 2, 2):
        for _ in range(rng.randint(1, 6)):
            if live and rng.random() < 0.4:
                row_id = rng.choice(sorted(live))
                k, v = live.pop(row_id)
                lines.append(f"{row_id} | {k} | {'' if v is None else v} | {time} | -1")
                if rng.random() < 0.5:  # the same row with a new value, in the same step
                    live[row_id] = (k, rng.choice([None, -3, 4, 10**12]))
                    lines.append(f"{row_id} | {k} | {'' if live[row_id][1] is None else live[row_id][1]} | {time} | 1")
            else:
                live[next_id] = (rng.choice("abc"), rng.choice([None, 1, 2, 7]))
                k, v = live[next_id]
                lines.append(f"{next_id} | {k} | {'' if v is None else v} | {time} | 1")
                next_id += 1
    return "\n".join(lines), list(live.values())


@pytest.mark.parametrize("seed", [1, 2])
def test_counts_and_integer_sums_kept_as_sums_match_recomputing_the_groups(seed: int, step_path: str) -> None:
    stream, final = _update_stream(seed)

    class Rows(pw.Schema):
        k: str
        v: int | None

    t = pw.debug.table_from_markdown(stream, schema=Rows)
    t = t.with_columns(v0=pw.coalesce(t.v, 0))  # as in Pathway, sum takes no None
    sums = t.groupby(t.k).reduce(t.k, n=pw.reducers.count(), s=pw.reducers.sum(t.v0))
    # max cannot be kept as a sum: this reduce keeps the rows and recomputes its groups
    recomputed = t.groupby(t.k).reduce(t.k, n=pw.reducers.count(), s=pw.reducers.sum(t.v0), m=pw.reducers.max(t.v))
    assert changes(sums) == changes(recomputed.select(pw.this.k, pw.this.n, pw.this.s))

    expected = defaultdict(lambda: [0, 0])
    for k, v in final:
        expected[k][0] += 1
        expected[k][1] += v or 0
    assert sorted(pw.debug.table_to_pandas(sums).itertuples(index=False, name=None)) == sorted(
        (k, n, s) for k, (n, s) in expected.items()
    )


@pytest.mark.parametrize("huge", [2**62, -(2**63)])
def test_integer_sums_kept_as_sums_wrap_around_64_bits_as_recomputed_ones_do(huge: int, step_path: str) -> None:
    rows = pw.debug.table_from_markdown(f"k | v\na | {huge}\na | {huge}\na | 5\nb | -1")
    sums = rows.groupby(rows.k).reduce(rows.k, s=pw.reducers.sum(rows.v))
    recomputed = rows.groupby(rows.k).reduce(rows.k, s=pw.reducers.sum(rows.v), m=pw.reducers.max(rows.v))
    expected = {"a": (2 * huge + 5 + 2**63) % 2**64 - 2**63, "b": -1}
    assert dict(pw.debug.table_to_pandas(sums).itertuples(index=False, name=None)) == expected
    assert changes(sums) == changes(recomputed.select(pw.this.k, pw.this.s))
