"""Large steps: stateful operators work through their rows a chunk of whole groups at a
time (``engine/stateful._run_arranged`` with ``chunk_rows``), writing the step's run as
they go.  The output and the state must be those of applying the step to all its rows
at once; the oracle test (``test_oracle.py``) checks the same through whole programs."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from sparkway.engine.kernels.reduce import reduce_groups
from sparkway.engine.stateful import KernelSpec, _group_chunks, _run_arranged
from sparkway.persistence.storage import BlobStorage
from sparkway.state.arrangement import consolidated
from sparkway.state.store import StateLocation

PARTS = 3


def _batches(table: pa.Table, size: int) -> list[pa.RecordBatch]:
    return table.combine_chunks().to_batches(max_chunksize=size)


def _keyed(keys: list[int]) -> pa.Table:
    parts = [k % PARTS for k in keys]
    return pa.table({"_part": pa.array(parts, pa.int64()), "_gid": pa.array(keys, pa.int64())}).sort_by("_gid")


@pytest.mark.parametrize("limit,batch", [(1, 1), (3, 2), (5, 7), (100, 4)])
def test_group_chunks_cut_only_between_groups_and_keep_every_row(limit: int, batch: int) -> None:
    rng = random.Random(limit * 31 + batch)
    table = _keyed([rng.choice([1, 2, 4, 5, 7, 9, 10, 11]) for _ in range(60)])
    chunks = list(_group_chunks(iter(_batches(table, batch)), limit))
    assert pa.concat_tables(chunks).equals(table)
    keys = [c.column("_gid").to_pylist() for c in chunks]
    for before, after in zip(keys, keys[1:]):
        assert before[-1] != after[0], "a group is never split between two chunks"
    for chunk in keys[:-1]:
        # a chunk ends at the first group start after it reached the limit
        assert len(chunk) >= limit or len(set(chunk)) == 1


def _spec(tmp: Path, step: int, chunk_rows: int | None) -> KernelSpec:
    payload = (("k", pa.int64()), ("v", pa.int64()))
    aggregates = [("n", "count", [], ()), ("top", "max", ["v"], ()), ("total", "sum", ["v"], ())]
    output = pa.schema([("_id", pa.int64()), ("k", pa.int64()), ("n", pa.int64()), ("top", pa.int64()),
                        ("total", pa.int64()), ("_diff", pa.int64())])
    location = StateLocation(BlobStorage(str(tmp / "checkpoint")), str(tmp / "local"), 0)
    # the key "k" is the group's: the state does not hold it (``unstored``)
    return KernelSpec("op", "reduce", step, 1000 + step, location, (payload,), reduce_groups,
                      (["k"], aggregates, False), output, (True,), "arranged", unstored=((0,),), chunk_rows=chunk_rows)


def _changes(rng: random.Random, live: dict[int, tuple[int, int]], next_id: list[int]) -> pa.Table:
    """Random changes (insertions, and retractions of live rows) of keys 0..19."""
    rows = []
    for _ in range(rng.randint(20, 60)):
        if live and rng.random() < 0.3:
            row_id = rng.choice(sorted(live))
            k, v = live.pop(row_id)
            rows.append((row_id, k, v, -1))
        else:
            k, v = rng.randrange(20), rng.randrange(100)
            live[next_id[0]] = (k, v)
            rows.append((next_id[0], k, v, 1))
            next_id[0] += 1
    ids, keys, values, diffs = (list(c) for c in zip(*rows))
    vh = [hash((k, v)) % 10**9 for k, v in zip(keys, values)]
    table = pa.table({
        "_input": pa.array([0] * len(rows), pa.int64()), "_gid": pa.array(keys, pa.int64()),
        "_part": pa.array([k % PARTS for k in keys], pa.int64()), "_id": pa.array(ids, pa.int64()),
        "_diff": pa.array(diffs, pa.int64()), "_vh": pa.array(vh, pa.int64()),
        "_0_k": pa.array(keys, pa.int64()), "_0_v": pa.array(values, pa.int64()),
    })
    return table.sort_by("_gid")  # as Spark sorts a large step's partitions


def _output(spec: KernelSpec, rows: pa.Table, batch: int) -> Counter:
    out = pa.Table.from_batches(list(_run_arranged(spec, iter(_batches(rows, batch)))), spec.output_schema)
    return Counter(tuple(r.values()) for r in out.to_pylist())


def _held(tmp: Path, step: int) -> Counter:
    found: Counter = Counter()
    for part in range(PARTS):
        store = StateLocation(BlobStorage(str(tmp / "checkpoint")), str(tmp / "local"), 0).arrangements("op", part)
        store.begin(step)
        rows = store.lookup(0, np.arange(20, dtype=np.int64))
        if rows is not None:
            table = consolidated(rows.drop_columns(["_time"]).append_column("_time", pa.array([0] * rows.num_rows)))
            found.update({tuple(r.values()): 1 for r in table.to_pylist()})
    return found


@pytest.mark.parametrize("chunk_rows,batch", [(1, 3), (4, 5), (10, 2)])
def test_chunked_steps_give_the_output_and_state_of_whole_steps(chunk_rows: int, batch: int, tmp_path: Path) -> None:
    rng = random.Random(chunk_rows * 7 + batch)
    live: dict[int, tuple[int, int]] = {}
    next_id = [1]
    for step in range(1, 6):
        rows = _changes(rng, live, next_id)
        whole = _output(_spec(tmp_path / "whole", step, None), rows, batch)
        chunked = _output(_spec(tmp_path / "chunked", step, chunk_rows), rows, batch)
        assert chunked == whole
        assert all(row[0] == row[1] for row in whole), "each group's key comes back with its rows (gid = key here)"
        assert _held(tmp_path / "chunked", step + 1) == _held(tmp_path / "whole", step + 1)
    assert _held(tmp_path / "whole", 6), "the state holds the live rows"
