"""SIGTERM ends a streaming run gracefully; the next run re-emits nothing."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from .helpers import Program, describe, snapshot_diff, word_counts, write_file, write_script
from .test_crash import ONE_SOURCE, count_changes

pytestmark = pytest.mark.subprocess


def test_sigterm_then_restart_outputs_only_what_is_new(tmp_path: Path, python_env, programs) -> None:
    write_file(tmp_path / "inputs" / "a.csv", "word\nx\ny\nx\n")
    script = write_script(tmp_path, "streaming.py", ONE_SOURCE, mode="streaming", output="out.jsonlines")
    output = tmp_path / "out.jsonlines"
    before = word_counts(tmp_path / "inputs")

    first: Program = programs(script, tmp_path, python_env, "first")
    first.wait_until(lambda: len(count_changes(output, allow_torn=True)) == 2, 180, "the counts of a.csv")
    assert first.terminate() == 0, f"SIGTERM was not a graceful end: {describe(first)}"
    first_changes = count_changes(output, allow_torn=False)
    assert collections.Counter(row + (diff,) for row, _, diff in first_changes) == snapshot_diff(
        collections.Counter(), before
    )

    second: Program = programs(script, tmp_path, python_env, "second")
    second.wait_until(lambda: "restored after 3 entries" in second.stderr_text(), 180, "the restore")
    write_file(tmp_path / "inputs" / "b.csv", "word\ny\nz\n")
    after = word_counts(tmp_path / "inputs")
    second.wait_until(lambda: len(count_changes(output, allow_torn=True)) >= 3, 180, "the counts of b.csv")
    assert second.terminate() == 0, describe(second)
    got = collections.Counter(row + (diff,) for row, _, diff in count_changes(output, allow_torn=False))
    assert got == snapshot_diff(before, after)  # y: 1 -> 2, z: new; nothing about x
