"""Crash test: a persistent streaming program is killed with SIGKILL at random moments
while a feeder keeps adding CSV files; after each kill it is restarted.  A kill takes
down the whole process group (driver, Spark JVM, Python workers) or, at random, the
driver process alone, whose JVM and workers may still be busy when the next run starts.  At the end it is
stopped with SIGTERM, and the outputs of all runs, put together, must be exactly the batch
results over every input file: nothing lost, nothing counted twice.

The program has two sources and two sinks: a word count over ``inputs/`` written as JSON
lines, and user sessions (seed 002's query) over ``logs/`` written as CSV.  Some files are
written in two parts with a pause between, sometimes cut inside a line: the program may
read the first part alone (an unfinished last line is read once the file looks stable,
and read again when the file grows).

What is checked, per sink, on the union of every run's output (each run truncates the
file when it starts, so each file is read after its run ends; a torn last line, cut by
the kill, is left out):

* identical (row, time, diff) lines from different runs are one change (a step
  interrupted before its commit is replayed with the same time, as "at least once"
  delivery allows);
* within one run's file, times do not go back, and no line repeats;
* at most one change per row per time;
* replaying the changes time by time, no row's multiplicity ever goes below 0 or above 1
  (and no word ever has two counts at once);
* the final multiplicities are the batch result over all input files.
"""

from __future__ import annotations

import collections
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .helpers import (
    FileFeeder, Program, check_ok, crash_at_random_moment, describe, read_csv_inputs, read_csv_output,
    read_jsonlines_output, record_kills, run_program, sessions, snapshot_diff, word_counts, write_file, write_script,
)

pytestmark = [pytest.mark.subprocess, pytest.mark.releases]

MAX_GAP = 300
FILESYSTEM = 'pw.persistence.Backend.filesystem("./state/")'

PROGRAM = '''
import sparkway as pw


class Words(pw.Schema):
    word: str


class Visits(pw.Schema):
    user_id: str
    access_time: int


words = pw.io.csv.read("inputs/", schema=Words, mode="streaming", persistent_id="words")
counts = words.groupby(words.word).reduce(words.word, count=pw.reducers.count())
pw.io.jsonlines.write(counts, "counts.jsonlines")

visits = pw.io.csv.read("logs/", schema=Visits, mode="streaming", persistent_id="logs")
sessions = visits.windowby(
    pw.this.access_time,
    window=pw.temporal.session(max_gap={max_gap}),
    shard=pw.this.user_id,
).reduce(
    user_id=visits.user_id,
    session_start=pw.reducers.min(visits.access_time),
    session_finish=pw.reducers.max(visits.access_time),
    count=pw.reducers.count(),
)
pw.io.csv.write(sessions, "sessions.csv")
{more_sinks}
backend = {backend}
# frequent snapshots, so that recovery goes through snapshots and changelogs
pw.run(persistence_config=pw.persistence.Config(backend, snapshot_interval_ms=1500))
'''

VOCABULARY = ["ant", "bee", "cat", "dog", "eel", "fox", "gnu", "hen", "ibis", "jay", "koi", "lynx"]
USERS = ["alice", "bob", "carol", "dave"]


class Feeder(FileFeeder):
    """Adds a CSV file of a few random words to ``inputs/`` or of a few random visits to
    ``logs/`` (see FileFeeder for when and how)."""

    def next_file(self) -> tuple[str, list[str]]:
        rng = self.rng
        if rng.random() < 0.6:
            return "inputs", ["word\n"] + [rng.choice(VOCABULARY) + "\n" for _ in range(rng.randint(1, 6))]
        # times are multiples of 7 and 300 is not: no gap is exactly max_gap
        return "logs", ["user_id,access_time\n"] + [
            f"{rng.choice(USERS)},{1_700_000_000 + 7 * rng.randint(0, 1000)}\n" for _ in range(rng.randint(1, 5))
        ]


# ------------------------------------------------------------------------------ sinks

Change = tuple[tuple, int, int]  # (row, time, diff)


def count_changes(path: Path, *, allow_torn: bool) -> list[Change]:
    return [((r["word"], r["count"]), r["time"], r["diff"])
            for r in read_jsonlines_output(path, allow_torn=allow_torn)]


def session_changes(path: Path, *, allow_torn: bool) -> list[Change]:
    if not path.exists():
        return []
    text = path.read_text()
    if not allow_torn:
        assert text == "" or text.endswith("\n"), f"{path}: the last line is not terminated"
    header, rows = read_csv_output(path)
    if rows:
        assert header == ["user_id", "session_start", "session_finish", "count", "time", "diff"], header
    return [((r["user_id"], int(r["session_start"]), int(r["session_finish"]), int(r["count"])),
             int(r["time"]), int(r["diff"])) for r in rows]


def expected_counts(root: Path) -> collections.Counter:
    return word_counts(root / "inputs")


def expected_sessions(root: Path) -> collections.Counter:
    events = [(r["user_id"], int(r["access_time"])) for r in read_csv_inputs(root / "logs")]
    return collections.Counter({(u, start, finish, n): m
                                for (u, _, start, finish, n), m in sessions(events, MAX_GAP).items()})


SINKS: dict[str, tuple[str, Callable[..., list[Change]], Callable[[Path], collections.Counter],
                       Callable[[tuple], Any] | None]] = {
    # name: (file, reader, batch oracle, "one live row per" key)
    "counts": ("counts.jsonlines", count_changes, expected_counts, lambda row: row[0]),
    "sessions": ("sessions.csv", session_changes, expected_sessions, None),
}


def check_stream(name: str, runs: list[list[Change]], expected: collections.Counter,
                 one_per: Callable[[tuple], Any] | None = None) -> None:
    """The checks listed in the module docstring, on one sink's outputs of all runs."""
    distinct: set[Change] = set()
    for k, changes in enumerate(runs):
        seen_in_run: set[Change] = set()
        previous_time = None
        for change in changes:
            row, t, diff = change
            assert diff in (1, -1), f"{name}, run {k}: bad diff in {change}"
            assert change not in seen_in_run, f"{name}, run {k}: the same change twice in one run: {change}"
            seen_in_run.add(change)
            assert previous_time is None or t >= previous_time, f"{name}, run {k}: time goes back at {change}"
            previous_time = t
        distinct |= seen_in_run

    by_time: dict[int, list[tuple[tuple, int]]] = collections.defaultdict(list)
    for row, t, diff in distinct:
        by_time[t].append((row, diff))
    multiplicity: collections.Counter = collections.Counter()
    for t in sorted(by_time):
        rows_at_t = [row for row, _ in by_time[t]]
        duplicates = [row for row, n in collections.Counter(rows_at_t).items() if n > 1]
        assert not duplicates, f"{name}, time {t}: both an insertion and a deletion of {duplicates}"
        for row, diff in by_time[t]:
            multiplicity[row] += diff
        bad = {row: m for row, m in multiplicity.items() if m < 0 or m > 1}
        assert not bad, f"{name}, after time {t}: rows with multiplicity outside 0..1: {bad}"
        if one_per is not None:
            live = collections.Counter(one_per(row) for row, m in multiplicity.items() if m == 1)
            two = [key for key, n in live.items() if n > 1]
            assert not two, f"{name}, after time {t}: several live rows for {two}"

    final = collections.Counter({row: m for row, m in multiplicity.items() if m})
    missing = expected - final
    extra = final - expected
    assert not missing and not extra, (
        f"{name}: the accumulated output differs from the batch result:\n missing: {sorted(missing)}\n"
        f" extra: {sorted(extra)}"
    )


def check_all(root: Path, runs: dict[str, list[list[Change]]]) -> None:
    for name, (_, _, oracle, one_per) in SINKS.items():
        check_stream(name, runs[name], oracle(root), one_per)


# --------------------------------------------------------------------------- scenario


def crash_scenario(tmp_path: Path, env: dict[str, str], programs, *, kills: int, seed: int,
                   budget_s: float, backend: str = FILESYSTEM, moment: Callable = crash_at_random_moment,
                   more_sinks: str = "") -> dict[str, Any]:
    """Runs the program ``kills`` times to a SIGKILL, then once to a SIGTERM, while the
    feeder adds files; returns every run's changes per sink, and what happened.
    ``moment`` chooses when each run is killed (``crash_at_random_moment``,
    ``helpers.crash_soon``); ``more_sinks``: Python source of more sinks of the word
    counts (``counts``), which the caller checks."""
    rng = random.Random(seed)
    started = time.monotonic()
    (tmp_path / "inputs").mkdir()
    (tmp_path / "logs").mkdir()
    script = write_script(tmp_path, "program.py", PROGRAM)
    script.write_text(script.read_text().replace("{max_gap}", str(MAX_GAP)).replace("{backend}", backend)
                      .replace("{more_sinks}", more_sinks))
    feeder = Feeder(tmp_path, random.Random(seed + 1))
    for _ in range(4):
        feeder.add_file()
    feeder.start()

    runs: dict[str, list[list[Change]]] = {name: [] for name in SINKS}
    history: list[str] = []
    leftovers: list[Program] = []  # runs whose driver alone was killed: JVMs may linger

    def any_output() -> bool:
        return any((tmp_path / f).exists() and len((tmp_path / f).read_bytes().split(b"\n")) > 2
                   for f in ("counts.jsonlines", "sessions.csv"))

    def collect(*, allow_torn: bool) -> dict[str, list[Change]]:
        return {name: reader(tmp_path / file, allow_torn=allow_torn)
                for name, (file, reader, _, _) in SINKS.items()}

    try:
        for k in range(kills):
            program: Program = programs(script, tmp_path, env, f"run{k}")
            what, whole_group = moment(program, rng, k, any_output)
            record_kills("SIGKILLs at random moments")
            history.append(what)
            if not whole_group:
                leftovers.append(program)
            for name, changes in collect(allow_torn=True).items():
                runs[name].append(changes)
            if "Replaying step" in program.stderr_text():
                history[-1] += " (it replayed an interrupted step)"
            # the next run truncates them when it starts: until then, no stale output
            for file, *_ in SINKS.values():
                (tmp_path / file).unlink(missing_ok=True)
            time.sleep(rng.uniform(0.0, 1.0))  # the feeder goes on meanwhile
            while len(leftovers) > 1:  # bound the resources lingering JVMs can take
                leftovers.pop(0).kill()

        # the last run: new files for a few more seconds, then none; stopped when done
        final = programs(script, tmp_path, env, "final")
        time.sleep(3)
        feeder.stop()

        mismatch = ""  # why the outputs so far are not yet the batch result

        def converged() -> bool:
            nonlocal mismatch
            current = collect(allow_torn=True)
            try:
                check_all(tmp_path, {name: runs[name] + [current[name]] for name in SINKS})
            except AssertionError as exc:
                mismatch = str(exc)
                return False
            return True

        try:
            final.wait_until(converged, max(60.0, budget_s - (time.monotonic() - started)),
                             "the final run to catch up with every input file")
        except AssertionError as exc:
            raise AssertionError(f"the last check of the outputs: {mismatch}\n{exc}") from None
        code = final.terminate()
        assert code == 0, f"SIGTERM did not end the final run gracefully: {describe(final)}"
        for name, changes in collect(allow_torn=False).items():
            runs[name].append(changes)
    except AssertionError as exc:
        # the seed and the history first: the program's stderr, at the end, is long
        raise AssertionError(f"(seed {seed}; {'; '.join(history)})\n{exc}") from None
    finally:
        if feeder.is_alive():
            feeder.stop()
    return {"runs": runs, "history": history, "files": feeder.count, "seconds": time.monotonic() - started}


def crash_seed() -> int:
    """A random seed of a scenario's files and kills, or ``CRASH_SEED`` (the seed a
    failure printed, to run its schedule again)."""
    return int(os.environ.get("CRASH_SEED") or random.randrange(10**6))


def run_crash_test(tmp_path: Path, env: dict[str, str], programs, *, kills: int, budget_s: float,
                   backend: str = FILESYSTEM, moment: Callable = crash_at_random_moment, more_sinks: str = "",
                   runs_with_output: int | None = None) -> dict[str, Any]:
    """``backend``: the program's persistence backend, as Python source; ``moment`` and
    ``more_sinks``: see ``crash_scenario``; ``runs_with_output``: how many runs at least
    must have output something (by default half the kills)."""
    seed = crash_seed()
    result = crash_scenario(tmp_path, env, programs, kills=kills, seed=seed, budget_s=budget_s, backend=backend,
                            moment=moment, more_sinks=more_sinks)
    context = (f"seed {seed}; {'; '.join(result['history'])}; {result['files']} files; "
               f"{result['seconds']:.0f} s; changes per run: "
               + str({name: [len(c) for c in runs] for name, runs in result["runs"].items()}))
    print(context)
    try:
        check_all(tmp_path, result["runs"])
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n({context})") from None
    # the test did exercise something: several runs produced output, many files were read
    wanted = max(2, kills // 2) if runs_with_output is None else runs_with_output
    assert sum(1 for changes in result["runs"]["counts"] if changes) >= wanted, context
    assert result["files"] >= 10, context
    return {**result, "seed": seed, "context": context}


def test_sigkill_at_random_moments_loses_and_duplicates_nothing(tmp_path: Path, python_env, programs) -> None:
    run_crash_test(tmp_path, python_env, programs, kills=6, budget_s=170)


ONE_SOURCE = '''
import sparkway as pw


class Words(pw.Schema):
    word: str


words = pw.io.csv.read("inputs/", schema=Words, mode={mode}, persistent_id="words")
counts = words.groupby(words.word).reduce(words.word, count=pw.reducers.count())
pw.io.jsonlines.write(counts, {output})
pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem("./state/")))
'''


def test_sigterm_during_startup_ends_gracefully(tmp_path: Path, python_env, programs) -> None:
    """SIGTERM before the first step (Spark still starting) is a graceful end too: exit
    code 0, and the next run still reads every file."""
    write_file(tmp_path / "inputs" / "a.csv", "word\nx\ny\nx\n")
    script = write_script(tmp_path, "streaming.py", ONE_SOURCE, mode="streaming", output="first.jsonlines")
    program = programs(script, tmp_path, python_env, "early")
    program.wait_until(lambda: "Preparing the sparkway computation" in program.stderr_text(), 120, "pw.run")
    time.sleep(0.5)  # Spark takes seconds to start
    assert program.poll() is None, describe(program)
    code = program.terminate()
    assert code == 0, f"SIGTERM during start-up was not a graceful end: {describe(program)}"

    rerun = write_script(tmp_path, "static.py", ONE_SOURCE, mode="static", output="second.jsonlines")
    proc = run_program(rerun, tmp_path, python_env)
    check_ok(proc)
    first = count_changes(tmp_path / "first.jsonlines", allow_torn=False)
    second = count_changes(tmp_path / "second.jsonlines", allow_torn=False)
    got = collections.Counter(row + (diff,) for row, _, diff in first + second)
    expected = snapshot_diff(collections.Counter(), word_counts(tmp_path / "inputs"))
    assert got == expected, f"over both runs: {sorted(got.elements())}, expected {sorted(expected.elements())}"


class WordFeeder(FileFeeder):
    """Adds a CSV file of a few random words to ``inputs/``."""

    def next_file(self) -> tuple[str, list[str]]:
        return "inputs", ["word\n"] + [self.rng.choice(VOCABULARY) + "\n" for _ in range(self.rng.randint(1, 6))]


def exactly_once_sinks_scenario(
    tmp_path: Path, env: dict[str, str], programs, script: Path, *,
    stream_changes: Callable[[], list[tuple[tuple, int, int]]], snapshot: Callable[[], collections.Counter],
    also: Callable[[list[tuple[tuple, int, int]]], None] = lambda changes: None,
) -> None:
    """A streaming word count whose ``script`` writes a stream of changes and a snapshot
    to exactly-once sinks, killed 7 times at random moments while files keep coming,
    then run to the end: the snapshot equals the batch word count, and the stream holds
    every change once (``stream_changes()``: (row, time, diff) in time order; ``also``
    checks more of it)."""
    seed = crash_seed()
    rng = random.Random(seed)
    started = time.monotonic()
    feeder = WordFeeder(tmp_path, random.Random(seed + 1))
    for _ in range(3):
        feeder.add_file()
    feeder.start()
    history: list[str] = []
    leftovers: list[Program] = []  # runs whose driver alone was killed: JVMs may linger
    changes: list = []
    try:
        for k in range(7):
            program = programs(script, tmp_path, env, f"run{k}")
            before = len(stream_changes())
            what, whole_group = crash_at_random_moment(program, rng, k, lambda: len(stream_changes()) > before)
            record_kills("SIGKILLs at random moments")
            history.append(what + (" (it replayed a step)" if "Replaying step" in program.stderr_text() else ""))
            if not whole_group:
                leftovers.append(program)
            while len(leftovers) > 1:  # bound the resources lingering JVMs can take
                leftovers.pop(0).kill()
            time.sleep(rng.uniform(0.0, 1.0))  # the feeder goes on meanwhile

        final = programs(script, tmp_path, env, "final")
        time.sleep(3)
        feeder.stop()
        expected = word_counts(tmp_path / "inputs")
        final.wait_until(lambda: snapshot() == expected, max(60.0, 200 - (time.monotonic() - started)),
                         "the snapshot table to reach the batch word count")
        assert final.terminate() == 0, f"SIGTERM did not end the final run gracefully: {describe(final)}"

        assert snapshot() == expected
        changes = stream_changes()
        check_stream("changes", [changes], expected, one_per=lambda row: row[0])
        also(changes)
    except AssertionError as exc:
        # the seed and the history first: the program's stderr, at the end, is long
        raise AssertionError(f"(seed {seed}; {'; '.join(history)})\n{exc}") from None
    finally:
        if feeder.is_alive():
            feeder.stop()
    print(f"seed {seed}; {'; '.join(history)}; {feeder.count} files; {len(changes)} changes; "
          f"{time.monotonic() - started:.0f} s")
    assert feeder.count >= 10 and len({t for _, t, _ in changes}) >= 5, "the test exercised too little"



def die_after_sink_write(module: str, sink: str) -> str:
    """The start of a program that, run with ``--die-after-a-commit``, is SIGKILLed right
    after ``sparkway.connectors.<module>.<sink>`` wrote a time with rows: between the
    sink's own commit and the step's (a ``PieceSink`` commits at the time's end)."""
    return f'''
import os
import signal
import sys

import sparkway as pw
from sparkway.connectors import {module} as connector
from sparkway.connectors.base import PieceSink

if "--die-after-a-commit" in sys.argv:
    kind = connector.{sink}
    if issubclass(kind, PieceSink):
        take_piece, end_time = kind.take_piece, kind.end_time

        def take_then_note(self, time, piece):
            take_piece(self, time, piece)
            self.took_rows = getattr(self, "took_rows", False) or piece.rows > 0

        def end_then_die(self, time):
            end_time(self, time)
            if getattr(self, "took_rows", False):
                os.kill(os.getpid(), signal.SIGKILL)

        kind.take_piece, kind.end_time = take_then_note, end_then_die
    else:
        write = kind.write

        def write_then_die(self, batch):
            write(self, batch)
            if batch.table.num_rows:
                os.kill(os.getpid(), signal.SIGKILL)

        kind.write = write_then_die
'''


def replayed_after_sink_commit_scenario(
    tmp_path: Path, env: dict[str, str], script: Path, stream_changes: Callable[[], list[tuple[tuple, int, int]]],
) -> collections.Counter:
    """A static word count (``script``, starting with ``die_after_sink_write``) killed
    right after its sink's commit, twice, each time run again: the replayed steps write
    nothing twice to the stream of changes (``stream_changes()``).  Returns the final
    counts, for the caller's checks of its other tables."""
    (tmp_path / "inputs").mkdir()
    (tmp_path / "inputs" / "a.csv").write_text("word\nant\nbee\nant\n")
    died = run_program(script, tmp_path, env, args=["--die-after-a-commit"])
    assert died.returncode == -9, f"the first run should have been killed: {describe(died)}"
    assert stream_changes(), "the first run committed a time to the sink's table before dying"
    check_ok(run_program(script, tmp_path, env))  # replays the step: the commit is already there
    (tmp_path / "inputs" / "b.csv").write_text("word\nbee\ncat\n")
    died = run_program(script, tmp_path, env, args=["--die-after-a-commit"])
    assert died.returncode == -9, f"the third run should have been killed: {describe(died)}"
    check_ok(run_program(script, tmp_path, env))

    expected = collections.Counter({("ant", 2): 1, ("bee", 2): 1, ("cat", 1): 1})
    changes = stream_changes()
    rows = sorted((row, diff) for row, _, diff in changes)
    assert rows == [(("ant", 2), 1), (("bee", 1), -1), (("bee", 1), 1), (("bee", 2), 1), (("cat", 1), 1)], changes
    check_stream("changes", [changes], expected, one_per=lambda row: row[0])
    return expected
