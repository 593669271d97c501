"""A persistent program fed by a Python ConnectorSubject, restarted and crashed.

The subject stands for an input that cannot be read twice (a socket, an API): after each
``commit()`` returns it *acknowledges* the value by appending it to ``acks.txt``, and a
new run resumes after the last acknowledged value.  So anything acknowledged must be in
the output even when the process died right after, before the engine processed it.
"""

from __future__ import annotations

import collections
import itertools
import random
import time
from pathlib import Path

import pytest

from .helpers import Program, check_ok, describe, read_jsonlines_output, run_program, write_script

pytestmark = pytest.mark.subprocess

BUCKETS = 5

PROGRAM = '''
import os
import sys
import time

import sparkway as pw

LAST = int(sys.argv[1]) if len(sys.argv) > 1 else {last}


def acknowledged() -> list[int]:
    if not os.path.exists("acks.txt"):
        return []
    return [int(line) for line in open("acks.txt").read().split("\\n") if line]


class Feed(pw.io.python.ConnectorSubject):
    def run(self):
        for n in range(max(acknowledged(), default=-1) + 1, LAST + 1):
            with open("inflight.txt", "a") as f:  # the test learns which value a kill may cut
                f.write(f"{n}\\n")
            self.next(value=n, bucket=n % {buckets})
            self.commit()
            with open("acks.txt", "a") as f:
                f.write(f"{n}\\n")
                f.flush()
                os.fsync(f.fileno())
            time.sleep({pause})


class Value(pw.Schema):
    value: int
    bucket: int


sums = pw.io.python.read(Feed(), schema=Value, name="feed").groupby(pw.this.bucket).reduce(
    pw.this.bucket, total=pw.reducers.sum(pw.this.value), n=pw.reducers.count()
)
pw.io.jsonlines.write(sums, "sums.jsonlines")
pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem("pstorage")))
'''

Row = tuple[int, int, int]  # bucket, total, n


def sums_of(values: collections.Counter) -> dict[int, Row]:
    out: dict[int, list[int]] = {}
    for value, copies in values.items():
        entry = out.setdefault(value % BUCKETS, [0, 0])
        entry[0] += value * copies
        entry[1] += copies
    return {b: (b, total, n) for b, (total, n) in out.items()}


def read_changes(path: Path, *, allow_torn: bool) -> list[tuple[Row, int, int]]:
    return [((r["bucket"], r["total"], r["n"]), r["time"], r["diff"])
            for r in read_jsonlines_output(path, allow_torn=allow_torn)]


def accumulate(runs: list[list[tuple[Row, int, int]]]) -> dict[int, Row]:
    """The table the outputs of all runs describe; a change seen in two runs (a replayed
    step has the same time) counts once.  At most one live row per bucket, always."""
    distinct = sorted({change for run in runs for change in run}, key=lambda c: (c[1], c[2]))
    live: collections.Counter = collections.Counter()
    for row, t, diff in distinct:
        live[row] += diff
        assert 0 <= live[row] <= 1, f"row {row} has multiplicity {live[row]} after time {t}"
        buckets = collections.Counter(r[0] for r, m in live.items() if m)
        assert max(buckets.values(), default=0) <= 1, f"two live rows for one bucket after time {t}"
    return {row[0]: row for row, m in live.items() if m}


def test_restart_processes_only_new_values_and_a_rerun_emits_nothing(tmp_path: Path, python_env) -> None:
    script = write_script(tmp_path, "program.py", PROGRAM, last=9, buckets=BUCKETS, pause=0.0)

    first = run_program(script, tmp_path, python_env, args=["9"])
    check_ok(first)
    runs = [read_changes(tmp_path / "sums.jsonlines", allow_torn=False)]
    assert accumulate(runs) == sums_of(collections.Counter(range(10)))

    second = run_program(script, tmp_path, python_env, args=["14"])
    check_ok(second)
    second_changes = read_changes(tmp_path / "sums.jsonlines", allow_torn=False)
    # the second run's first change of a bucket retracts the first run's final row
    first_final = sums_of(collections.Counter(range(10)))
    retracted = {row for row, _, diff in second_changes if diff == -1}
    assert retracted <= set(first_final.values())
    assert accumulate(runs + [second_changes]) == sums_of(collections.Counter(range(15)))
    assert "restored after 10 entries" in second.stderr

    third = run_program(script, tmp_path, python_env, args=["14"])
    check_ok(third)
    assert read_changes(tmp_path / "sums.jsonlines", allow_torn=False) == []


def test_sigkill_loses_no_acknowledged_value(tmp_path: Path, python_env, programs) -> None:
    rng = random.Random()
    seed = rng.randrange(10**6)
    rng.seed(seed)
    last = 399
    script = write_script(tmp_path, "program.py", PROGRAM, last=last, buckets=BUCKETS, pause=0.05)
    runs: list[list[tuple[Row, int, int]]] = []
    cut: list[int] = []  # values a kill may have caught between commit() and the ack
    history: list[str] = []

    def lines(name: str) -> list[int]:
        path = tmp_path / name
        return [int(x) for x in path.read_text().split("\n") if x] if path.exists() else []

    for k in range(4):
        program: Program = programs(script, tmp_path, python_env, f"run{k}")
        acked_before = len(lines("acks.txt"))
        program.wait_until(lambda: len(lines("acks.txt")) >= acked_before + 5, 180, f"run {k}'s first acks")
        delay = rng.uniform(0.0, 4.0)
        time.sleep(delay)
        assert program.poll() is None, f"run {k} ended before the kill: {describe(program)}"
        program.crash()
        history.append(f"run {k}: killed {delay:.1f} s after 5 acks")
        runs.append(read_changes(tmp_path / "sums.jsonlines", allow_torn=True))
        (tmp_path / "sums.jsonlines").unlink(missing_ok=True)
        inflight, acked = lines("inflight.txt"), set(lines("acks.txt"))
        cut += [v for v in inflight[-1:] if v not in acked]

    final = run_program(script, tmp_path, python_env)
    check_ok(final)
    runs.append(read_changes(tmp_path / "sums.jsonlines", allow_torn=False))
    context = f"seed {seed}; {'; '.join(history)}; cut: {cut}"

    assert sorted(set(lines("acks.txt"))) == list(range(last + 1)), context
    got = accumulate(runs)
    # every value exactly once, except that a value cut by a kill may be there twice
    # (committed, then emitted again because it was not acknowledged)
    allowed = [
        sums_of(collections.Counter(range(last + 1)) + collections.Counter(extra))
        for size in range(len(cut) + 1) for extra in itertools.combinations(cut, size)
    ]
    assert got in allowed, f"{context}\n got {got}\n expected {allowed[0]}"
    assert sum(1 for run in runs if run) >= 3, context
