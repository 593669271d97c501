"""Arrangements (``state/arrangement.py``): sorted runs that give back exactly the rows
put in, find groups without a scan, merge as they grow, and survive retries and crashes."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from sparkway.errors import PersistenceError
from sparkway.persistence.storage import BlobStorage
from sparkway.state.arrangement import ArrangementStore, consolidated, consolidated_union, positions_of
from sparkway.state.store import StateLocation
from sparkway.state.versions import Fence, LateAttempt


def _store(tmp_path: Path) -> ArrangementStore:
    return StateLocation(BlobStorage(str(tmp_path / "checkpoint")), str(tmp_path / "local"), 0).arrangements("op", 0)


def _rows(changes: list[tuple[int, int, int, int, str]]) -> pa.Table:
    """(gid, id, count, time, value) as arrangement rows; the value hash is the value's."""
    gid, row_id, count, time, value = (list(c) for c in zip(*changes))
    return pa.table({
        "_gid": pa.array(gid, pa.int64()), "_id": pa.array(row_id, pa.int64()),
        "_vh": pa.array([hash(v) % 1000 for v in value], pa.int64()), "_count": pa.array(count, pa.int64()),
        "_time": pa.array(time, pa.int64()), "_v0": pa.array(value, pa.string()),
    })


def _step(tmp_path: Path, step: int, changes: list[tuple]) -> None:
    store = _store(tmp_path)
    store.begin(step)
    store.commit({0: consolidated(_rows(changes))})


def _held(tmp_path: Path, step: int, gids: list[int]) -> Counter:
    """(gid, id, value) -> multiplicity of what the store holds for ``gids`` before
    ``step``; a lookup consolidates the rows of its runs (an entry at most once)."""
    store = _store(tmp_path)
    store.begin(step)
    table = store.lookup(0, np.array(sorted(gids), dtype=np.int64))
    if table is None:
        return Counter()
    keys = list(zip(*(table.column(k).to_pylist() for k in ("_gid", "_id", "_vh"))))
    assert len(set(keys)) == len(keys) and 0 not in table.column("_count").to_pylist()
    return Counter({(g, i, v): c for g, i, v, c in zip(
        table.column("_gid").to_pylist(), table.column("_id").to_pylist(), table.column("_v0").to_pylist(),
        table.column("_count").to_pylist())})


def test_positions_of_finds_every_row_of_the_groups_asked_for() -> None:
    sorted_gids = np.array([1, 1, 4, 6, 6, 6, 9])
    assert positions_of(sorted_gids, np.array([1, 6])).tolist() == [0, 1, 3, 4, 5]
    assert positions_of(sorted_gids, np.array([0, 5, 10])).tolist() == []


def test_consolidated_sums_counts_and_keeps_the_time_of_the_latest_insertion() -> None:
    rows = _rows([(1, 10, 1, 5, "a"), (1, 10, 1, 7, "a"), (1, 10, -1, 9, "a"), (2, 20, 1, 3, "b"), (2, 20, -1, 4, "b")])
    out = consolidated(rows)
    assert out.select(["_gid", "_id", "_count", "_time", "_v0"]).to_pylist() == [
        {"_gid": 1, "_id": 10, "_count": 1, "_time": 7, "_v0": "a"},  # a retraction does not move the time
    ]


def test_consolidated_matches_a_reference_on_rows_in_any_order() -> None:
    """Rows in random order, ids repeated with other values (the same id and group with
    several value hashes, in descending order too), accumulators that move while the
    count does not: one row per key, ascending, as a dictionary-based reference says."""
    rng = random.Random(5)
    for _ in range(200):
        n = rng.randrange(1, 60)
        rows = [(rng.randrange(4), rng.randrange(3), rng.randrange(3), rng.choice((1, -1, 2)), rng.randrange(10),
                 rng.randrange(-2, 3)) for _ in range(n)]
        table = pa.table({
            name: pa.array([r[i] for r in rows], pa.int64())
            for i, name in enumerate(["_gid", "_id", "_vh", "_count", "_time", "_sum"])
        }).append_column("_v0", pa.array([f"row{i}" for i in range(n)]))
        expected = {}
        for i, (gid, row_id, vh, count, time, total) in enumerate(rows):
            entry = expected.setdefault((gid, row_id, vh), {"count": 0, "inserted": None, "latest": time, "sum": 0, "first": i})
            entry["count"] += count
            entry["sum"] += total
            entry["latest"] = max(entry["latest"], time)
            if count > 0:
                entry["inserted"] = time if entry["inserted"] is None else max(entry["inserted"], time)
        want = [
            {"_gid": k[0], "_id": k[1], "_vh": k[2], "_count": e["count"],
             "_time": e["inserted"] if e["inserted"] is not None else e["latest"], "_sum": e["sum"], "_v0": f"row{e['first']}"}
            for k, e in sorted(expected.items()) if e["count"] != 0 or e["sum"] != 0
        ]
        assert consolidated(table, ("_sum",)).to_pylist() == want


def test_consolidated_union_is_the_consolidation_of_both_tables() -> None:
    rng = random.Random(11)
    for _ in range(30):
        def changes(n: int, counts: tuple[int, ...]) -> list[tuple]:
            return [(rng.randrange(4), rng.randrange(12), rng.choice(counts), rng.randrange(5), rng.choice("xyz"))
                    for _ in range(n)]
        held = consolidated(_rows(changes(rng.randrange(1, 40), (1, 2))))
        more = consolidated(_rows(changes(rng.randrange(1, 10), (1, -1, 2)))) if rng.random() < 0.9 else held.slice(0, 0)
        expected = consolidated(pa.concat_tables([held, more]))
        got = consolidated_union(held, more)
        assert sorted(got.to_pylist(), key=repr) == sorted(expected.to_pylist(), key=repr)


def test_lookups_give_back_what_the_steps_put_in_across_merges(tmp_path: Path) -> None:
    rng = random.Random(7)
    expected: Counter = Counter()
    live: list[tuple[int, int, str]] = []
    for step in range(1, 40):
        changes = []
        for _ in range(rng.randint(1, 30)):
            if live and rng.random() < 0.3:
                gid, row_id, value = live.pop(rng.randrange(len(live)))
                changes.append((gid, row_id, -1, step, value))
                expected[(gid, row_id, value)] -= 1
            else:
                key = (rng.randrange(50), rng.randrange(10**6), rng.choice("abc"))
                live.append(key)
                changes.append((key[0], key[1], 1, step, key[2]))
                expected[key] += 1
        _step(tmp_path, step, changes)
    expected = +expected
    asked = [3, 17, 42, 49]
    assert _held(tmp_path, 40, asked) == Counter({k: c for k, c in expected.items() if k[0] in asked})
    assert _held(tmp_path, 40, list(range(50))) == expected
    manifest = json.loads(next((tmp_path / "checkpoint" / "op" / "00000" / "manifest").glob("*.json")).read_text())
    sizes = [rows for _, rows in manifest["runs"]["0"]]
    assert len(sizes) <= 1 + int(np.log2(sum(sizes))), sizes  # merged as they grow: few runs
    assert all(2 * newer < older for older, newer in zip(sizes, sizes[1:]))


def test_only_the_runs_of_the_state_and_its_base_are_kept(tmp_path: Path) -> None:
    for step in range(1, 20):
        _step(tmp_path, step, [(step % 5, step, 1, step, "x")])
    root = tmp_path / "checkpoint" / "op" / "00000"
    manifests = sorted(p.name for p in (root / "manifest").iterdir())
    assert manifests == ["0000000000000018.json", "0000000000000019.json"]
    named = {name for m in manifests for name, _ in json.loads((root / "manifest" / m).read_text())["runs"]["0"]}
    assert {p.name for p in (root / "runs").iterdir()} == named


def test_a_retried_step_starts_from_the_state_before_its_first_attempt(tmp_path: Path) -> None:
    _step(tmp_path, 1, [(1, 1, 1, 1, "a")])
    _step(tmp_path, 2, [(1, 2, 1, 2, "b")])
    _step(tmp_path, 2, [(1, 3, 1, 2, "c")])  # the retry, with other changes
    assert _held(tmp_path, 3, [1]) == Counter({(1, 1, "a"): 1, (1, 3, "c"): 1})
    latest = json.loads((tmp_path / "checkpoint" / "op" / "00000" / "LATEST").read_text())
    assert latest == {"version": 2, "base": 1}


def test_a_crash_before_latest_leaves_the_previous_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _step(tmp_path, 1, [(1, 1, 1, 1, "a")])
    written = []
    original = BlobStorage.write_bytes

    def crash_on_latest(self: BlobStorage, relative: str, data: bytes) -> None:
        if relative == "LATEST":
            raise KeyboardInterrupt("killed")
        written.append(relative)
        original(self, relative, data)

    monkeypatch.setattr(BlobStorage, "write_bytes", crash_on_latest)
    with pytest.raises(KeyboardInterrupt):
        _step(tmp_path, 2, [(1, 1, -1, 2, "a"), (2, 5, 1, 2, "z")])
    monkeypatch.undo()
    runs = [p.name for p in (tmp_path / "checkpoint" / "op" / "00000" / "runs").iterdir()]
    assert any(name.startswith("0000000000000002-") for name in runs) and "manifest/0000000000000002.json" in written
    assert _held(tmp_path, 2, [1, 2]) == Counter({(1, 1, "a"): 1})  # the step's runs are not part of it


def test_a_partition_that_lost_its_latest_file_is_an_error_not_an_empty_state(tmp_path: Path) -> None:
    _step(tmp_path, 1, [(1, 1, 1, 1, "a")])
    _step(tmp_path, 2, [(1, 2, 1, 2, "b")])
    latest = tmp_path / "checkpoint" / "op" / "00000" / "LATEST"
    latest.unlink()
    with pytest.raises(PersistenceError, match=f"{latest.parent}.*holds version 2 but its LATEST file is missing"):
        _held(tmp_path, 3, [1])
    latest.write_text("{not json")
    with pytest.raises(PersistenceError, match=f"cannot read {latest}"):
        _held(tmp_path, 3, [1])


def test_a_crash_in_a_partition_s_first_commit_replays_from_no_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = BlobStorage.write_bytes

    def crash_on_latest(self: BlobStorage, relative: str, data: bytes) -> None:
        if relative == "LATEST":
            raise KeyboardInterrupt("killed")
        original(self, relative, data)

    monkeypatch.setattr(BlobStorage, "write_bytes", crash_on_latest)
    with pytest.raises(KeyboardInterrupt):
        _step(tmp_path, 1, [(1, 1, 1, 1, "a")])
    monkeypatch.undo()
    assert (tmp_path / "checkpoint" / "op" / "00000" / "manifest" / "0000000000000001.json").exists()
    assert _held(tmp_path, 1, [1]) == Counter()  # step 1 replays on no state
    _step(tmp_path, 1, [(1, 1, 1, 1, "a")])
    assert _held(tmp_path, 2, [1]) == Counter({(1, 1, "a"): 1})


def _multiset(table: pa.Table) -> Counter:
    """(gid, id, value, time) -> multiplicity."""
    return Counter({
        tuple(key): count for *key, count in zip(
            table.column("_gid").to_pylist(), table.column("_id").to_pylist(), table.column("_v0").to_pylist(),
            table.column("_time").to_pylist(), table.column("_count").to_pylist())
        if count
    }) if table.num_rows else Counter()


def test_vectorized_changes_follow_the_per_entry_rules() -> None:
    """``_versions`` (vectorized, falling back to ``_irregular`` for odd groups) against
    ``_irregular`` on every group: the per-entry rules (a retraction counts for the row of
    its values, else for the id's earliest row; what it cannot cancel stays negative)."""
    from sparkway.engine.stateful import _irregular, _versions

    rng = random.Random(3)
    state = consolidated(_rows([(0, 0, 1, 0, "a")]))
    for step in range(1, 60):
        changes = []
        for _ in range(rng.randint(1, 12)):
            kind = rng.random()
            held = state.to_pylist()
            if held and kind < 0.5:  # retract something held, sometimes with other values
                row = rng.choice(held)
                value = row["_v0"] if rng.random() < 0.8 else rng.choice("abc")
                changes.append((row["_gid"], row["_id"], -1, step, value))
            elif kind < 0.55:  # retract an id never inserted
                changes.append((rng.randrange(8), 10**6 + rng.randrange(100), -1, step, rng.choice("abc")))
            else:
                changes.append((rng.randrange(8), rng.randrange(40), 1, step, rng.choice("abc")))
        step_rows = _rows(changes)
        fast_old, fast_new, fast_changes = _versions(state, step_rows)
        ref_old, ref_new, ref_changes = _irregular(state, step_rows)
        assert _multiset(fast_old) == _multiset(ref_old), step
        assert _multiset(fast_new) == _multiset(ref_new), step
        fast_state = consolidated(pa.concat_tables([state, fast_changes]))
        assert _multiset(fast_state) == _multiset(consolidated(pa.concat_tables([state, ref_changes]))), step
        state = fast_state


def test_a_state_without_the_manifest_of_its_version_is_refused_with_what_to_do(tmp_path: Path) -> None:
    from sparkway.errors import PersistenceError

    _step(tmp_path, 1, [(1, 1, 1, 1, "a")])
    (tmp_path / "checkpoint" / "op" / "00000" / "manifest" / "0000000000000001.json").unlink()
    with pytest.raises(PersistenceError, match="delete the persistence folder"):
        _store(tmp_path).begin(2)


def test_the_checkpoint_holds_compressed_runs_and_a_lost_local_cache_is_filled_from_it(tmp_path: Path) -> None:
    import shutil

    changes = [(g, i, 1, 1, "same text in every row") for g in range(20) for i in range(50)]
    _step(tmp_path, 1, changes)
    [checkpoint_run] = (tmp_path / "checkpoint" / "op" / "00000" / "runs").iterdir()
    [local_run] = (tmp_path / "local" / "op" / "00000" / "runs").iterdir()
    assert checkpoint_run.name == local_run.name
    assert checkpoint_run.stat().st_size < local_run.stat().st_size / 2
    expected = _held(tmp_path, 2, list(range(20)))
    shutil.rmtree(tmp_path / "local")  # another machine, or a cleaned cache
    assert _held(tmp_path, 2, list(range(20))) == expected == Counter({(g, i, "same text in every row"): 1 for g, i, *_ in changes})


def test_a_damaged_working_copy_is_fetched_again_from_the_checkpoint(tmp_path: Path) -> None:
    changes = [(g, i, 1, 1, f"v{g}.{i}") for g in range(5) for i in range(4)]
    _step(tmp_path, 1, changes)
    expected = _held(tmp_path, 2, list(range(5)))
    [local_run] = (tmp_path / "local" / "op" / "00000" / "runs").iterdir()
    local_run.write_bytes(local_run.read_bytes()[:40])  # a truncated copy (a full disk, a crash of the copy)
    assert _held(tmp_path, 2, list(range(5))) == expected == Counter({(g, i, v): 1 for g, i, _, _, v in changes})


def test_a_full_disk_under_the_local_copy_is_an_error_naming_the_file(small_disk: Path) -> None:
    from sparkway.state.arrangement import _local_writer

    path = small_disk / "cache" / "run-1.arrow"
    noise = pa.table({"bytes": [np.random.default_rng(1).bytes(1 << 20) for _ in range(4)]})  # 4 MB > 2 MB
    with pytest.raises(PersistenceError, match=f"no space left to write {path}"):
        with _local_writer(str(path), noise.schema) as writer:
            writer.write_table(noise)
    assert [p.name for p in (small_disk / "cache").iterdir()] == [], "no half-written copy, no temporary file"


def test_a_late_task_of_an_earlier_run_cannot_set_the_arrangements_back(tmp_path: Path) -> None:
    """A task of a run whose driver died alone commits step 2 after the next run has
    replayed step 2 and committed step 3: its LATEST and pruning would make step 4
    start from step 2's runs."""
    checkpoint = BlobStorage(str(tmp_path / "checkpoint"))

    def store(fence: Fence) -> ArrangementStore:
        return StateLocation(checkpoint.child("operators"), str(tmp_path / "local"), 0, fence).arrangements("op", 0)

    run_a = Fence.take(checkpoint)
    first = store(run_a)
    first.begin(1)
    # five rows first, one per step after: no step merges runs
    first.commit({0: consolidated(_rows([(7, i, 1, 1, "x") for i in range(10, 15)]))})
    late = store(run_a)
    late.begin(2)
    late.add({0: consolidated(_rows([(7, 2, 1, 2, "y")]))})
    run_b = Fence.take(checkpoint)
    for step, changes in [(2, [(7, 2, 1, 2, "y")]), (3, [(7, 3, 1, 3, "z")])]:
        s = store(run_b)
        s.begin(step)
        s.commit({0: consolidated(_rows(changes))})
    with pytest.raises(PersistenceError, match="a newer run owns the persistence storage"):
        late.commit()
    now = store(run_b)
    now.begin(4)
    held = now.lookup(0, np.array([7], dtype=np.int64))
    assert sorted(held.column("_v0").to_pylist()) == ["x"] * 5 + ["y", "z"]


def test_a_late_attempt_of_a_step_that_starts_after_the_next_step_stops_without_writing(tmp_path: Path) -> None:
    """An attempt of step 2 opening the partition after step 3 committed took step 3's
    base (2) as its own: step 2's changes applied twice, and its LATEST {2, 2} (and
    pruning: step 3's manifest deleted) lost step 3."""
    _step(tmp_path, 1, [(7, 1, 1, 1, "a")])
    _step(tmp_path, 2, [(7, 2, 1, 2, "b")])
    _step(tmp_path, 3, [(7, 3, 1, 3, "c")])
    with pytest.raises(LateAttempt, match="is at version 3 .*a late attempt of step 2"):
        _store(tmp_path).begin(2)
    assert _held(tmp_path, 4, [7]) == Counter({(7, 1, "a"): 1, (7, 2, "b"): 1, (7, 3, "c"): 1})


def test_two_attempts_of_a_step_interleaved_commit_once_and_a_late_one_stops(tmp_path: Path) -> None:
    """Attempts of step 2 running at once (Spark's speculation): the second to commit
    writes the version the first wrote (the same runs, manifest and LATEST); one that
    commits after step 3 did stops before its manifest's LATEST, and prunes nothing."""
    _step(tmp_path, 1, [(7, i, 1, 1, "x") for i in range(10, 15)])  # one step a run: no merge after
    changes = consolidated(_rows([(7, 2, 1, 2, "y")]))
    first, second, late = _store(tmp_path), _store(tmp_path), _store(tmp_path)
    for attempt in (first, second, late):
        attempt.begin(2)
        attempt.add({0: changes})
    second.commit()
    first.commit()
    _step(tmp_path, 3, [(7, 3, 1, 3, "z")])
    root = tmp_path / "checkpoint" / "op" / "00000"
    manifests = sorted(p.name for p in (root / "manifest").iterdir())
    with pytest.raises(LateAttempt, match="is at version 3 "):
        late.commit()
    assert json.loads((root / "LATEST").read_text()) == {"version": 3, "base": 2}
    assert sorted(p.name for p in (root / "manifest").iterdir()) == manifests
    expected = Counter({**{(7, i, "x"): 1 for i in range(10, 15)}, (7, 2, "y"): 1, (7, 3, "z"): 1})
    assert _held(tmp_path, 4, [7]) == expected
