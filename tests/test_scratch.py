"""Scratch folders (``persistence/scratch.py``): a process's temporary files, which a crash
does not leak; the folders that runs and uploads use."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import sparkway as pw
from sparkway.persistence import scratch, storage

HOLDER = """
import sys, time
from sparkway.persistence.scratch import ScratchFolder
folder = ScratchFolder("held")
print(folder.path, flush=True)
time.sleep(600)
"""


@pytest.fixture
def tmp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary directory of this process and of the processes it starts."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    monkeypatch.setenv("TMPDIR", str(root))
    return root


def _holder() -> tuple[subprocess.Popen, Path]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True)
    return proc, Path(proc.stdout.readline().strip())


def _age(folder: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(folder / scratch.LOCK, (then, then))


def test_the_folders_of_ended_processes_are_removed_those_of_running_ones_kept(tmp_root: Path) -> None:
    killed, killed_folder = _holder()
    alive, alive_folder = _holder()
    try:
        killed.send_signal(signal.SIGKILL)  # no chance to remove its folder
        killed.wait()
        young, young_folder = _holder()
        young.send_signal(signal.SIGKILL)
        young.wait()
        foreign = tmp_root / "sparkway-not-a-scratch-folder"  # no lock file: someone else's
        foreign.mkdir()
        for folder in (killed_folder, alive_folder):
            _age(folder, 2 * scratch.GRACE_S)

        removed = scratch.remove_abandoned()

        assert removed == [str(killed_folder)]
        assert not killed_folder.exists()
        assert alive_folder.exists(), "the folder of a running process was removed"
        assert young_folder.exists(), "a folder within its grace period was removed"
        assert foreign.exists()
    finally:
        alive.kill()
        alive.wait()


def test_a_folder_is_locked_while_its_process_uses_it_and_gone_once_removed(tmp_root: Path) -> None:
    folder = scratch.ScratchFolder("test")
    path = Path(folder.path)
    assert path.parent == tmp_root and path.name.startswith("sparkway-test-")
    with open(path / scratch.LOCK) as other, pytest.raises(BlockingIOError):
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another open file: another owner
    folder.remove()
    assert not path.exists()


def test_an_upload_to_an_object_store_is_spooled_in_a_scratch_folder_removed_with_it(tmp_root: Path) -> None:
    with storage.spooled() as spool:
        folder = Path(spool).parent
        assert folder.parent == tmp_root and folder.name.startswith("sparkway-spool-")
        assert (folder / scratch.LOCK).exists()
        Path(spool).write_bytes(b"an upload")
    assert not folder.exists()


JVM_OWNER = """
import os
from sparkway.engine import spark
session = spark.get_spark()
folder = spark._JVM_TEMPORARY_FOLDERS[0].path
numbers = session.range(10)
numbers.groupBy((numbers.id % 2).alias("k")).count().collect()  # a shuffle's files
os.makedirs(os.path.join(folder, "left_by_spark", "inside"))  # as Spark Connect's model cache is
open(os.path.join(folder, "left_by_spark", "inside", "file"), "w").write("x")
print(folder, flush=True)
"""


def test_the_jvm_keeps_its_temporary_files_in_a_scratch_folder_deleted_as_it_exits(tmp_root: Path, python_env) -> None:
    proc = subprocess.run([sys.executable, "-c", JVM_OWNER], env={**python_env, "TMPDIR": str(tmp_root)},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    folder = Path(proc.stdout.split()[-1])
    assert folder.parent == tmp_root and folder.name.startswith("sparkway-spark-")
    deadline = time.monotonic() + 30  # the JVM exits after its Python process
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not folder.exists(), sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
    assert not list(tmp_root.iterdir())


@pytest.mark.usefixtures("spark")
def test_a_run_without_persistence_keeps_its_state_in_a_scratch_folder_it_removes(tmp_root: Path) -> None:
    seen: list[list[str]] = []
    table = pw.debug.table_from_markdown(
        """
        word
        ant
        bee
        ant
        """
    )
    counts = table.groupby(table.word).reduce(table.word, n=pw.reducers.count())

    def look(key, row, time, is_addition) -> None:
        seen.append(sorted(p.name.rsplit("-", 1)[0] for p in tmp_root.iterdir() if (p / scratch.LOCK).exists()))

    pw.io.subscribe(counts, look)
    pw.run()

    assert seen and all("sparkway-state" in names for names in seen), seen
    assert not [p.name for p in tmp_root.iterdir() if p.name.startswith("sparkway-")]
