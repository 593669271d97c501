"""Seeds 002/003: the user-sessions tutorial, run as the tutorial runs it.

The persistent program runs four times on one ``./PStorage``, log files being added
between runs; each run's ``sessions.csv`` must hold exactly the changes the seed shows.
The first (non-persistent) program of seed 002, with the old ``pw.csv.read`` alias, is
run too.  Expected rows are the seed's, cross-checked with a batch computation.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from .helpers import (
    check_ok, describe, read_csv_output, run_program, session_events, sessions, single_time,
    snapshot_diff, write_file, write_script,
)

pytestmark = [pytest.mark.subprocess, pytest.mark.releases]

HEADER = ["user_id", "session_length", "session_start", "session_finish", "count", "time", "diff"]

# the log files of the tutorial, in the order it adds them
PART_ONE = """user_id,access_time
alice,1701102730
bob,1701102743
alice,1701103035
bob,1701102774
bob,1701102805
alice,1701103037
"""
PART_TWO = """user_id,access_time
alice,1701103040
alice,1701103331
alice,1701103618
"""
PART_THREE = """user_id,access_time
bob,1701104640
bob,1701104931
bob,1701105218
"""
PART_FOUR = """user_id,access_time
alice,1701103338
alice,1701103629
alice,1701103916
"""

# sessions.csv after each run, as seed 003 prints it (time column left out):
# (user_id, session_length, session_start, session_finish, count, diff)
SEED_RUN_1 = [
    ("bob", 62, 1701102743, 1701102805, 3, 1),
    ("alice", 0, 1701102730, 1701102730, 1, 1),
    ("alice", 583, 1701103035, 1701103618, 5, 1),
]
SEED_RUN_2 = [("bob", 578, 1701104640, 1701105218, 3, 1)]
SEED_RUN_3 = [
    ("alice", 583, 1701103035, 1701103618, 5, -1),
    ("alice", 881, 1701103035, 1701103916, 8, 1),
]
SEED_RUN_4: list[tuple] = []  # no new input: no rows

# the persistent program of seed 003, unchanged but for the import: the shipped example
PERSISTENT = (Path(__file__).resolve().parents[2] / "examples" / "sessions" / "script.py").read_text()

# the first program of seed 002: no persistence, the old pw.csv alias
NON_PERSISTENT = '''
import sparkway as pw


class InputSchema(pw.Schema):
    user_id: str
    access_time: int


if __name__ == "__main__":
    table = pw.csv.read("logs/", mode="static", schema=InputSchema)
    sessions = table.windowby(
        pw.this.access_time,
        window=pw.temporal.session(max_gap=300),
        shard=pw.this.user_id,
    ).reduce(
        user_id=table.user_id,
        session_length=(
            pw.reducers.max(table.access_time) - pw.reducers.min(table.access_time)
        ),
        session_start=pw.reducers.min(table.access_time),
        session_finish=pw.reducers.max(table.access_time),
        count=pw.reducers.count(),
    )
    pw.io.csv.write(sessions, "sessions.csv")
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)
'''


def as_changes(rows: list[dict[str, str]]) -> collections.Counter:
    return collections.Counter(
        (r["user_id"], int(r["session_length"]), int(r["session_start"]), int(r["session_finish"]),
         int(r["count"]), int(r["diff"]))
        for r in rows
    )


def expected_changes(logs: Path, before: collections.Counter) -> tuple[collections.Counter, collections.Counter]:
    """The batch sessions over the logs now, and the update stream from ``before``."""
    now = sessions(session_events(logs), max_gap=300)
    return now, snapshot_diff(before, now)


def check_run(work: Path, run: int, seed_rows: list[tuple], oracle: collections.Counter,
              proc) -> int | None:
    check_ok(proc)
    # the oracle and the seed agree (a check of this test's own batch computation)
    assert oracle == collections.Counter(seed_rows), f"run {run}: the batch oracle disagrees with the seed"
    header, rows = read_csv_output(work / "sessions.csv")
    # a run without changes leaves an empty file, as Pathway 0.33 does (no header either)
    assert header == (HEADER if seed_rows else []), f"run {run}: sessions.csv header"
    got = as_changes(rows)
    assert got == collections.Counter(seed_rows), (
        f"run {run}: sessions.csv differs from seed 003\n got: {sorted(got.elements())}\n"
        f" expected: {sorted(seed_rows)}\n{describe(proc)}"
    )
    return single_time(rows)


PARTS = {1: {"part_one.csv": PART_ONE, "part_two.csv": PART_TWO}, 2: {"part_three.csv": PART_THREE},
         3: {"part_four.csv": PART_FOUR}, 4: {}}
SEED_RUNS = {1: SEED_RUN_1, 2: SEED_RUN_2, 3: SEED_RUN_3, 4: SEED_RUN_4}


def sessions_scenario(tmp_path: Path, env: dict[str, str] | list[dict[str, str]], runs: int = 4) -> None:
    """Runs 1..``runs`` of the tutorial on one ./PStorage, checking each output; ``env``
    may be a list: one environment per run."""
    envs = env if isinstance(env, list) else [env] * runs
    script = write_script(tmp_path, "script.py", PERSISTENT)
    logs = tmp_path / "logs"
    times: list[int] = []
    state: collections.Counter = collections.Counter()
    for run in range(1, runs + 1):
        for name, text in PARTS[run].items():
            write_file(logs / name, text)
        state, oracle = expected_changes(logs, state)
        t = check_run(tmp_path, run, SEED_RUNS[run], oracle, run_program(script, tmp_path, envs[run - 1]))
        if SEED_RUNS[run]:
            times.append(t)
        else:
            assert t is None
        if run == 1:
            assert (tmp_path / "PStorage").is_dir(), "run 1 created no ./PStorage"
    assert times == sorted(times) and len(set(times)) == len(times), f"the times of the runs do not increase: {times}"


def test_sessions_persistent_four_runs(tmp_path: Path, python_env: dict[str, str]) -> None:
    # run 1: part_one + part_two, empty ./PStorage -> every session
    # run 2: part_three -> only bob's new session
    # run 3: part_four -> alice's old session retracted, the extended one inserted
    # run 4: nothing new -> an empty file
    sessions_scenario(tmp_path, python_env, runs=4)


def test_sessions_non_persistent_with_old_csv_alias(tmp_path: Path, python_env: dict[str, str]) -> None:
    script = write_script(tmp_path, "script.py", NON_PERSISTENT)
    logs = tmp_path / "logs"
    write_file(logs / "part_one.csv", PART_ONE)
    write_file(logs / "part_two.csv", PART_TWO)
    _, oracle = expected_changes(logs, collections.Counter())
    proc = run_program(script, tmp_path, python_env)
    check_run(tmp_path, 1, SEED_RUN_1, oracle, proc)
    warnings = [line for line in proc.stderr.splitlines() if "UserWarning" in line]
    assert any("pathway.csv has been moved to pathway.io.csv" in line for line in warnings), (
        f"no UserWarning about pw.csv on stderr: {describe(proc)}"
    )
    assert not (tmp_path / "PStorage").exists()
