"""Crash test: a persistent streaming word count is killed with SIGKILL at random moments
while a feeder keeps adding CSV files; after each kill it is restarted.  At the end it is
stopped with SIGTERM, and the outputs of all runs, put together, must be exactly the batch
word count of every input file: nothing lost, nothing counted twice.

What is checked, on the union of every run's output (each run truncates the file when it
starts, so each file is read after its run ends; a torn last line, cut by the kill, is left
out):

* identical (row, time, diff) lines from different runs are one change (a step
  interrupted before its commit is replayed with the same time, as "at least once"
  delivery allows);
* at most one change per row per time;
* replaying the changes time by time, no row's multiplicity ever goes below 0 or above 1,
  and no word ever has two counts at once;
* the final multiplicities are the batch word count of all input files.
"""

from __future__ import annotations

import collections
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from .helpers import (
    Program, describe, read_jsonlines_output, word_counts, write_file, write_script,
)

pytestmark = pytest.mark.subprocess

PROGRAM = '''
import sparkway as pw


class InputSchema(pw.Schema):
    word: str


words = pw.io.csv.read("inputs/", schema=InputSchema, mode="streaming", persistent_id="words")
counts = words.groupby(words.word).reduce(words.word, count=pw.reducers.count())
pw.io.jsonlines.write(counts, "result.jsonlines")
backend = pw.persistence.Backend.filesystem("./state/")
# frequent snapshots, so that recovery goes through snapshots and changelogs
pw.run(persistence_config=pw.persistence.Config(backend, snapshot_interval_ms=1500))
'''

VOCABULARY = ["ant", "bee", "cat", "dog", "eel", "fox", "gnu", "hen", "ibis", "jay", "koi", "lynx"]


class Feeder(threading.Thread):
    """Adds a CSV file of a few random words every 0.2-1.2 s; some files are written in
    two parts with a pause between (the program may read the first part alone)."""

    def __init__(self, folder: Path, rng: random.Random) -> None:
        super().__init__(daemon=True)
        self.folder = folder
        self.rng = rng
        self.stop_event = threading.Event()
        self.count = 0
        self.error: BaseException | None = None

    def add_file(self) -> None:
        words = [self.rng.choice(VOCABULARY) for _ in range(self.rng.randint(1, 6))]
        path = self.folder / f"f{self.count:04d}.csv"
        self.count += 1
        lines = ["word\n"] + [w + "\n" for w in words]
        if len(lines) > 2 and self.rng.random() < 0.3:
            cut = self.rng.randint(1, len(lines) - 1)
            with open(path, "w") as f:
                f.write("".join(lines[:cut]))
                f.flush()
                time.sleep(self.rng.uniform(0.05, 0.8))
                f.write("".join(lines[cut:]))
        else:
            write_file(path, "".join(lines))

    def run(self) -> None:
        try:
            while not self.stop_event.wait(self.rng.uniform(0.2, 1.2)):
                self.add_file()
        except BaseException as exc:  # reported by the test
            self.error = exc

    def stop(self) -> None:
        self.stop_event.set()
        self.join(10)
        assert self.error is None, f"the feeder failed: {self.error!r}"


def _key(row: dict[str, Any]) -> tuple[str, int]:
    return (row["word"], row["count"])


def check_stream(runs: list[list[dict[str, Any]]], expected: collections.Counter) -> None:
    """The checks listed in the module docstring, on the outputs of all runs."""
    distinct: set[tuple] = set()
    for k, rows in enumerate(runs):
        seen_in_run: set[tuple] = set()
        previous_time = None
        for row in rows:
            line = (row["word"], row["count"], row["time"], row["diff"])
            assert row["diff"] in (1, -1), f"run {k}: bad diff in {row}"
            assert line not in seen_in_run, f"run {k}: the same change twice in one run: {row}"
            seen_in_run.add(line)
            assert previous_time is None or row["time"] >= previous_time, f"run {k}: time goes back at {row}"
            previous_time = row["time"]
        distinct |= seen_in_run

    by_time: dict[int, list[tuple]] = collections.defaultdict(list)
    for word, count, t, diff in distinct:
        by_time[t].append(((word, count), diff))
    multiplicity: collections.Counter = collections.Counter()
    for t in sorted(by_time):
        rows_at_t = [r for r, _ in by_time[t]]
        duplicates = [r for r, n in collections.Counter(rows_at_t).items() if n > 1]
        assert not duplicates, f"time {t}: both an insertion and a deletion of {duplicates}"
        for row, diff in by_time[t]:
            multiplicity[row] += diff
        bad = {r: m for r, m in multiplicity.items() if m < 0 or m > 1}
        assert not bad, f"after time {t}: rows with multiplicity outside 0..1: {bad}"
        live = collections.Counter(word for (word, _), m in multiplicity.items() if m == 1)
        two = [w for w, n in live.items() if n > 1]
        assert not two, f"after time {t}: words with two counts at once: {two}"

    final = collections.Counter({r: m for r, m in multiplicity.items() if m})
    missing = expected - final
    extra = final - expected
    assert not missing and not extra, (
        f"the accumulated output differs from the batch word count:\n missing: {sorted(missing)}\n"
        f" extra: {sorted(extra)}"
    )


def crash_scenario(tmp_path: Path, env: dict[str, str], programs, *, kills: int, seed: int,
                   budget_s: float) -> dict[str, Any]:
    """Runs the program ``kills`` times to a SIGKILL, then once to a SIGTERM; returns
    what happened (for the test's own assertions and messages)."""
    rng = random.Random(seed)
    started = time.monotonic()
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    script = write_script(tmp_path, "wordcount.py", PROGRAM)
    output = tmp_path / "result.jsonlines"
    feeder = Feeder(inputs, random.Random(seed + 1))
    for _ in range(3):
        feeder.add_file()
    feeder.start()

    runs: list[list[dict[str, Any]]] = []
    history: list[str] = []
    try:
        for k in range(kills):
            program: Program = programs(script, tmp_path, env, f"run{k}")
            if k % 2 == 0:
                # at a random moment from the start: during Spark's start-up, recovery or a step
                delay = rng.uniform(1.0, 12.0)
                deadline = time.monotonic() + delay
                while time.monotonic() < deadline and program.poll() is None:
                    time.sleep(0.05)
                history.append(f"run {k}: killed {delay:.1f} s after its start")
            else:
                # at a random moment after the run's first output: while steps go on
                program.wait_until(lambda: output.exists() and output.stat().st_size > 0, 120,
                                   f"run {k}'s first output")
                delay = rng.uniform(0.0, 3.0)
                time.sleep(delay)
                history.append(f"run {k}: killed {delay:.1f} s after its first output")
            assert program.poll() is None, f"run {k} ended by itself: {describe(program)}"
            program.crash()
            runs.append(read_jsonlines_output(output, allow_torn=True))
            if "Replaying step" in program.stderr_text():
                history[-1] += " (it replayed an interrupted step)"
            # the next run truncates it when it starts: until then, no stale output
            output.unlink(missing_ok=True)
            time.sleep(rng.uniform(0.0, 1.0))  # the feeder goes on meanwhile

        # the last run: new files for a few more seconds, then none; stop when done
        final = programs(script, tmp_path, env, "final")
        time.sleep(3)
        feeder.stop()
        expected = word_counts(inputs)

        def converged() -> bool:
            current = runs + [read_jsonlines_output(output, allow_torn=True)]
            try:
                check_stream(current, expected)
            except AssertionError:
                return False
            return True

        final.wait_until(converged, max(60.0, budget_s - (time.monotonic() - started)),
                         "the final run to catch up with every input file")
        code = final.terminate()
        assert code == 0, f"SIGTERM did not end the final run gracefully: {describe(final)}"
        runs.append(read_jsonlines_output(output))
    finally:
        if feeder.is_alive():
            feeder.stop()
    return {"runs": runs, "expected": expected, "history": history, "files": feeder.count,
            "seconds": time.monotonic() - started}


def test_sigkill_at_random_moments_loses_and_duplicates_nothing(tmp_path: Path, python_env, programs) -> None:
    seed = random.randrange(10**6)
    result = crash_scenario(tmp_path, python_env, programs, kills=6, seed=seed, budget_s=170)
    context = f"seed {seed}; " + "; ".join(result["history"])
    print(context, [len(r) for r in result["runs"]], result["files"], round(result["seconds"]))
    try:
        check_stream(result["runs"], result["expected"])
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n({context})") from None
    # the test did exercise something: several runs produced output, many files were read
    assert sum(1 for rows in result["runs"] if rows) >= 3, context
    assert result["files"] >= 10, context
