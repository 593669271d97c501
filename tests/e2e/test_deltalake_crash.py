"""Crash test of the Delta Lake sink: exactly once, whatever the moment of a SIGKILL.

A persistent streaming word count over ``inputs/`` (a feeder keeps adding CSV files) is
written to two Delta tables: as a stream of changes (``changes``) and as a snapshot
(``counts``).  The program is killed with SIGKILL at random moments, several times, and
restarted each time; a last run drains the input and is stopped with SIGTERM.  Then, read
with the ``deltalake`` package (not with sparkway):

* the snapshot table is exactly the batch word count over every input file;
* the stream table holds no change twice (no duplicate (word, count, time, diff)), and
  replayed time by time it never has a word with two counts, nor a row below 0 or above
  1, and it ends at the batch word count;
* each Delta version holds one time: no time is spread over two commits.

Each time is one Delta commit that also records the time in its ``txn`` action, so a step
replayed after a crash that followed its commit writes nothing.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from .helpers import write_script
from .test_crash import die_after_sink_write, exactly_once_sinks_scenario, replayed_after_sink_commit_scenario

deltalake = pytest.importorskip("deltalake")

pytestmark = pytest.mark.subprocess

PROGRAM = '''
import sparkway as pw


class Words(pw.Schema):
    word: str


words = pw.io.csv.read("inputs/", schema=Words, mode="streaming", persistent_id="words")
counts = words.groupby(words.word).reduce(words.word, count=pw.reducers.count())
pw.io.deltalake.write(counts, "lake/changes", name="changes")
pw.io.deltalake.write(counts, "lake/counts", output_table_type="snapshot", name="counts")
pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem("./state/"),
                                                snapshot_interval_ms=1500))
'''


def table_rows(path: Path) -> list[dict]:
    """The rows of a Delta table's current version; none while it does not exist yet."""
    if not deltalake.DeltaTable.is_deltatable(str(path)):
        return []
    return deltalake.DeltaTable(str(path)).to_pyarrow_table().to_pylist()


def stream_changes(root: Path) -> list[tuple[tuple, int, int]]:
    """(row, time, diff) of every change in the stream table, in time order."""
    found = [((r["word"], r["count"]), r["time"], r["diff"]) for r in table_rows(root / "lake" / "changes")]
    return sorted(found, key=lambda change: (change[1], change[2]))


def snapshot(root: Path) -> collections.Counter:
    return collections.Counter((r["word"], r["count"]) for r in table_rows(root / "lake" / "counts"))


def times_per_version(path: Path) -> dict[int, set[int]]:
    """Per version of the stream table, the times of the rows it added."""
    table = deltalake.DeltaTable(str(path))
    seen: dict[int, set[int]] = {}
    before: set[tuple] = set()
    for version in range(1, table.version() + 1):
        rows = deltalake.DeltaTable(str(path), version=version).to_pyarrow_table().to_pylist()
        now = collections.Counter((r["word"], r["count"], r["time"], r["diff"]) for r in rows)
        added = {change for change in now if change not in before}
        seen[version] = {change[2] for change in added}
        before = set(now)
    return seen


def test_sigkill_at_random_moments_writes_every_change_once(tmp_path: Path, python_env, programs) -> None:
    def one_time_per_version_and_the_last_time_recorded(changes: list) -> None:
        spread = {v: t for v, t in times_per_version(tmp_path / "lake" / "changes").items() if len(t) > 1}
        assert not spread, f"versions holding several times: {spread}"
        committed = [t for _, t, _ in changes]
        assert deltalake.DeltaTable(str(tmp_path / "lake" / "changes")).transaction_version("sparkway-changes") \
            == max(committed)

    (tmp_path / "inputs").mkdir()
    exactly_once_sinks_scenario(
        tmp_path, python_env, programs, write_script(tmp_path, "program.py", PROGRAM),
        stream_changes=lambda: stream_changes(tmp_path), snapshot=lambda: snapshot(tmp_path),
        also=one_time_per_version_and_the_last_time_recorded,
    )


REPLAYED_PROGRAM = die_after_sink_write("deltalake", "DeltaChangesSink") + '''

class Words(pw.Schema):
    word: str


words = pw.io.csv.read("inputs/", schema=Words, mode="static", persistent_id="words")
counts = words.groupby(words.word).reduce(words.word, count=pw.reducers.count())
pw.io.deltalake.write(counts, "lake/changes", name="changes")
pw.io.deltalake.write(counts, "lake/counts", output_table_type="snapshot", name="counts")
pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem("./state/")))
'''


def test_a_step_replayed_after_its_delta_commit_writes_nothing_again(tmp_path: Path, python_env) -> None:
    script = write_script(tmp_path, "program.py", REPLAYED_PROGRAM)
    expected = replayed_after_sink_commit_scenario(tmp_path, python_env, script, lambda: stream_changes(tmp_path))
    assert snapshot(tmp_path) == expected
