"""Bytes a persistent run writes to its metadata storage per committed step, against the
number of files its file source has read (issue 13: a commit record held every file's
position, 4.3 MB written and fsynced per step at 20k files).

    .venv/bin/python bench/commit_bytes.py [--files 1000 5000 20000] [--steps 50]

For each count of files: a first step reads them all; then each of ``--steps`` steps
adds one file, and the bytes ``MetadataLog.commit`` writes (commit record, position
index) are summed through the storage.  Prints, per count, the first commit's bytes, the
later steps' mean and largest, a commit's mean time and a restart's read of the
position.  No Spark: the source and the metadata log alone, as
the step loop drives them (a static source's position is the same: a restarted static
run adding a file commits the same way).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from sparkway.connectors.files import FileSource
from sparkway.core.columns import Column
from sparkway.core.dtypes import STR
from sparkway.persistence.metadata import MetadataLog
from sparkway.persistence.storage import BlobStorage


class CountingStorage(BlobStorage):
    """A storage that counts the bytes written through it."""

    written = 0

    def write_bytes(self, relative: str, data: bytes) -> None:
        CountingStorage.written += len(data)
        super().write_bytes(relative, data)


def committed(source: FileSource) -> object:
    """What a commit records for the source (``position()`` before the index)."""
    return getattr(source, "committed_position", source.position)()


def measure(files: int, steps: int, folder: Path) -> dict[str, float]:
    inputs = folder / "in"
    inputs.mkdir()
    for i in range(files):
        (inputs / f"part-{i:06d}.csv").write_text(f"word\nw{i}\n")
    source = FileSource(str(inputs), format="csv", columns={"word": Column("word", STR)}, mode="streaming",
                        name="words")
    log = MetadataLog(CountingStorage(str(folder / "state")))
    log.lock()
    try:
        source.open(None)
        source.advance(source.discover())
        CountingStorage.written = 0
        log.commit(1, 1, {"words": committed(source)}, {"words": files})
        first = CountingStorage.written
        sizes, seconds = [], []
        for step in range(2, steps + 2):
            (inputs / f"new-{step:06d}.csv").write_text(f"word\nn{step}\n")
            source.advance(source.discover())
            CountingStorage.written = 0
            started = time.perf_counter()
            log.commit(step, step, {"words": committed(source)}, {"words": files + step})
            seconds.append(time.perf_counter() - started)
            sizes.append(CountingStorage.written)
        started = time.perf_counter()
        restored = MetadataLog(log.storage).last_commit()["positions"]["words"]  # what a restart reads
        restore_s = time.perf_counter() - started
        assert restored == source.position()
    finally:
        log.unlock()
    return {"first": first, "mean": statistics.mean(sizes), "max": max(sizes),
            "commit_ms": 1000 * statistics.mean(seconds), "restore_ms": 1000 * restore_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, nargs="+", default=[1000, 5000, 20000])
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    print(f"{'files':>7} {'first commit':>13} {'per step: mean':>15} {'max':>10} {'commit ms':>10} {'restore ms':>11}")
    for files in args.files:
        with tempfile.TemporaryDirectory(prefix="sparkway-commit-bytes-") as folder:
            r = measure(files, args.steps, Path(folder))
        print(f"{files:>7} {r['first']:>13,.0f} {r['mean']:>15,.0f} {r['max']:>10,.0f} {r['commit_ms']:>10.1f} "
              f"{r['restore_ms']:>11.1f}")


if __name__ == "__main__":
    main()
