"""Crash test of the PostgreSQL sink: exactly once, whatever the moment of a SIGKILL.

A persistent streaming word count over ``inputs/`` (a feeder keeps adding CSV files) is
written to PostgreSQL twice: as a stream of changes (``changes``) and as a snapshot
(``counts``).  The program is killed with SIGKILL at random moments, several times, and
restarted each time; a last run drains the input and is stopped with SIGTERM.  Then:

* the snapshot table is exactly the batch word count over every input file;
* the stream table holds no change twice (no duplicate (word, count, time, diff)), and
  replayed time by time it never has a word with two counts, nor a row below 0 or above
  1, and it ends at the batch word count.

Unlike the file sinks (at least once after a crash), nothing may appear twice here:
each step and the sink's progress are committed in one transaction.
"""

from __future__ import annotations

import collections
from pathlib import Path

import psycopg
import pytest

from .helpers import write_script
from .test_crash import exactly_once_sinks_scenario

pytestmark = pytest.mark.subprocess

PROGRAM = '''
import sparkway as pw


class Words(pw.Schema):
    word: str


settings = {settings}
words = pw.io.csv.read("inputs/", schema=Words, mode="streaming", persistent_id="words")
counts = words.groupby(words.word).reduce(words.word, count=pw.reducers.count())
pw.io.postgres.write(counts, settings, "changes", init_mode="create_if_not_exists")
pw.io.postgres.write_snapshot(counts, settings, "counts", [counts.word], init_mode="create_if_not_exists")
pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem("./state/"),
                                                snapshot_interval_ms=1500))
'''


def rows(settings: dict, query: str) -> list[tuple]:
    """The rows of a query; none while the table does not exist yet."""
    with psycopg.connect(**settings) as conn:
        try:
            return conn.execute(query).fetchall()
        except psycopg.errors.UndefinedTable:
            return []


def stream_changes(settings: dict) -> list[tuple[tuple, int, int]]:
    """(row, time, diff) of every change in the stream table, in time order."""
    found = rows(settings, 'SELECT word, "count", time, diff FROM changes ORDER BY time, diff')
    return [((word, count), t, diff) for word, count, t, diff in found]


def snapshot(settings: dict) -> collections.Counter:
    return collections.Counter(rows(settings, 'SELECT word, "count" FROM counts'))


def test_sigkill_at_random_moments_writes_every_change_once(tmp_path: Path, python_env, programs, postgres) -> None:
    (tmp_path / "inputs").mkdir()
    exactly_once_sinks_scenario(
        tmp_path, python_env, programs, write_script(tmp_path, "program.py", PROGRAM, settings=postgres),
        stream_changes=lambda: stream_changes(postgres), snapshot=lambda: snapshot(postgres),
    )
