"""Persistent programs through Spark's own Spark Connect server (``sc://``), as teams on
Databricks serverless or a Spark 4 deployment reach Spark: restarts continue where they
stopped (also when a run between them had a Spark of its own), SIGKILLs at random
moments lose and repeat nothing, SIGTERM ends a streaming program gracefully.

The server is Spark's, started from the pyspark installation (tests/services/spark_connect.py),
not a ``sparkway server``."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from .helpers import (
    check_ok, describe, read_jsonlines_output, run_program, snapshot_diff, word_counts, write_file, write_script,
)
from .test_crash import ONE_SOURCE, count_changes, run_crash_test
from .test_server import counted_changes, streaming_until_sigterm

pytestmark = [pytest.mark.subprocess, pytest.mark.releases]


@pytest.fixture
def attached_env(python_env: dict[str, str], spark_connect_server) -> dict[str, str]:
    return {**python_env, "SPARKWAY_SPARK_MASTER": spark_connect_server.address}


def test_runs_through_spark_connect_continue_where_they_stopped(tmp_path: Path, python_env, attached_env,
                                                                 spark_connect_server) -> None:
    """Four runs of a persistent word count on one storage, a new file before each: through
    the server, through the server, with a Spark of its own, through the server again.
    Each outputs exactly the change its new file makes to the counts."""
    inputs = tmp_path / "inputs"
    before: collections.Counter = collections.Counter()
    runs = [("a.csv", "word\nx\ny\nx\n", attached_env), ("b.csv", "word\ny\nz\n", attached_env),
            ("c.csv", "word\nz\nw\n", python_env), ("d.csv", "word\nx\nv\n", attached_env)]
    for run, (name, text, env) in enumerate(runs):
        write_file(inputs / name, text)
        script = write_script(tmp_path, f"run{run}.py", ONE_SOURCE, mode="static", output=f"out{run}.jsonlines")
        proc = run_program(script, tmp_path, env)
        check_ok(proc)
        attached = f"Attached to the Spark Connect server at {spark_connect_server.address}" in proc.stderr
        assert attached == (env is attached_env), describe(proc)
        now = word_counts(inputs)
        assert counted_changes(tmp_path / f"out{run}.jsonlines") == snapshot_diff(before, now), f"run {run}: {describe(proc)}"
        before = now


def test_sigkills_through_spark_connect_lose_and_duplicate_nothing(tmp_path: Path, attached_env, programs) -> None:
    """The crash test's streaming program (two sources, two sinks) attached to the
    server, killed three times at random moments (the whole client, or its driver
    process alone), then stopped with SIGTERM: the outputs of all runs together are
    exactly the batch results.  The server goes on running the killed client's jobs;
    the next client must not take their late work for its own."""
    run_crash_test(tmp_path, attached_env, programs, kills=3, budget_s=150, runs_with_output=2)


def test_a_streaming_program_through_spark_connect_stops_on_sigterm(tmp_path: Path, attached_env,
                                                                    programs) -> None:
    script = streaming_until_sigterm(tmp_path, attached_env, programs)
    # restarted, it reads only what came while it was stopped
    write_file(tmp_path / "inputs" / "c.csv", "word\nx\n")
    output = tmp_path / "out.jsonlines"
    program = programs(script, tmp_path, attached_env, tag="restart")
    program.wait_until(lambda: len(count_changes(output, allow_torn=True)) == 2, 120, "the change c.csv makes")
    assert program.terminate() == 0, describe(program)
    assert counted_changes(output) == collections.Counter({("x", 2, -1): 1, ("x", 3, 1): 1})


LARGE_INPUT = '''
import sparkway as pw
from sparkway.connectors import files

files.EXECUTOR_READ_BYTES = 1 << 20  # a step of 1 MB is large, cut in pieces of 128 KB
files.PIECE_BYTES = 128 << 10


class Words(pw.Schema):
    word: str
    n: int


words = pw.io.csv.read("inputs/", schema=Words, mode="static", persistent_id="words")
counts = words.groupby(words.word).reduce(words.word, count=pw.reducers.count(), total=pw.reducers.sum(words.n))
pw.io.jsonlines.write(counts, "out.jsonlines")
pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem("./state/")))
'''


def test_large_input_through_spark_connect_is_read_by_the_servers_executors(tmp_path: Path, attached_env) -> None:
    """Two CSV files of about 1 MB each, with rows that do not parse, behind a relative
    path (the server's working folder is not the program's): the server's tasks read
    them in pieces, the rows and the skipped rows are counted once, and the counts are
    those of the files."""
    expected: collections.Counter = collections.Counter()
    totals: collections.Counter = collections.Counter()
    good = 0
    for name, bad in (("a.csv", 3), ("b.csv", 2)):
        lines = ["word,n"]
        for i in range(90_000):
            word = f"w{(i * 7919) % 97}"
            lines.append(f"{word},{i}")
            expected[word] += 1
            totals[word] += i
            good += 1
            if i % 30_000 == 1 and bad:
                lines.append("x,not-a-number")
                bad -= 1
        write_file(tmp_path / "inputs" / name, "\n".join(lines) + "\n")

    proc = run_program(write_script(tmp_path, "large.py", LARGE_INPUT), tmp_path, attached_env)
    check_ok(proc)
    assert "by Spark's tasks" in proc.stderr and "this program reads it" not in proc.stderr, describe(proc)
    assert f"{good} entries" in proc.stderr, describe(proc)
    assert "5 row(s) skipped in this run" in proc.stderr, describe(proc)
    rows = read_jsonlines_output(tmp_path / "out.jsonlines")
    assert {r["word"]: r["count"] for r in rows if r["diff"] == 1} == dict(expected)
    assert {r["word"]: r["total"] for r in rows if r["diff"] == 1} == dict(totals)
    assert all(r["diff"] == 1 for r in rows)
