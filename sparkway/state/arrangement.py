"""Arrangements: the rows a stateful operator holds, per state partition and input, as
sorted immutable Arrow runs.

An arrangement is a multiset of rows ``(_gid, _id, _vh, _count, _time, payload...)``:
the group pointer, the row id, a hash of the payload values (``_vh``: rows of one id
with different values are different entries), the multiplicity and the arrival time.
It is stored as Differential Dataflow stores its arrangements: a short list of *runs*,
each an Arrow IPC file sorted by ``(_gid, _id, _vh)``, consolidated, never modified.  A
step adds one run (its changes) and then merges the newest runs while the newer is at
least half as large as the older, so a partition holds O(log rows) runs and every row is
rewritten O(log rows) times in all.  Finding the rows of some groups is a binary search
of their pointers in each run's ``_gid`` column, which is memory-mapped: a step reads the
groups it touches, never the whole partition.  The checkpoint holds runs compressed; a
local cache holds them as they are, for the memory maps.

Versions: ``manifest/<version>.json`` lists the runs of the state after step
``version``; ``LATEST`` holds ``{version, base}`` (the step that last changed the
partition and the version it was applied on).  A retried task, or a step replayed after
a crash, starts again from ``base``: runs are written under names of their step (a
replay writes the same bytes), the manifest next, ``LATEST`` last, so a crash at any
point leaves either the old version or the new one, never half of one.

A row's multiplicity across runs is the sum of its ``_count``; its time is the latest
time at which it was inserted (the largest ``_time`` of its rows with a positive count).

>>> import pyarrow as pa
>>> rows = pa.table({"_gid": [7, 7], "_id": [1, 1], "_vh": [0, 0], "_count": [1, 1], "_time": [2, 4]})
>>> consolidated(rows).to_pylist()
[{'_gid': 7, '_id': 1, '_vh': 0, '_count': 2, '_time': 4}]
"""

from __future__ import annotations

import json
import os
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import ipc

from sparkway.errors import PersistenceError
from sparkway.persistence.storage import BlobStorage

GID, ROW_ID, VALUE_HASH, COUNT, TIME = "_gid", "_id", "_vh", "_count", "_time"
KEYS = [GID, ROW_ID, VALUE_HASH]
#: the columns before the payload, in every run
HEADER = [GID, ROW_ID, VALUE_HASH, COUNT, TIME]


def consolidated(rows: pa.Table, summed: tuple[str, ...] = ()) -> pa.Table:
    """One row per ``(_gid, _id, _vh)``, sorted by them: counts summed (zeros dropped),
    the time of the latest insertion, the payload of any of its rows (all are equal),
    except the ``summed`` payload columns (accumulators), which are summed too."""
    if rows.num_rows == 0:
        return rows
    count = rows.column(COUNT)
    keyed = pa.table({
        **{k: rows.column(k) for k in KEYS},
        COUNT: count,
        "_inserted": pc.if_else(pc.greater(count, 0), rows.column(TIME), None),
        TIME: rows.column(TIME),
        "_pos": pa.array(np.arange(rows.num_rows, dtype=np.int64)),
        **{name: rows.column(name) for name in summed},
    })
    totals = keyed.group_by(KEYS, use_threads=False).aggregate(
        [(COUNT, "sum"), ("_inserted", "max"), (TIME, "max"), ("_pos", "min"), *[(name, "sum") for name in summed]]
    )
    held = pc.not_equal(totals.column(f"{COUNT}_sum"), 0)
    for name in summed:  # an accumulator that moved while its count did not (a value updated)
        held = pc.or_(held, pc.not_equal(totals.column(f"{name}_sum"), 0))
    totals = totals.filter(held)
    out = rows.take(totals.column("_pos_min"))
    time = pc.coalesce(totals.column("_inserted_max"), totals.column(f"{TIME}_max"))
    for name, column in [(COUNT, totals.column(f"{COUNT}_sum")), (TIME, time), *[(n, totals.column(f"{n}_sum")) for n in summed]]:
        out = out.set_column(out.schema.get_field_index(name), name, column.cast(out.schema.field(name).type))
    return out.sort_by([(k, "ascending") for k in KEYS])


def positions_of(sorted_gids: np.ndarray, gids: np.ndarray) -> np.ndarray:
    """The positions in ``sorted_gids`` of every element equal to one of ``gids`` (sorted,
    distinct), in order: one binary search per group, no scan.

    >>> positions_of(np.array([1, 3, 3, 5]), np.array([3, 4, 5])).tolist()
    [1, 2, 3]
    """
    starts = np.searchsorted(sorted_gids, gids, "left")
    ends = np.searchsorted(sorted_gids, gids, "right")
    lengths = ends - starts
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    # each group's range start..end-1, laid end to end
    shift = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    return shift + np.arange(total, dtype=np.int64)


class ArrangementStore:
    """The arrangements of one state partition of one operator, one per input.

    Use as: ``begin(step)``, ``lookup(input, gids)`` per input, ``commit(changes)``.
    """

    def __init__(self, checkpoint: BlobStorage, cache_dir: str) -> None:
        self.checkpoint = checkpoint
        self.cache_dir = cache_dir  # uncompressed local copies of the runs
        self.step = -1
        self.base: int | None = None
        self.runs: dict[str, list[list]] = {}  # input -> [[name, rows], ...], oldest first

    def begin(self, step: int) -> None:
        """Open the state as it was before ``step`` was applied."""
        self.step = step
        latest = self._read_json("LATEST")
        if latest is None:
            self.base = None
        elif latest["version"] >= step:
            self.base = latest["base"]  # a retry or a replay of this very step
        else:
            self.base = latest["version"]
        manifest = self._read_json(_manifest_name(self.base)) if self.base is not None else None
        if self.base is not None and manifest is None:
            raise PersistenceError(
                f"the state in {self.checkpoint.root} says it is at version {self.base}, but that version has no "
                "manifest: it was written by an older sparkway, or files were removed; delete the persistence "
                "folder to compute the state again from the input"
            )
        self.runs = manifest["runs"] if manifest else {}

    def is_empty(self, input_index: int) -> bool:
        return not self.runs.get(str(input_index))

    def lookup(self, input_index: int, gids: np.ndarray) -> pa.Table | None:
        """The rows of the groups ``gids`` (sorted, distinct) in every run, not
        consolidated across runs; None when the input holds nothing yet."""
        found = []
        for name, _ in self.runs.get(str(input_index), []):
            run = self._open(name)
            positions = positions_of(_numpy(run.column(GID)), gids)
            if len(positions):
                found.append(run.take(pa.array(positions)))
        if not found:
            return None
        return pa.concat_tables(found)

    def commit(self, changes: dict[int, pa.Table], summed: tuple[str, ...] = ()) -> None:
        """Make the state after ``step``: ``changes`` (consolidated rows, counts as diffs)
        added to the arrangement of each input (``summed``: see ``consolidated``)."""
        changes = {i: t for i, t in changes.items() if t.num_rows}
        if not changes:
            return
        runs = {k: [list(r) for r in v] for k, v in self.runs.items()}
        for index, table in changes.items():
            held = runs.setdefault(str(index), [])
            held.append([self._write_run(f"{self.step:016d}-{index}", table), table.num_rows])
            merges = 0
            while len(held) > 1 and 2 * held[-1][1] >= held[-2][1]:
                merges += 1
                merged = consolidated(pa.concat_tables([self._open(held[-2][0]), self._open(held[-1][0])]), summed)
                name = self._write_run(f"{self.step:016d}-{index}-m{merges}", merged)
                held[-2:] = [[name, merged.num_rows]]
                if merged.num_rows == 0:
                    held.pop()
        self.checkpoint.write_bytes(_manifest_name(self.step), json.dumps({"runs": runs}).encode())
        self.checkpoint.write_bytes("LATEST", json.dumps({"version": self.step, "base": self.base}).encode())
        self._prune(runs)
        self.runs = runs

    # -- files ---------------------------------------------------------------------------

    def _write_run(self, stem: str, table: pa.Table) -> str:
        """Writes a run twice: compressed to the checkpoint (what persists), and as it is
        to the local cache (what lookups map into memory)."""
        name = f"{stem}.arrow"
        # one record batch: a lookup then maps the ``_gid`` column without copying it
        table = table.combine_chunks()
        self.checkpoint.write_arrow(f"runs/{name}", table, compression="zstd")
        _write_local(os.path.join(self.cache_dir, name), table)
        return name

    def _open(self, name: str) -> pa.Table:
        """A run, memory-mapped from the local cache (filled from the checkpoint when the
        run is not there: another machine, a deleted cache): lookups read only the pages
        they touch.  Runs never change, so a cached copy never goes stale."""
        path = os.path.join(self.cache_dir, name)
        if not os.path.exists(path):
            _write_local(path, self.checkpoint.read_arrow(f"runs/{name}").combine_chunks())
        return ipc.open_file(pa.memory_map(path)).read_all()

    def _prune(self, runs: dict[str, list[list]]) -> None:
        """Drops what neither this version nor its base uses: the base must still
        restore while the driver has not committed this step (a crash replays it).  Runs
        of this step stay until the next one: another attempt of the step (Spark may run
        one concurrently) may be merging them."""
        keep = {name for held in runs.values() for name, _ in held}
        keep |= {name for held in self.runs.values() for name, _ in held}
        for name in self.checkpoint.list("runs"):
            if name not in keep and int(name.split("-")[0]) < self.step:
                self.checkpoint.delete(f"runs/{name}")
                _remove(os.path.join(self.cache_dir, name))
        kept = {_manifest_name(self.step).split("/")[-1]}
        if self.base is not None:
            kept.add(_manifest_name(self.base).split("/")[-1])
        for name in self.checkpoint.list("manifest"):
            if name not in kept:
                self.checkpoint.delete(f"manifest/{name}")

    def _read_json(self, relative: str) -> dict | None:
        try:
            return json.loads(self.checkpoint.read_bytes(relative))
        except FileNotFoundError:
            return None


def _numpy(column: pa.ChunkedArray) -> np.ndarray:
    return column.chunk(0).to_numpy() if column.num_chunks == 1 else column.to_numpy()


def _manifest_name(version: int) -> str:
    return f"manifest/{version:016d}.json"


def _write_local(path: str, table: pa.Table) -> None:
    """An uncompressed Arrow file, written whole or not at all."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    with ipc.new_file(tmp, table.schema) as writer:
        writer.write_table(table)
    os.replace(tmp, path)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
