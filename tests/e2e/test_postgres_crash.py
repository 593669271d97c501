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
import random
import time
from pathlib import Path

import psycopg
import pytest

from .helpers import FileFeeder, Program, crash_at_random_moment, describe, record_kills, word_counts, write_script
from .test_crash import VOCABULARY, check_stream

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


class WordFeeder(FileFeeder):
    """Adds a CSV file of a few random words to ``inputs/``."""

    def next_file(self) -> tuple[str, list[str]]:
        return "inputs", ["word\n"] + [self.rng.choice(VOCABULARY) + "\n" for _ in range(self.rng.randint(1, 6))]


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
    seed = random.randrange(10**6)
    rng = random.Random(seed)
    started = time.monotonic()
    (tmp_path / "inputs").mkdir()
    script = write_script(tmp_path, "program.py", PROGRAM, settings=postgres)
    feeder = WordFeeder(tmp_path, random.Random(seed + 1))
    for _ in range(3):
        feeder.add_file()
    feeder.start()
    history: list[str] = []
    leftovers: list[Program] = []  # runs whose driver alone was killed: JVMs may linger
    try:
        for k in range(7):
            program = programs(script, tmp_path, python_env, f"run{k}")
            before = len(stream_changes(postgres))
            what, whole_group = crash_at_random_moment(program, rng, k, lambda: len(stream_changes(postgres)) > before)
            record_kills("SIGKILLs at random moments")
            history.append(what + (" (it replayed a step)" if "Replaying step" in program.stderr_text() else ""))
            if not whole_group:
                leftovers.append(program)
            while len(leftovers) > 1:  # bound the resources lingering JVMs can take
                leftovers.pop(0).kill()
            time.sleep(rng.uniform(0.0, 1.0))  # the feeder goes on meanwhile

        final = programs(script, tmp_path, python_env, "final")
        time.sleep(3)
        feeder.stop()
        expected = word_counts(tmp_path / "inputs")
        final.wait_until(lambda: snapshot(postgres) == expected, max(60.0, 200 - (time.monotonic() - started)),
                         "the snapshot table to reach the batch word count")
        assert final.terminate() == 0, f"SIGTERM did not end the final run gracefully: {describe(final)}"

        assert snapshot(postgres) == expected
        changes = stream_changes(postgres)
        check_stream("changes", [changes], expected, one_per=lambda row: row[0])
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n(seed {seed}; {'; '.join(history)})") from None
    finally:
        if feeder.is_alive():
            feeder.stop()
    print(f"seed {seed}; {'; '.join(history)}; {feeder.count} files; {len(changes)} changes; "
          f"{time.monotonic() - started:.0f} s")
    assert feeder.count >= 10 and len({t for _, t, _ in changes}) >= 5, "the test exercised too little"
