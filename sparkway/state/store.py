"""Versioned keyed state of one partition of one stateful operator.

Modelled on Spark's RocksDB state store:

* the *working copy* is a RocksDB database on the executor's local disk, opened by one
  task at a time;
* the *checkpoint* lives in the persistence storage: one changelog per step that changed
  the partition, a full snapshot now and then, and a small ``LATEST`` record
  ``{version, base}``: the step that last changed the partition and the version it was
  applied on.

A snapshot is written when ``snapshot_interval_ms`` has passed since the previous one *and*
the changelogs written since then add up to a quarter of that snapshot's size.  Restoring
thus reads at most a snapshot and little more, while writing snapshots costs a bounded
share of writing changelogs: a step's cost stays proportional to the rows it changed,
however large the state.

Steps are applied as pure functions of (state at ``base``, input of the step), so a task
that Spark retries, or a step replayed after a crash, gives the same result: applying
step ``v`` first rolls the working copy back to ``base`` with the undo record kept next to
the data, or rebuilds it from the checkpoint when the working copy is missing or stale.
"""

from __future__ import annotations

import os
import pickle
import time
from dataclasses import dataclass

import pyarrow as pa
from rocksdict import Options, Rdict, WriteBatch

from sparkway.persistence.faults import fault_point
from sparkway.persistence.storage import BlobStorage
from sparkway.state.arrangement import ArrangementStore
from sparkway.state.versions import Fence, base_before, read_latest, write_latest

_META_VERSION = b"\x00meta:version"
_META_BASE = b"\x00meta:base"
_META_UNDO = b"\x00meta:undo"
_META_SNAPSHOT_AT = b"\x00meta:snapshot_at"
_META_SNAPSHOT_BYTES = b"\x00meta:snapshot_bytes"
_META_CHANGELOG_BYTES = b"\x00meta:changelog_bytes"  # written since the last snapshot
_META_PREFIX = b"\x00meta:"


@dataclass(frozen=True)
class StateLocation:
    """Where one operator partition's state lives (picklable, shipped to executors)."""

    checkpoint: BlobStorage  # durable: changelogs, snapshots, LATEST
    local_root: str  # working copies on the executor's disk
    snapshot_interval_ms: int
    fence: Fence | None = None  # persisted state: its tasks stop once a newer run owns it

    def partition(self, operator: str, part: int) -> "PartitionStore":
        return PartitionStore(
            self.checkpoint.child(f"{operator}/{part:05d}"),
            os.path.join(self.local_root, operator, f"{part:05d}"),
            self.snapshot_interval_ms,
            self.fence,
            operator,
        )

    def arrangements(self, operator: str, part: int) -> ArrangementStore:
        return ArrangementStore(
            self.checkpoint.child(f"{operator}/{part:05d}"), os.path.join(self.local_root, operator, f"{part:05d}", "runs"),
            self.fence, operator,
        )


def _version_name(version: int) -> str:
    return f"{version:016d}"


class PartitionStore:
    """Use as: ``begin(step)``, ``get_many(keys)``, ``commit(updates)``, ``close()``."""

    def __init__(self, checkpoint: BlobStorage, local_dir: str, snapshot_interval_ms: int,
                 fence: Fence | None = None, operator: str = "") -> None:
        self.checkpoint = checkpoint
        self.fence = fence
        self.operator = operator  # names the fault points (``persistence/faults.py``)
        self.local_dir = local_dir
        self.snapshot_interval_ms = snapshot_interval_ms
        self.db: Rdict | None = None
        self.step = -1
        self.base: int | None = None

    # -- life cycle --------------------------------------------------------------------
    def begin(self, step: int) -> None:
        """Open the state as it was before ``step`` was applied."""
        self.step = step
        self.base = base_before(read_latest(self.checkpoint, step), step)
        os.makedirs(self.local_dir, exist_ok=True)
        self.db = Rdict(self.local_dir, options=_options())
        working = self._meta_int(_META_VERSION)
        if working is not None and working >= step and self._meta_int(_META_BASE) == self.base:
            self._rollback()
            working = self.base
        if working != self.base:
            self._rebuild()

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        assert self.db is not None
        return self.db.get(keys) if keys else []

    def items(self) -> list[tuple[bytes, bytes]]:
        """Every key and value of the partition (a scan: its cost grows with the state)."""
        assert self.db is not None
        return [(k, v) for k, v in self.db.items() if not k.startswith(_META_PREFIX)]

    def commit(self, updates: dict[bytes, bytes | None]) -> None:
        """Make ``updates`` (None deletes) the state at version ``step``."""
        assert self.db is not None
        if not updates:
            return
        keys = sorted(updates)
        old_values = self.get_many(keys)
        undo = pickle.dumps(list(zip(keys, old_values)), protocol=5)
        changelog = _key_value_table(keys, [updates[k] for k in keys])
        self.checkpoint.write_arrow(f"changelog/{_version_name(self.step)}.arrow", changelog)
        fault_point("state.changelog.written", self.operator)
        batch = WriteBatch(raw_mode=True)
        for key in keys:
            value = updates[key]
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)
        batch.put(_META_VERSION, str(self.step).encode())
        batch.put(_META_BASE, b"" if self.base is None else str(self.base).encode())
        batch.put(_META_UNDO, undo)
        written = (self._meta_int(_META_CHANGELOG_BYTES) or 0) + changelog.nbytes
        take_snapshot = self._snapshot_due(written)
        batch.put(_META_CHANGELOG_BYTES, str(0 if take_snapshot else written).encode())
        # LATEST is written last on the durable side: until then a retry sees the old base.
        write_latest(self.checkpoint, self.step, self.base, self.fence)
        fault_point("state.latest.written", self.operator)
        self.db.write(batch)
        if take_snapshot:
            self._write_snapshot()

    def _snapshot_due(self, changelog_bytes: int) -> bool:
        now_ms = int(time.time() * 1000)
        last_at = self._meta_int(_META_SNAPSHOT_AT) or 0
        last_bytes = self._meta_int(_META_SNAPSHOT_BYTES) or 0
        return now_ms - last_at >= self.snapshot_interval_ms and 4 * changelog_bytes >= last_bytes

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    # -- recovery ------------------------------------------------------------------------
    def _rollback(self) -> None:
        assert self.db is not None
        undo_blob = self.db.get(_META_UNDO)
        batch = WriteBatch(raw_mode=True)
        for key, old in pickle.loads(undo_blob) if undo_blob else []:
            if old is None:
                batch.delete(key)
            else:
                batch.put(key, old)
        batch.put(_META_VERSION, b"" if self.base is None else str(self.base).encode())
        batch.delete(_META_UNDO)
        self.db.write(batch)

    def _rebuild(self) -> None:
        """Recreate the working copy at ``base`` from the latest snapshot and changelogs."""
        assert self.db is not None
        self.db.close()
        Rdict.destroy(self.local_dir, _options())
        self.db = Rdict(self.local_dir, options=_options())
        if self.base is None:
            return
        snapshots = [int(n.split(".")[0]) for n in self.checkpoint.list("snapshot")]
        start = max((v for v in snapshots if v <= self.base), default=None)
        if start is not None:
            self._load(self.checkpoint.read_arrow(f"snapshot/{_version_name(start)}.arrow"))
        for name in self.checkpoint.list("changelog"):
            version = int(name.split(".")[0])
            if (start is None or version > start) and version <= self.base:
                self._load(self.checkpoint.read_arrow(f"changelog/{name}"))
        batch = WriteBatch(raw_mode=True)
        batch.put(_META_VERSION, str(self.base).encode())
        self.db.write(batch)

    def _load(self, table: pa.Table) -> None:
        assert self.db is not None
        batch = WriteBatch(raw_mode=True)
        for key, value in zip(table.column("key").to_pylist(), table.column("value").to_pylist()):
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)
        self.db.write(batch)

    def _write_snapshot(self) -> None:
        assert self.db is not None
        keys, values = [], []
        for key, value in self.db.items():
            if not key.startswith(_META_PREFIX):
                keys.append(key)
                values.append(value)
        snapshot = _key_value_table(keys, values)
        self.checkpoint.write_arrow(f"snapshot/{_version_name(self.step)}.arrow", snapshot)
        fault_point("state.snapshot.written", self.operator)
        batch = WriteBatch(raw_mode=True)
        batch.put(_META_SNAPSHOT_AT, str(int(time.time() * 1000)).encode())
        batch.put(_META_SNAPSHOT_BYTES, str(snapshot.nbytes).encode())
        self.db.write(batch)
        self._prune()

    def _prune(self) -> None:
        """Drops what precedes the previous snapshot.  The newest snapshot may belong to a
        step the driver never commits (a crash): the previous one must still restore."""
        snapshots = [int(name.split(".")[0]) for name in self.checkpoint.list("snapshot")]
        older = [v for v in snapshots if v < self.step]
        if not older:
            return
        keep_from = max(older)
        for folder in ("changelog", "snapshot"):
            for name in self.checkpoint.list(folder):
                if int(name.split(".")[0]) < keep_from:
                    self.checkpoint.delete(f"{folder}/{name}")

    def _meta_int(self, key: bytes) -> int | None:
        assert self.db is not None
        raw = self.db.get(key)
        return int(raw) if raw else None


def _key_value_table(keys: list[bytes], values: list[bytes | None]) -> pa.Table:
    return pa.table({"key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary())})


def _options() -> Options:
    options = Options(raw_mode=True)
    # A working copy is opened at every step: RocksDB starts a new info log (28 KB) at
    # each open and by default keeps the last 1,000 of each partition; nor does an open
    # of a few files need RocksDB's 16 threads to open them, or their statistics.
    options.set_keep_log_file_num(1)
    options.set_max_file_opening_threads(1)
    options.set_skip_stats_update_on_db_open(True)
    return options

