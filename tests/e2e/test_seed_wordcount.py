"""Seed 000: the persistent word count over a directory of CSV files.

The program of the seed (static mode, so that each run ends) is rerun after adding,
rewriting and deleting input files; every run must output exactly the changes of the
counts, computed here by a batch word count over the input folder before and after.
"""

from __future__ import annotations

import collections
import shutil
from pathlib import Path

import pytest

from .helpers import (
    changes, check_ok, describe, read_jsonlines_output, run_program, single_time, snapshot_diff,
    word_counts, write_file, write_script,
)

pytestmark = [pytest.mark.subprocess, pytest.mark.releases]

WORDCOUNT = '''
import sparkway as pw


class InputSchema(pw.Schema):
    word: str


words = pw.io.csv.read("inputs/", schema=InputSchema, mode="static")
word_counts = words.groupby(words.word).reduce(words.word, count=pw.reducers.count())
pw.io.jsonlines.write(word_counts, "result.jsonlines")

persistence_backend = pw.persistence.Backend.filesystem("./state/")
persistence_config = pw.persistence.Config.simple_config(persistence_backend)
pw.run(persistence_config=persistence_config)
'''


def words_file(*words: str) -> str:
    return "word\n" + "".join(f"{w}\n" for w in words)


def run_and_check(script: Path, work: Path, env: dict[str, str], before: collections.Counter,
                  what: str) -> tuple[collections.Counter, int | None]:
    """Runs the program; its output must be the update from ``before`` to the batch count
    of the inputs now.  Returns that count and the run's time."""
    now = word_counts(work / "inputs")
    expected = snapshot_diff(before, now)
    proc = run_program(script, work, env)
    check_ok(proc)
    # the notices every JVM start printed, which no user can act on
    for notice in ("Using incubator modules", "Unable to load native-hadoop library"):
        assert notice not in proc.stderr, f"{what}: the JVM's notice reached the user: {describe(proc)}"
    rows = read_jsonlines_output(work / "result.jsonlines")
    for row in rows:
        assert set(row) == {"word", "count", "time", "diff"}, f"{what}: unexpected fields in {row}"
    got = changes(rows, ["word", "count"])
    assert got == expected, (
        f"{what}: result.jsonlines differs from the expected changes\n"
        f" got: {sorted(got.elements())}\n expected: {sorted(expected.elements())}\n{describe(proc)}"
    )
    return now, single_time(rows)


def test_wordcount_reruns_output_only_changes(tmp_path: Path, python_env: dict[str, str]) -> None:
    script = write_script(tmp_path, "wordcount.py", WORDCOUNT)
    inputs = tmp_path / "inputs"
    counts: collections.Counter = collections.Counter()
    times = []

    # run 1: two files -> every word with its count
    write_file(inputs / "a.csv", words_file("hello", "world", "hello", "spark"))
    write_file(inputs / "b.csv", words_file("world", "pathway", "hello"))
    counts, t = run_and_check(script, tmp_path, python_env, counts, "run 1 (a.csv, b.csv)")
    times.append(t)

    # run 2: a new file -> -old/+new for the words it changes, +1 for new words
    write_file(inputs / "c.csv", words_file("world", "new", "new", "spark"))
    expected_words = {"world", "new", "spark"}
    before = counts
    counts, t = run_and_check(script, tmp_path, python_env, counts, "run 2 (added c.csv)")
    times.append(t)
    assert {w for (w, _), n in (counts - before).items()} == expected_words  # the oracle's own check

    # run 3: nothing new -> no rows at all
    counts, t = run_and_check(script, tmp_path, python_env, counts, "run 3 (no new input)")
    assert t is None
    assert (tmp_path / "result.jsonlines").read_text() == ""

    # run 4: a.csv rewritten -> its old rows retracted, its new rows counted;
    # c.csv grew -> only its new lines counted
    write_file(inputs / "a.csv", words_file("hello", "goodbye", "pathway"))
    with open(inputs / "c.csv", "a") as f:
        f.write("spark\nzebra\n")
    counts, t = run_and_check(script, tmp_path, python_env, counts, "run 4 (a.csv rewritten, c.csv appended)")
    times.append(t)

    # run 5: b.csv deleted -> its words' counts go down (to nothing for some)
    (inputs / "b.csv").unlink()
    counts, t = run_and_check(script, tmp_path, python_env, counts, "run 5 (b.csv deleted)")
    times.append(t)

    # run 6: b.csv back with other words -> a new file again
    write_file(inputs / "b.csv", words_file("pathway", "world", "zebra"))
    counts, t = run_and_check(script, tmp_path, python_env, counts, "run 6 (b.csv created again)")
    times.append(t)

    assert None not in times
    assert times == sorted(times) and len(set(times)) == len(times), f"times do not increase: {times}"


IDS = '''
import sparkway as pw


class InputSchema(pw.Schema):
    word: str


def count(table):
    return table.groupby(table.word).reduce(table.word, count=pw.reducers.count())


# an explicit persistent id: the source may move to another folder
named = pw.io.csv.read({named_path}, schema=InputSchema, mode="static", persistent_id="words_source")
# generated ids, by the order in which the sources are created
first = pw.io.csv.read("first/", schema=InputSchema, mode="static")
second = pw.io.csv.read("second/", schema=InputSchema, mode="static")
pw.io.jsonlines.write(count(named), "named.jsonlines")
pw.io.jsonlines.write(count(first), "first.jsonlines")
pw.io.jsonlines.write(count(second), "second.jsonlines")

# metadata and snapshots in two storages (seed 000: metadata_storage, snapshot_storage)
pw.run(persistence_config=pw.persistence.Config(
    metadata_storage=pw.persistence.Backend.filesystem("./metadata/"),
    snapshot_storage=pw.persistence.Backend.filesystem("./snapshots/"),
))
'''


def test_explicit_and_generated_persistent_ids(tmp_path: Path, python_env: dict[str, str]) -> None:
    folders = {"named": tmp_path / "words_v1", "first": tmp_path / "first", "second": tmp_path / "second"}
    # the same file name in both generated-id sources: mixing up their positions shows
    write_file(folders["named"] / "n1.csv", words_file("apple", "pear", "apple"))
    write_file(folders["first"] / "part1.csv", words_file("red", "green"))
    write_file(folders["second"] / "part1.csv", words_file("cat", "dog", "cat", "cat"))
    before = {k: word_counts(p) for k, p in folders.items()}
    script = write_script(tmp_path, "ids_v1.py", IDS, named_path="words_v1/")
    proc = run_program(script, tmp_path, python_env)
    check_ok(proc)
    for key in folders:
        got = changes(read_jsonlines_output(tmp_path / f"{key}.jsonlines"), ["word", "count"])
        assert got == snapshot_diff(collections.Counter(), before[key]), f"run 1, {key}: {sorted(got.elements())}"
    for storage in ("metadata", "snapshots"):
        assert any(p.is_file() for p in (tmp_path / storage).rglob("*")), f"nothing was written to ./{storage}/"
    assert not (tmp_path / "state").exists()

    # run 2: the named source's folder moved (same persistent id), new files everywhere
    shutil.move(folders["named"], tmp_path / "words_v2")
    folders["named"] = tmp_path / "words_v2"
    write_file(folders["named"] / "n2.csv", words_file("pear", "plum"))
    write_file(folders["first"] / "part2.csv", words_file("green", "blue"))
    write_file(folders["second"] / "part2.csv", words_file("dog"))
    after = {k: word_counts(p) for k, p in folders.items()}
    script = write_script(tmp_path, "ids_v2.py", IDS, named_path="words_v2/")
    proc = run_program(script, tmp_path, python_env)
    check_ok(proc)
    for key in folders:
        got = changes(read_jsonlines_output(tmp_path / f"{key}.jsonlines"), ["word", "count"])
        expected = snapshot_diff(before[key], after[key])
        assert got == expected, (
            f"run 2, {key}: got {sorted(got.elements())}, expected {sorted(expected.elements())}\n"
            f"{describe(proc)}"
        )
