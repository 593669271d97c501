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

import contextlib
import json
import os
import uuid
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import ipc

from sparkway.errors import PersistenceError
from sparkway.persistence.faults import fault_point
from sparkway.persistence.storage import BlobStorage, writing_through
from sparkway.state.versions import Fence, base_before, read_latest, write_latest

GID, ROW_ID, VALUE_HASH, COUNT, TIME = "_gid", "_id", "_vh", "_count", "_time"
KEYS = [GID, ROW_ID, VALUE_HASH]
#: the columns before the payload, in every run
HEADER = [GID, ROW_ID, VALUE_HASH, COUNT, TIME]


def consolidated(rows: pa.Table, summed: tuple[str, ...] = ()) -> pa.Table:
    """One row per ``(_gid, _id, _vh)``, sorted by them: counts summed (zeros dropped),
    the time of the latest insertion, the payload of any of its rows (all are equal),
    except the ``summed`` payload columns (accumulators), which are summed too.

    Grouped by sorting (numpy), not by Arrow's hash group-by: that one's tables took
    60 MB for a chunk of 140k rows, which Arrow's allocator then kept, in every Python
    worker."""
    if rows.num_rows == 0:
        return rows
    unordered = [_numpy(rows.column(k)) for k in KEYS]
    order = _key_order(*unordered)
    keys = [k[order] for k in unordered]
    changed = np.zeros(len(order), dtype=bool)
    changed[0] = True
    for k in keys:
        changed[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(changed)

    def per_row(column: str) -> np.ndarray:
        return _numpy(rows.column(column))[order]

    counts = per_row(COUNT)
    times = per_row(TIME)
    total = np.add.reduceat(counts, starts)
    latest = np.maximum.reduceat(times, starts)
    # the time of the latest insertion; of the latest change where no row was inserted
    inserted = np.maximum.reduceat(np.where(counts > 0, times, _NO_TIME), starts)
    time = np.where(inserted != _NO_TIME, inserted, latest)
    sums = {name: np.add.reduceat(per_row(name), starts) for name in summed}
    held = total != 0
    for column in sums.values():  # an accumulator that moved while its count did not (a value updated)
        held |= column != 0
    out = rows.take(pa.array(order[starts[held]]))
    for name, column in [(COUNT, total), (TIME, time), *sums.items()]:
        out = out.set_column(out.schema.get_field_index(name), name, pa.array(column[held]).cast(out.schema.field(name).type))
    return out


#: below any time: where a group of rows has no insertion
_NO_TIME = np.iinfo(np.int64).min


def _key_order(gid: np.ndarray, row_id: np.ndarray, value_hash: np.ndarray) -> np.ndarray:
    """The positions of the rows in ascending ``(_gid, _id, _vh)``, equal keys in their
    order.  Sorted by two keys where that is enough: rows of one id with different
    values are rare, and each key costs another sort."""
    order = np.lexsort((row_id, gid))
    ties = np.flatnonzero((gid[order][1:] == gid[order][:-1]) & (row_id[order][1:] == row_id[order][:-1]))
    hashes = value_hash[order]
    if len(ties) and (hashes[ties + 1] < hashes[ties]).any():
        return np.lexsort((value_hash, row_id, gid))
    return order


def consolidated_union(held: pa.Table, more: pa.Table, summed: tuple[str, ...] = ()) -> pa.Table:
    """``consolidated(concat([held, more]))`` for tables consolidated already (runs, a
    step's changes), in no particular order: only the rows of ``held`` whose id ``more``
    has can meet another row, so the hash group-by sees those and ``more``, and the others
    pass as they are (a step's few changes against the many rows of the groups it touches:
    10x faster at 10,000 changes against 500,000 rows).

    >>> held = pa.table({"_gid": [7, 7], "_id": [1, 2], "_vh": [0, 0], "_count": [1, 1], "_time": [2, 2]})
    >>> more = pa.table({"_gid": [7], "_id": [2], "_vh": [0], "_count": [-1], "_time": [3]})
    >>> consolidated_union(held, more).column("_id").to_pylist()
    [1]
    """
    if held.num_rows == 0 or more.num_rows == 0:  # consolidated already: nothing to add up
        return held if more.num_rows == 0 else more
    meets = pc.is_in(held.column(ROW_ID), value_set=pc.unique(more.column(ROW_ID).combine_chunks()))
    if not pc.any(meets).as_py():  # new rows only: nothing to add up
        return pa.concat_tables([held, more])
    met = consolidated(pa.concat_tables([held.filter(meets), more]), summed)
    return pa.concat_tables([held.filter(pc.invert(meets)), met])


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

    Use as: ``begin(step)``, then ``lookup(input, gids)`` and ``add(changes)`` for one
    chunk of groups after another (in ascending group order), then ``commit()``.  A
    step's changes are written as they come, so a large step (a first run over a long
    history) never holds its whole run in memory.
    """

    def __init__(
        self, checkpoint: BlobStorage, cache_dir: str, fence: Fence | None = None, operator: str = "",
    ) -> None:
        self.checkpoint = checkpoint
        self.fence = fence
        self.operator = operator  # names the fault points (``persistence/faults.py``)
        self.cache_dir = cache_dir  # uncompressed local copies of the runs
        self.step = -1
        self.base: int | None = None
        self.runs: dict[str, list[list]] = {}  # input -> [[name, rows], ...], oldest first
        self._writing: dict[int, _RunWriter] = {}  # input -> this step's run, being written

    def begin(self, step: int) -> None:
        """Open the state as it was before ``step`` was applied."""
        self.step = step
        self.base = base_before(read_latest(self.checkpoint, step), step)
        manifest = self._read_json(_manifest_name(self.base)) if self.base is not None else None
        if self.base is not None and manifest is None:
            raise PersistenceError(
                f"the state in {self.checkpoint.root} says it is at version {self.base}, but that version has no "
                "manifest: it was written by an older sparkway, or files were removed; delete the persistence "
                "folder to compute the state again from the input"
            )
        self.runs = manifest["runs"] if manifest else {}
        self._writing = {}

    def is_empty(self, input_index: int) -> bool:
        return not self.runs.get(str(input_index))

    def lookup(self, input_index: int, gids: np.ndarray, summed: tuple[str, ...] = ()) -> pa.Table | None:
        """The rows of the groups ``gids`` (sorted, distinct), consolidated across runs
        (``summed``: see ``consolidated``); None when the input holds nothing yet."""
        found = None
        for name, _ in self.runs.get(str(input_index), []):
            rows = _rows_in_run(self._open(name), gids)
            if rows is not None:
                found = rows if found is None else consolidated_union(found, rows, summed)
        return found

    def add(self, changes: dict[int, pa.Table]) -> None:
        """Appends ``changes`` (consolidated rows, counts as diffs, of groups after every
        group added before in this step) to this step's run of each input."""
        for index, table in changes.items():
            if table.num_rows == 0:
                continue
            if index not in self._writing:
                self._writing[index] = _RunWriter(self, f"{self.step:016d}-{index}", table.schema)
            self._writing[index].write(table)

    def abort(self) -> None:
        """Drops the runs being written (the step failed; a retry writes them again)."""
        for writer in self._writing.values():
            writer.abort()
        self._writing = {}

    def commit(self, changes: dict[int, pa.Table] | None = None, summed: tuple[str, ...] = ()) -> None:
        """Make the state after ``step``: what ``add`` was given, and ``changes``, added
        to the arrangement of each input (``summed``: see ``consolidated``)."""
        if changes:
            self.add(changes)
        written = {index: writer.close() for index, writer in self._writing.items()}
        self._writing = {}
        if not written:
            return
        runs = {k: [list(r) for r in v] for k, v in self.runs.items()}
        for index, run in sorted(written.items()):
            held = runs.setdefault(str(index), [])
            held.append(list(run))
            merges = 0
            while len(held) > 1 and 2 * held[-1][1] >= held[-2][1]:
                merges += 1
                merged = self._merge(held[-2][0], held[-1][0], f"{self.step:016d}-{index}-m{merges}", summed)
                held[-2:] = [list(merged)] if merged[1] else []
        fault_point("arrangement.runs.written", self.operator)
        self.checkpoint.write_bytes(_manifest_name(self.step), json.dumps({"runs": runs}).encode())
        fault_point("arrangement.manifest.written", self.operator)
        write_latest(self.checkpoint, self.step, self.base, self.fence)  # a late task stops here, before pruning
        fault_point("arrangement.latest.written", self.operator)
        self._prune(runs)
        self.runs = runs

    # -- files ---------------------------------------------------------------------------

    def _merge(self, older: str, newer: str, stem: str, summed: tuple[str, ...]) -> tuple[str, int]:
        """Two runs as one, consolidated, written a range of groups at a time: at most
        about ``MERGE_ROWS`` rows of each run are in memory at once."""
        runs = [self._open(older), self._open(newer)]
        gids = [_numpy(run.column(GID)) for run in runs]
        # ranges of groups start at every MERGE_ROWS-th group pointer of either run
        bounds = np.unique(np.concatenate([g[::MERGE_ROWS] for g in gids]))[1:]
        writer = _RunWriter(self, stem, runs[0].schema)
        try:
            starts = [0] * len(runs)
            for end_gid in [*bounds.tolist(), None]:
                ends = [len(g) if end_gid is None else int(np.searchsorted(g, end_gid, "left")) for g in gids]
                part = pa.concat_tables([run.slice(a, b - a) for run, a, b in zip(runs, starts, ends)])
                writer.write(consolidated(part, summed))
                starts = ends
        except BaseException:
            writer.abort()
            raise
        return writer.close()

    def _open(self, name: str) -> pa.Table:
        """A run, memory-mapped from the local cache (filled from the checkpoint when the
        run is not there: another machine, a deleted cache): lookups read only the pages
        they touch.  Runs never change, so a cached copy never goes stale."""
        path = os.path.join(self.cache_dir, name)
        if os.path.exists(path):
            try:
                return ipc.open_file(pa.memory_map(path)).read_all()
            except (pa.ArrowInvalid, OSError):  # a damaged copy: the checkpoint holds the run
                _remove(path)
        reader = self.checkpoint.open_arrow(f"runs/{name}")
        with _local_writer(path, reader.schema) as writer:
            for i in range(reader.num_record_batches):
                writer.write_batch(reader.get_batch(i))
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
            return self.checkpoint.read_json(relative)
        except FileNotFoundError:
            return None


#: rows of each run held at once while two runs merge
MERGE_ROWS = 1 << 17


class _RunWriter:
    """One run, written a table at a time, twice: compressed (zstd) to the checkpoint,
    which is what persists, and as it is to the local cache, which lookups map into
    memory.  Both appear at ``close``, whole."""

    def __init__(self, store: ArrangementStore, stem: str, schema: pa.Schema) -> None:
        self.name = f"{stem}.arrow"
        self.schema = schema
        self.rows = 0
        self._files = contextlib.ExitStack()
        try:
            self._durable = self._files.enter_context(
                store.checkpoint.arrow_writer(f"runs/{self.name}", schema, compression="zstd")
            )
            self._local = self._files.enter_context(_local_writer(os.path.join(store.cache_dir, self.name), schema))
        except BaseException:
            self.abort()
            raise

    def write(self, table: pa.Table) -> None:
        batch = table.cast(self.schema).combine_chunks()  # one record batch per table
        self._durable.write_table(batch)
        self._local.write_table(batch)
        self.rows += table.num_rows

    def close(self) -> tuple[str, int]:
        """(the run's name, its rows)."""
        self._files.close()
        return self.name, self.rows

    def abort(self) -> None:
        self._files.__exit__(RuntimeError, RuntimeError("aborted"), None)


def _rows_in_run(run: pa.Table, gids: np.ndarray) -> pa.Table | None:
    """The rows of ``gids`` in ``run`` (sorted by ``_gid``, in record batches), None
    when it has none: a binary search in each batch for the groups within its range,
    then a take from the batches that hold some.  (A take from the whole table
    concatenates its batches first: a copy of the run per lookup, which made a step's
    cost grow with the history.)"""
    found = []
    for batch in run.to_batches():
        batch_gids = batch.column(GID).to_numpy()
        if len(batch_gids) == 0:
            continue
        low, high = np.searchsorted(gids, batch_gids[0], "left"), np.searchsorted(gids, batch_gids[-1], "right")
        positions = positions_of(batch_gids, gids[low:high])
        if len(positions):
            found.append(batch.take(pa.array(positions)))
    return pa.Table.from_batches(found, run.schema) if found else None


def _numpy(column: pa.ChunkedArray) -> np.ndarray:
    return column.chunk(0).to_numpy() if column.num_chunks == 1 else column.to_numpy()


def _manifest_name(version: int) -> str:
    return f"manifest/{version:016d}.json"


@contextlib.contextmanager
def _local_writer(path: str, schema: pa.Schema) -> Iterator[ipc.RecordBatchFileWriter]:
    """An uncompressed Arrow file in the local cache, which appears whole or not at all
    (not synced: the checkpoint holds the durable copy)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    with writing_through(path, tmp):  # a full disk: the error naming the file
        with ipc.new_file(tmp, schema) as writer:
            yield writer
        os.replace(tmp, path)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
