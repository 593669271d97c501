"""Persistence on S3, with programs run as separate processes against a real S3 endpoint
on loopback (moto's server, started by the test session): the restart scenario, and the
SIGKILL crash test of test_crash.py with the S3 backend.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from .helpers import check_ok, read_jsonlines_output, run_program, snapshot_diff, word_counts, write_file, write_script
from .test_crash import run_crash_test

pytestmark = pytest.mark.subprocess


def s3_backend(bucket, prefix: str) -> str:
    """Python source of the program's backend."""
    return f"pw.persistence.Backend.s3('s3://{bucket.name}/{prefix}', pw.io.s3.AwsS3Settings(**{bucket.settings_kwargs()!r}))"


PROGRAM = '''
import sparkway as pw


class Words(pw.Schema):
    word: str


words = pw.io.csv.read("inputs/", schema=Words, mode="static", persistent_id="words")
counts = words.groupby(words.word).reduce(words.word, count=pw.reducers.count())
pw.io.jsonlines.write(counts, {output})
pw.run(persistence_config=pw.persistence.Config({backend}))
'''


def test_restart_reads_only_new_input_and_outputs_only_changes(tmp_path: Path, python_env, s3_bucket) -> None:
    """Each run has a new local state cache, as on a new machine: the operator state of
    the second run is read back from S3."""
    def run(k: int) -> collections.Counter:
        script = write_script(tmp_path, f"run{k}.py", PROGRAM, output=f"out{k}.jsonlines")
        script.write_text(script.read_text().replace("{backend}", s3_backend(s3_bucket, "wordcount")))
        env = {**python_env, "SPARKWAY_STATE_CACHE": str(tmp_path / f"cache{k}")}
        check_ok(run_program(script, tmp_path, env))
        rows = read_jsonlines_output(tmp_path / f"out{k}.jsonlines")
        return collections.Counter((r["word"], r["count"], r["diff"]) for r in rows)

    write_file(tmp_path / "inputs" / "a.csv", "word\nant\nbee\nant\n")
    first_counts = word_counts(tmp_path / "inputs")
    assert run(1) == snapshot_diff(collections.Counter(), first_counts)
    write_file(tmp_path / "inputs" / "b.csv", "word\nbee\ncat\n")
    assert run(2) == snapshot_diff(first_counts, word_counts(tmp_path / "inputs"))
    assert run(3) == collections.Counter()  # nothing new: nothing output


def test_sigkill_at_random_moments_on_s3_loses_and_duplicates_nothing(tmp_path: Path, python_env, programs,
                                                                      s3_bucket) -> None:
    run_crash_test(tmp_path, python_env, programs, kills=4, budget_s=150, backend=s3_backend(s3_bucket, "state"))
