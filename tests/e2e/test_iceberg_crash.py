"""Crash test of the Iceberg sink: exactly once, whatever the moment of a SIGKILL.

A persistent streaming word count over ``inputs/`` (a feeder keeps adding CSV files) is
written to two Iceberg tables (SQL catalog on SQLite): as a stream of changes
(``changes``) and as a snapshot (``counts``).  The program is killed with SIGKILL at
random moments, several times, and restarted each time; a last run drains the input and
is stopped with SIGTERM.  Then, read with ``pyiceberg`` (not with sparkway):

* the snapshot table is exactly the batch word count over every input file;
* the stream table holds no change twice (no duplicate (word, count, time, diff)), and
  replayed time by time it never has a word with two counts, nor a row below 0 or above
  1; the sum of its changes, the live rows, is the batch word count too;
* each snapshot of the stream table holds one time, the one its summary records: no time
  is spread over two snapshots;
* each snapshot of the snapshot table holds a whole time: the table as of that snapshot
  is the stream's live rows as of the time its summary records, and both tables hold the
  same times.

Each time is one Iceberg snapshot whose summary records the time, so a step replayed
after a crash that followed its commit writes nothing.
"""

from __future__ import annotations

import collections
import functools
from pathlib import Path
from typing import Any

import pytest

from .helpers import write_script
from .test_crash import die_after_sink_write, exactly_once_sinks_scenario, replayed_after_sink_commit_scenario

pytest.importorskip("pyiceberg")
pytest.importorskip("sqlalchemy")

pytestmark = pytest.mark.subprocess

PROGRAM = '''
import sparkway as pw


class Words(pw.Schema):
    word: str


words = pw.io.csv.read("inputs/", schema=Words, mode="{mode}", persistent_id="words")
counts = words.groupby(words.word).reduce(words.word, count=pw.reducers.count())
catalog = pw.io.iceberg.SqlCatalog(uri="sqlite:///catalog.db", warehouse="warehouse")
pw.io.iceberg.write(counts, catalog, ["lake"], "changes", name="changes")
pw.io.iceberg.write(counts, catalog, ["lake"], "counts", name="counts", output_table_type="snapshot")
pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem("./state/"),
                                                snapshot_interval_ms=1500))
'''


@functools.lru_cache
def pyiceberg_catalog(root: Path) -> Any:
    """pyiceberg's own catalog of the program's database (made once: making one writes
    the catalog's tables into the database)."""
    from pyiceberg.catalog import load_catalog

    return load_catalog("default", type="sql", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse")


def iceberg_table(root: Path, name: str = "changes") -> Any:
    """The table, as pyiceberg's own catalog loads it; None while it does not exist yet."""
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    if not (root / "catalog.db").exists():
        return None
    try:
        return pyiceberg_catalog(root).load_table(("lake", name))
    except (NoSuchTableError, NoSuchNamespaceError):
        return None
    except Exception:  # noqa: BLE001  the catalog's tables being made by the program right now
        return None


def stream_changes(root: Path) -> list[tuple[tuple, int, int]]:
    """(row, time, diff) of every change in the table, in time order."""
    table = iceberg_table(root)
    if table is None:
        return []
    found = [((r["word"], r["count"]), r["time"], r["diff"]) for r in table.scan().to_arrow().to_pylist()]
    return sorted(found, key=lambda change: (change[1], change[2]))


def live_rows(root: Path, up_to: float = float("inf")) -> collections.Counter:
    """The rows the changes (of the times up to ``up_to``) add up to."""
    total: collections.Counter = collections.Counter()
    for row, time, diff in stream_changes(root):
        if time <= up_to:
            total[row] += diff
    return +total


def snapshot_rows(root: Path, snapshot_id: int | None = None) -> collections.Counter:
    """The rows of the snapshot table (as of ``snapshot_id``); none while it does not
    exist yet."""
    table = iceberg_table(root, "counts")
    if table is None:
        return collections.Counter()
    rows = table.scan(snapshot_id=snapshot_id).to_arrow().to_pylist()
    return collections.Counter((r["word"], r["count"]) for r in rows)


def check_each_snapshot_holds_a_whole_time(root: Path) -> None:
    """The snapshot table at each of its snapshots is the stream's live rows as of the
    time the snapshot records, and it has a snapshot for every time of the stream."""
    table = iceberg_table(root, "counts")
    times = []
    for snapshot in table.snapshots():
        time = int(snapshot.summary.additional_properties["sparkway.time"])
        assert snapshot_rows(root, snapshot.snapshot_id) == live_rows(root, time), f"the snapshot of time {time}"
        times.append(time)
    assert times == sorted({t for _, t, _ in stream_changes(root)}), "the tables' times differ"


def test_sigkill_at_random_moments_writes_every_change_once(tmp_path: Path, python_env, programs) -> None:
    def one_time_per_snapshot(changes: list) -> None:
        table = iceberg_table(tmp_path)
        seen: dict[int, set[int]] = {}
        for snapshot in table.snapshots():
            recorded = int(snapshot.summary.additional_properties["sparkway.time"])
            added = table.scan(snapshot_id=snapshot.snapshot_id).to_arrow().to_pylist()
            seen[recorded] = {r["time"] for r in added} - set().union(*(seen.values() or [set()]))
        assert all(times == {recorded} for recorded, times in seen.items()), seen
        assert len(seen) == len(table.snapshots()) == len({t for _, t, _ in changes}), \
            "a time spread over two snapshots"
        assert live_rows(tmp_path) == snapshot_rows(tmp_path)
        check_each_snapshot_holds_a_whole_time(tmp_path)

    (tmp_path / "inputs").mkdir()
    exactly_once_sinks_scenario(
        tmp_path, python_env, programs, write_script(tmp_path, "program.py", PROGRAM.format(mode="streaming")),
        stream_changes=lambda: stream_changes(tmp_path), snapshot=lambda: snapshot_rows(tmp_path),
        also=one_time_per_snapshot,
    )


def test_a_step_replayed_after_its_iceberg_commit_writes_nothing_again(tmp_path: Path, python_env) -> None:
    script = write_script(tmp_path, "program.py",
                          die_after_sink_write("iceberg", "IcebergChangesSink") + PROGRAM.format(mode="static"))
    expected = replayed_after_sink_commit_scenario(tmp_path, python_env, script, lambda: stream_changes(tmp_path))
    assert live_rows(tmp_path) == expected
    assert snapshot_rows(tmp_path) == expected
    check_each_snapshot_holds_a_whole_time(tmp_path)
