"""The versioned partition store: retries, replays and rebuilds give the same state."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sparkway.errors import PersistenceError
from sparkway.persistence.storage import BlobStorage
from sparkway.state.store import StateLocation
from sparkway.state.versions import Fence, LateAttempt


def _location(tmp_path: Path, interval_ms: int = 0) -> StateLocation:
    return StateLocation(BlobStorage(str(tmp_path / "checkpoint")), str(tmp_path / "local"), interval_ms)


def _apply(location: StateLocation, step: int, updates: dict[bytes, bytes | None]) -> dict[bytes, bytes | None]:
    """Applies a step; returns the state it saw before (for the touched keys)."""
    store = location.partition("op", 0)
    store.begin(step)
    try:
        before = dict(zip(sorted(updates), store.get_many(sorted(updates))))
        store.commit(updates)
        return before
    finally:
        store.close()


def _read(location: StateLocation, step: int, keys: list[bytes]) -> list[bytes | None]:
    store = location.partition("op", 0)
    store.begin(step)
    try:
        return store.get_many(keys)
    finally:
        store.close()


def test_a_retried_step_sees_the_state_before_its_first_attempt(tmp_path: Path) -> None:
    location = _location(tmp_path)
    _apply(location, 1, {b"a": b"1"})
    first = _apply(location, 2, {b"a": b"2", b"b": b"x"})
    retry = _apply(location, 2, {b"a": b"3"})
    assert first == {b"a": b"1", b"b": None}
    assert retry == {b"a": b"1"}
    assert _read(location, 3, [b"a", b"b"]) == [b"3", None]


def test_a_lost_working_copy_is_rebuilt_from_snapshots_and_changelogs(tmp_path: Path) -> None:
    location = _location(tmp_path, interval_ms=10**12)  # one snapshot, then changelogs only
    _apply(location, 1, {b"a": b"1", b"b": b"1"})
    _apply(location, 2, {b"a": b"2"})
    _apply(location, 5, {b"b": None, b"c": b"5"})
    shutil.rmtree(tmp_path / "local")
    assert _read(location, 6, [b"a", b"b", b"c"]) == [b"2", None, b"5"]


def test_a_replayed_step_after_a_snapshot_can_still_restore_its_base(tmp_path: Path) -> None:
    location = _location(tmp_path, interval_ms=0)  # a snapshot whenever changelogs justify it
    for step in range(1, 6):
        _apply(location, step, {f"k{step}".encode(): b"v" * 100})
    # step 5 wrote a snapshot, but the driver never committed it: replay it on a new executor
    shutil.rmtree(tmp_path / "local")
    before = _apply(location, 5, {b"k5": b"other"})
    assert before == {b"k5": None}
    assert _read(location, 6, [b"k1", b"k4", b"k5"]) == [b"v" * 100, b"v" * 100, b"other"]


def test_a_working_copy_opened_at_every_step_keeps_one_old_info_log(tmp_path: Path) -> None:
    location = _location(tmp_path)
    for step in range(1, 21):
        _apply(location, step, {b"a": str(step).encode()})
    logs = [f.name for f in (tmp_path / "local" / "op" / "00000").iterdir() if f.name.startswith("LOG")]
    assert sorted(logs)[0] == "LOG" and len(logs) <= 2, logs
    assert _read(location, 21, [b"a"]) == [b"20"]


def test_latest_records_the_step_and_its_base(tmp_path: Path) -> None:
    location = _location(tmp_path)
    _apply(location, 3, {b"a": b"1"})
    _apply(location, 7, {b"a": b"2"})
    latest = json.loads((tmp_path / "checkpoint" / "op" / "00000" / "LATEST").read_text())
    assert latest == {"version": 7, "base": 3}


def test_a_partition_without_its_latest_file_is_an_error_naming_it(tmp_path: Path) -> None:
    location = _location(tmp_path)
    _apply(location, 1, {b"a": b"1"})
    (tmp_path / "checkpoint" / "op" / "00000" / "LATEST").unlink()
    with pytest.raises(PersistenceError, match=f"{tmp_path / 'checkpoint' / 'op' / '00000'}.*LATEST file is missing"):
        _read(location, 2, [b"a"])


def test_each_state_partition_is_shuffled_to_a_spark_partition_of_its_own(spark) -> None:
    from pyspark.sql import functions as F

    from sparkway.engine.stateful import _spark_hash_of_long, by_state_partition

    longs = [0, 1, 2, 41, 2**31, -7, 2**40 + 3, -(2**63), 2**63 - 1]
    hashed = spark.createDataFrame([(v,) for v in longs], "v long").select(F.hash("v")).collect()
    assert [row[0] for row in hashed] == [_spark_hash_of_long(v) for v in longs]
    for partitions in (2, 3, 8):  # by _part itself, parts 0 and 1 of 2 shared one Spark partition
        parts = spark.range(0, 4 * partitions).select((F.col("id") % partitions).alias("_part"))
        spread = by_state_partition(parts, partitions).rdd.glom().map(lambda rows: sorted({r[0] for r in rows})).collect()
        assert spread == [[p] for p in range(partitions)]


def test_a_small_step_s_contributions_cross_one_shuffle_and_sum_to_what_spark_sums(spark) -> None:
    from collections import Counter

    from pyspark.sql import functions as F

    from sparkway.engine.kernels.reduce import contributions
    from sparkway.engine.stateful import ROUTE, KeyedInput, _contributions, by_state_partition

    changes = spark.range(0, 400).select(
        F.lit(0).alias("_input"), (F.col("id") % 37).alias("_gid"), (F.col("id") % 37 % 2).alias("_part"),
        F.when(F.col("id") % 5 == 0, -1).otherwise(1).cast("long").alias("_diff"),
        F.when(F.col("id") % 7 == 0, None).otherwise(F.col("id") * 3_000_000_000).alias("_0_v"),
    )
    item = KeyedInput(changes, [F.col("_gid")], {"v": F.col("v")})
    reduce_sum = ([], [("total", "sum", ["v"], ())], False)
    per_change = _contributions(item, contributions, reduce_sum, summed=False)(changes)
    routed = by_state_partition(per_change, 2).drop(ROUTE)
    # grouped by other keys than the shuffle's, Spark would shuffle again, mixing state partitions
    assert routed._jdf.queryExecution().executedPlan().toString().count("Exchange") == 1
    assert routed.rdd.glom().map(lambda rows: sorted({row._part for row in rows})).collect() == [[0], [1]]

    def sums(row) -> Counter:
        return Counter({k: v for k, v in row.asDict().items() if k not in ("_input", "_gid", "_part")})

    sums_here: dict[int, Counter] = {}
    for row in routed.collect():  # what the executors sum
        sums_here.setdefault(row._gid, Counter()).update(sums(row))
    summed = _contributions(item, contributions, reduce_sum, summed=True)(changes).collect()
    assert {row._gid: sums(row) for row in summed} == sums_here
    assert len(sums_here) == 37


@pytest.mark.parametrize("write", ["bytes", "arrow"])
def test_a_full_disk_is_an_error_naming_the_file_and_leaves_no_temporary_file(tmp_path: Path, monkeypatch, write: str) -> None:
    import errno
    import os

    import pyarrow as pa

    storage = BlobStorage(str(tmp_path / "storage"))
    storage.write_bytes("kept.json", b"{}")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(PersistenceError, match=f"no space left to write {tmp_path / 'storage' / 'commits'}/1.json"
                       if write == "bytes" else f"no space left to write {tmp_path / 'storage' / 'runs'}/1.arrow"):
        if write == "bytes":
            storage.write_bytes("commits/1.json", b'{"step": 1}')
        else:
            storage.write_arrow("runs/1.arrow", pa.table({"a": [1, 2]}))
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == ["storage/kept.json"], "nothing half-written, no temporary file"


@pytest.mark.parametrize("write", ["bytes", "arrow"])
def test_a_written_file_s_folder_and_the_folders_made_for_it_are_fsynced(
    tmp_path: Path, monkeypatch, write: str,
) -> None:
    """A rename is durable once its folder is fsynced (else a power loss may lose a
    committed file), a new folder once its parent is: the storage does both, after the
    file's own fsync."""
    import os

    import pyarrow as pa

    synced: list[str] = []
    fsync = os.fsync

    def recording(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        fsync(fd)

    storage = BlobStorage(str(tmp_path / "storage"))
    monkeypatch.setattr(os, "fsync", recording)
    if write == "bytes":
        storage.write_bytes("positions/words/1.json", b"{}")
    else:
        storage.write_arrow("positions/words/1.json", pa.table({"a": [1]}))
    target = tmp_path / "storage" / "positions" / "words" / "1.json"
    folders = [str(tmp_path), str(tmp_path / "storage"), str(tmp_path / "storage" / "positions")]
    assert synced[:3] == folders, "each folder made is fsynced into its parent, top down"
    assert synced[3].startswith(f"{target}.tmp-"), "the temporary file, before its rename"
    assert synced[4:] == [str(target.parent)], "the folder of the new name, after the rename"
    synced.clear()
    storage.write_bytes("positions/words/1.json", b"[]")  # the folders exist: only the file and its folder
    assert [s.split(".tmp-")[0] for s in synced] == [str(target), str(target.parent)]


def test_the_state_of_a_run_without_persistence_is_written_whole_but_not_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No later run reads it, so no power loss can matter: the storage replaces files
    whole (a reader never sees half of one) without an fsync, and its children and its
    copies in Spark's tasks (pickled) are alike."""
    import os
    import pickle

    import pyarrow as pa

    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    storage = pickle.loads(pickle.dumps(BlobStorage(str(tmp_path / "state"), synced=False))).child("op/00000")
    storage.write_bytes("manifest/1.json", b"{}")
    storage.write_arrow("runs/1.arrow", pa.table({"a": [1]}))
    assert synced == []
    assert storage.read_json("manifest/1.json") == {} and storage.open_arrow("runs/1.arrow").read_all().num_rows == 1
    folder = tmp_path / "state" / "op" / "00000"
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) == ["manifest", "manifest/1.json", "runs", "runs/1.arrow"]


def test_opening_the_working_copies_deletes_the_temporary_files_a_crash_left(tmp_path: Path) -> None:
    from sparkway.persistence.working_copies import working_copy

    storage = BlobStorage(str(tmp_path / "PStorage"))
    folder = Path(working_copy(str(tmp_path / "cache"), storage, "incarnation-1"))
    (folder / "operators" / "0").mkdir(parents=True)
    left = folder / "operators" / "0" / "run-3.arrow.tmp-4f2a"
    kept = folder / "operators" / "0" / "run-2.arrow"
    left.write_bytes(b"cut short")
    kept.write_bytes(b"whole")
    assert Path(working_copy(str(tmp_path / "cache"), storage, "incarnation-1")) == folder
    assert not left.exists() and kept.read_bytes() == b"whole"


def test_the_end_of_a_rebuild_is_durable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The REBUILDING mark's removal is fsynced: back after a power loss, it would make
    the next run discard the steps committed since the rebuild."""
    import os

    from sparkway.persistence.metadata import REBUILDING, MetadataLog

    synced: list[str] = []
    fsync = os.fsync

    def recording(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        fsync(fd)

    log = MetadataLog(BlobStorage(str(tmp_path / "storage")))
    log.begin_rebuild()
    monkeypatch.setattr(os, "fsync", recording)
    log.write_plan([], 2)
    assert not (tmp_path / "storage" / REBUILDING).exists()
    # the folder twice: after plan.json's rename, then after the mark's removal
    assert [path for path in synced if not path.startswith(str(tmp_path / "storage" / "plan.json"))] == [
        str(tmp_path / "storage")] * 2, synced


def test_a_late_task_of_an_earlier_run_cannot_set_the_state_back(tmp_path: Path) -> None:
    """The driver of run A died alone; its task on another executor finishes step 2
    after run B has replayed step 2 and committed step 3: its LATEST would make step 4
    start from step 2's state, losing step 3."""
    checkpoint = BlobStorage(str(tmp_path / "checkpoint"))
    run_a = StateLocation(checkpoint.child("operators"), str(tmp_path / "executor-a"), 0, Fence.take(checkpoint))
    _apply(run_a, 1, {b"a": b"1"})
    late = run_a.partition("op", 0)
    late.begin(2)
    run_b = StateLocation(checkpoint.child("operators"), str(tmp_path / "executor-b"), 0, Fence.take(checkpoint))
    _apply(run_b, 2, {b"a": b"2"})
    _apply(run_b, 3, {b"a": b"3"})
    try:
        with pytest.raises(PersistenceError, match="a newer run owns the persistence storage"):
            late.commit({b"a": b"2"})
    finally:
        late.close()
    assert _read(run_b, 4, [b"a"]) == [b"3"]


def test_a_late_attempt_of_a_step_that_starts_after_the_next_step_stops_without_writing(tmp_path: Path) -> None:
    """A speculative copy that lost (or an attempt Spark gave up on) of step 2 opens the
    partition after step 3 committed: taking step 3's base (2) as its own, it rolled the
    working copy back to 2 and wrote LATEST {2, 2}, so that step 4 lost step 3."""
    location = _location(tmp_path)
    _apply(location, 1, {b"a": b"1"})
    _apply(location, 2, {b"a": b"2"})
    _apply(location, 3, {b"a": b"3"})
    late = location.partition("op", 0)
    try:
        with pytest.raises(LateAttempt, match="is at version 3 .*a late attempt of step 2"):
            late.begin(2)
    finally:
        late.close()
    assert _read(location, 4, [b"a"]) == [b"3"]


def test_a_late_attempt_that_commits_after_the_next_step_stops_without_writing(tmp_path: Path) -> None:
    """Two attempts of step 2 on two executors (two working copies): the one that began
    first commits after the other won and step 3 committed; its LATEST would set the
    partition back to step 2.  An attempt committing after its twin, before step 3, is
    a retry as any other."""
    checkpoint = BlobStorage(str(tmp_path / "checkpoint"))
    executor_a = StateLocation(checkpoint, str(tmp_path / "executor-a"), 0)
    executor_b = StateLocation(checkpoint, str(tmp_path / "executor-b"), 0)
    _apply(executor_a, 1, {b"a": b"1"})
    twin, late = executor_a.partition("op", 0), executor_a.partition("op", 0)
    twin.begin(2)
    _apply(executor_b, 2, {b"a": b"2"})
    twin.commit({b"a": b"2"})  # after the winner, before step 3: the same version again
    twin.close()
    late.begin(2)
    _apply(executor_b, 3, {b"a": b"3"})
    try:
        with pytest.raises(LateAttempt, match="is at version 3 "):
            late.commit({b"a": b"2"})
    finally:
        late.close()
    assert _read(executor_b, 4, [b"a"]) == [b"3"]
    assert _read(executor_a, 4, [b"a"]) == [b"3"]  # the late attempt's working copy was left at its base
