"""A file source's position in the metadata log: stored as an index of layers
(``persistence/index.py``), so that a commit writes what its step changed, not every file
ever read (issue 13).  The source and the metadata log alone, as the step loop drives
them (no Spark)."""

from __future__ import annotations

import collections
import json
import random
from pathlib import Path

import pytest

from sparkway.connectors.files import FileSource
from sparkway.core.columns import Column
from sparkway.core.dtypes import STR
from sparkway.errors import PersistenceError
from sparkway.persistence import index as index_module
from sparkway.persistence.metadata import STATE_FORMAT, MetadataLog
from sparkway.persistence.storage import BlobStorage


class CountingStorage(BlobStorage):
    """A storage that records the bytes of every blob written through it."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.written: list[tuple[str, int]] = []

    def write_bytes(self, relative: str, data: bytes) -> None:
        self.written.append((relative, len(data)))
        super().write_bytes(relative, data)


def file_source(folder: Path) -> FileSource:
    src = FileSource(str(folder), format="csv", columns={"word": Column("word", STR)}, mode="streaming",
                     name="words")
    src.open(None)
    return src


def add_files(folder: Path, names: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text(f"word\n{name}\n")


class Run:
    """A file source and the metadata log of its storage, stepped as the runner does."""

    def __init__(self, tmp_path: Path) -> None:
        self.inputs = tmp_path / "in"
        self.inputs.mkdir(parents=True, exist_ok=True)
        self.storage = CountingStorage(str(tmp_path / "state"))
        self.log = MetadataLog(self.storage)
        self.source = file_source(self.inputs)
        self.step = 0

    def restart(self) -> None:
        """A new process: the log and the source restored from the last commit."""
        self.log = MetadataLog(self.storage)
        self.source = file_source(self.inputs)
        commit = self.log.last_commit()
        if commit is not None:
            self.step = commit["step"]
            self.source.restore(commit["positions"]["words"])

    def commit(self) -> int:
        """One step (whatever the source finds); the bytes its commit wrote."""
        self.step += 1
        self.source.advance(self.source.discover())
        self.storage.written.clear()
        self.log.commit(self.step, self.step, {"words": self.source.committed_position()}, {"words": 0})
        return sum(size for _, size in self.storage.written)

    def restored(self) -> dict:
        return MetadataLog(self.storage).last_commit()["positions"]["words"]

    def layers(self) -> list[dict]:
        names = self.storage.list("commits")
        return self.storage.read_json(f"commits/{names[-1]}")["indexes"]["words"]["layers"]

    def layer_path(self, layer: dict) -> Path:
        return Path(self.storage.path(f"positions/words/{layer['first']:016d}-{layer['last']:016d}.json"))


def test_a_commit_writes_what_its_step_changed_not_every_file_read(tmp_path: Path) -> None:
    per_step = {}
    for files in (200, 2000):
        run = Run(tmp_path / str(files))
        add_files(run.inputs, [f"f{i:05d}.csv" for i in range(files)])
        first = run.commit()  # every file: the base
        sizes = []
        for k in range(30):
            add_files(run.inputs, [f"new{k:03d}.csv"])
            sizes.append(run.commit())
        per_step[files] = sizes
    # a step writes as much after 2,000 files as after 200 (whole positions: 10 times
    # as much, 500 KB per step), but for a digit more in each path (.../2000/in/...)
    assert all(a <= b < 1.02 * a for a, b in zip(per_step[200], per_step[2000])), per_step
    assert max(per_step[2000]) < first / 50 and sum(per_step[2000]) / 30 < 2000, (first, per_step[2000])


def test_the_writes_stay_proportional_to_the_changes_over_many_steps(tmp_path: Path) -> None:
    """New files step after step: the base is rewritten now and then, as the index grows,
    and the deltas merge, but on the whole each new file costs a bounded number of bytes,
    and a restart reads a logarithmic number of layers."""
    run = Run(tmp_path)
    add_files(run.inputs, [f"f{i:04d}.csv" for i in range(20)])
    run.commit()
    total, bases = 0, 0
    for k in range(300):
        add_files(run.inputs, [f"n{k:04d}.csv"])
        total += run.commit()
        layers = run.layers()
        bases += layers[0]["last"] == run.step
        assert len(layers) <= 2 + len(run.source.position()["files"]).bit_length(), layers
        on_disk = sorted(p.name for p in Path(run.storage.path("positions/words")).iterdir())
        assert on_disk == sorted(run.layer_path(layer).name for layer in layers), "unnamed layers are deleted"
    assert 2 <= bases <= 6, f"the base was rewritten {bases} times"
    one_entry = len(json.dumps(run.source.position()["files"]["n0000.csv"]))
    assert total / 300 < 12 * one_entry, f"{total / 300:.0f} bytes per new file of {one_entry} bytes"


def test_restored_positions_are_the_committed_ones_through_merges_and_new_bases(tmp_path: Path) -> None:
    """New, appended, rewritten and deleted files at random, over many steps and a few
    restarts: the position a restart reads is the source's, every time."""
    rng = random.Random(13)
    run = Run(tmp_path)
    names = [f"f{i:02d}.csv" for i in range(40)]
    add_files(run.inputs, names[:10])
    seen: set[tuple[str, int]] = set()  # the layers commits named: (kind, step that wrote it)
    for k in range(120):
        for _ in range(rng.randint(0, 3)):
            name = rng.choice(names)
            path = run.inputs / name
            what = rng.random()
            if not path.exists():
                add_files(run.inputs, [name])
            elif what < 0.5:
                with open(path, "a") as f:
                    f.write(f"x{k}\n")
            elif what < 0.8:
                path.write_text(f"word\nchanged{k}\n")
            else:
                path.unlink()
        run.commit()
        assert run.restored() == run.source.position(), f"step {run.step}"
        seen |= {("base" if layer["first"] == 0 else "merged" if layer["first"] < layer["last"] else "delta",
                  layer["last"]) for layer in run.layers()}
        if k % 40 == 39:
            run.restart()
            assert run.source.position() == run.restored()
    kinds = collections.Counter(kind for kind, _ in seen)
    assert kinds["base"] > 3 and kinds["merged"] > 3 and kinds["delta"] > 3, kinds


@pytest.mark.parametrize("point", ["metadata.index.delta.written", "metadata.index.base.written"])
def test_a_crash_between_a_layer_and_its_commit_restarts_from_the_last_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str,
) -> None:
    run = Run(tmp_path)
    add_files(run.inputs, [f"f{i:02d}.csv" for i in range(8)])
    run.commit()
    for k in range(4):  # deltas, a few of them merged
        add_files(run.inputs, [f"n{k}.csv"])
        run.commit()
    assert [(layer["first"] > 0, layer["entries"]) for layer in run.layers()] == [(False, 8), (True, 3), (True, 1)]
    committed = run.source.position()
    # the next step merges its change with both deltas (one new file), or writes a base
    # (more new files than the index holds): the layers it replaces must outlive the crash
    new = ["crash.csv"] if point.endswith("delta.written") else [f"c{i}.csv" for i in range(30)]
    add_files(run.inputs, new)

    def crash(name: str) -> None:
        if name == point:
            raise SystemExit(137)  # the process ends here

    monkeypatch.setattr(index_module, "fault_point", crash)
    with pytest.raises(SystemExit):
        run.commit()
    monkeypatch.undo()
    run.restart()
    assert run.source.position() == committed, "the restart continues from the last commit"
    run.commit()  # the step again
    assert set(new) <= set(run.source.position()["files"]) and run.restored() == run.source.position()
    assert len(run.layers()) == (2 if point.endswith("delta.written") else 1)


def test_a_missing_or_damaged_layer_is_an_error_naming_it(tmp_path: Path) -> None:
    run = Run(tmp_path)
    add_files(run.inputs, [f"f{i:02d}.csv" for i in range(8)])
    run.commit()
    add_files(run.inputs, ["g.csv"])
    run.commit()
    base, delta = (run.layer_path(layer) for layer in run.layers())
    saved = base.read_bytes()

    base.unlink()
    with pytest.raises(PersistenceError, match=f"cannot read {base}: the file is missing.*source 'words'.*restore it"):
        run.restart()
    base.write_bytes(saved[: len(saved) // 2])  # cut short
    with pytest.raises(PersistenceError, match=f"cannot read {base}.*damaged"):
        run.restart()
    base.write_bytes(delta.read_bytes())  # another layer's content
    with pytest.raises(PersistenceError, match=f"cannot read {base}.*not the layer"):
        run.restart()
    base.write_bytes(saved)
    delta.write_bytes(b"\x00garbage")
    with pytest.raises(PersistenceError, match=f"cannot read {delta}.*damaged"):
        run.restart()


def test_layers_a_crash_left_unnamed_are_deleted_by_the_next_commit(tmp_path: Path) -> None:
    run = Run(tmp_path)
    add_files(run.inputs, ["a.csv", "b.csv"])
    run.commit()
    stray = Path(run.storage.path(f"positions/words/{0:016d}-{run.step + 1:016d}.json"))
    stray.write_text("{}")  # a base a crashed step wrote before its commit
    run.restart()
    run.commit()  # nothing new: the step writes no layer, yet deletes the stray one
    assert not stray.exists()
    assert run.restored() == run.source.position()


def test_a_storage_of_the_previous_format_is_read_and_continued(tmp_path: Path) -> None:
    """State format 2 stored every position whole in each commit record: it is read, the
    plan record moves to the new format, and the next commit writes the position's base."""
    run = Run(tmp_path)
    add_files(run.inputs, ["a.csv", "b.csv"])
    run.source.advance(run.source.discover())
    nodes = [{"kind": "Input", "inputs": []}]
    run.storage.write_bytes("plan.json", json.dumps(
        {"nodes": nodes, "incarnation": "kept", "partitions": 2, "state_format": 2}).encode())
    run.log.commit(1, 1, {"words": run.source.position()}, {"words": 2})  # a position stored whole
    before = run.source.position()
    assert "indexes" not in run.storage.read_json("commits/0000000000000001.json")

    run.restart()
    assert run.source.position() == before
    record, rebuild = run.log.check_plan(nodes, rebuild=False, partitions=2)
    assert not rebuild and record["state_format"] == STATE_FORMAT == 3 and record["incarnation"] == "kept"
    assert run.storage.read_json("plan.json") == record
    add_files(run.inputs, ["c.csv"])
    run.commit()
    assert [layer["first"] for layer in run.layers()] == [0]  # a base of every file
    assert run.restored() == run.source.position() and set(run.restored()["files"]) == {"a.csv", "b.csv", "c.csv"}
