"""The fault-injection suite (``pytest -m faults``): crashes at every named fault point of
the persistence, SIGKILLs at random moments, a missing input root, a paused S3 lease
holder and a full disk.  docs/delivery-guarantees.md ("Faults tried") lists them with
their outcomes.

(a) ``test_a_crash_at_a_fault_point_loses_nothing``: for every point of
    ``sparkway.persistence.faults.POINTS``, a persistent static program (two CSV sources,
    a groupby, a join and a deduplicate, so that arrangements and a keyed state store hold
    state; JSON lines, CSV and SQLite sinks) continues a storage that holds one committed
    step; run with ``SPARKWAY_FAULT_POINT``, it must die there (exit code 137, or SIGKILL
    when the point is in a Spark worker, which kills the driver's process group) and the
    point must have been reached; restarted without the variable, it must end with
    every sink at the batch result computed here in plain Python: nothing lost, the
    file sinks' changes of the interrupted step repeated only identically (at least
    once), the SQLite sink's changes each exactly once.  The points of a rebuild
    (``on_plan_change="rebuild"``), and those of the first commit of a new storage (a
    file source's first position base), are reached by a changed program on that
    storage.
(b) SIGKILLs at random moments, many short kill/restart cycles (``helpers.crash_soon``)
    through ``test_crash.crash_scenario``: streaming with a filesystem storage and file
    sinks, with an S3 storage (moto's server), with PostgreSQL sinks; and a static program
    killed at random moments.
(c) a missing input root: static, an error naming the path; streaming, a warning, no
    retraction, and the folder's rows counted again once it is back.
(d) a paused S3 lease holder (SIGSTOP): a second process is refused while the lease is
    fresh, takes over once it expired; the first, resumed (SIGCONT), stops with an error
    before it logs or commits another step, and writes nothing to its sink.
(e) a full disk: the storage on a small tmpfs; the run stops with a PersistenceError
    naming the file, and leaves no temporary file.
(f) the scratch folders of a SIGKILLed run without persistence (its state, its step
    inputs, its JVM's files): the next run removes them.

Every test records how many times it killed a program (``helpers.record_kills``); the
terminal summary prints the total.
"""

from __future__ import annotations

import collections
import csv
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sparkway.persistence.faults import POINTS

from .helpers import (
    changes, check_ok, crash_soon, describe, read_csv_output, read_jsonlines_output, record_kills,
    run_program, snapshot_diff, word_counts, write_file, write_script,
)
from .test_crash import check_stream, run_crash_test
from .test_postgres_crash import snapshot, stream_changes
from .test_s3 import s3_backend

pytestmark = [pytest.mark.subprocess, pytest.mark.faults]

ROOT = Path(__file__).resolve().parents[2]

# ------------------------------------------------------------------ (a) fault points

PROGRAM = '''
import os

import sparkway as pw


class Words(pw.Schema):
    word: str
    n: int


class Labels(pw.Schema):
    word: str
    label: str


tag = os.environ["RUN_TAG"]  # each run writes files of its own: a crashed run's stay to be read
words = pw.io.csv.read("words/", schema=Words, mode="static", name="words")
labels = pw.io.csv.read("labels/", schema=Labels, mode="static", name="labels")
counts = words.groupby(words.word).reduce(words.word, count=pw.reducers.count(), total=pw.reducers.sum(words.n))
joined = counts.join(labels, counts.word == labels.word).select(
    counts.word, labels.label, counts.count, counts.total, {extra_column}
)
pw.io.jsonlines.write(joined, f"joined-{tag}.jsonlines")
pw.io.sqlite.write(joined, "out.db", {sqlite_table}, init_mode="create_if_not_exists")
best = words.deduplicate(value=words.n, instance=words.word, acceptor=lambda new, old: new > old)
pw.io.csv.write(best, f"best-{tag}.csv")
# a snapshot at every commit of the keyed state, so that the snapshot's point is reached
config = pw.persistence.Config(pw.persistence.Backend.filesystem("./state/"), snapshot_interval_ms=0,
                               on_plan_change={on_plan_change})
pw.run(persistence_config=config)
'''

#: the program that wrote the storage, and a changed one that rebuilds it
ORIGINAL = {"extra_column": "", "sqlite_table": "changes", "on_plan_change": "error"}
CHANGED = {"extra_column": "double=counts.total * 2", "sqlite_table": "changes2", "on_plan_change": "rebuild"}

REBUILD_POINTS = ("metadata.rebuild.marked", "metadata.rebuild.clearing", "runner.rebuild.cleared",
                  "metadata.plan.written")
#: points of the first commit of a new storage: the changed program's, after the rebuild
#: (a step of the original one adds a file to each source's position: a delta)
NEW_STORAGE_POINTS = ("metadata.index.base.written",)
#: the time a point is reached at which the run dies: the second time for the commits
#: of state partitions (one partition committed the step, the next dies)
TIMES = {"arrangement.runs.written": 2, "arrangement.manifest.written": 2, "arrangement.latest.written": 2,
         "state.latest.written": 2}
#: points after the step's commit: the restart has nothing to do again
COMMITTED = ("metadata.commit.written",)

VOCABULARY = ["ant", "bee", "cat", "dog", "eel", "fox", "gnu", "hen", "ibis", "jay", "koi", "lynx", "mole", "newt"]


def program(folder: Path, variant: dict[str, str]) -> Path:
    script = write_script(folder, "program.py", PROGRAM)
    text = script.read_text()
    for key, value in variant.items():
        text = text.replace("{" + key + "}", value if key == "extra_column" else repr(value))
    script.write_text(text.replace(", \n", "\n"))
    return script


def write_batch(root: Path, name: str, seed: int) -> None:
    """A CSV file of words with numbers in ``words/`` and of labels in ``labels/``."""
    rng = random.Random(seed)
    rows = [f"{rng.choice(VOCABULARY)},{rng.randint(1, 99)}\n" for _ in range(40)]
    write_file(root / "words" / f"{name}.csv", "word,n\n" + "".join(rows))
    labelled = sorted(rng.sample(VOCABULARY, 6))
    write_file(root / "labels" / f"{name}.csv", "word,label\n" + "".join(f"{w},{name}-{w}\n" for w in labelled))


def read_rows(folder: Path) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for path in sorted(folder.glob("*.csv")):
        with open(path, newline="", encoding="utf-8") as f:
            rows.extend(csv.DictReader(f))
    return rows


def expected_joined(root: Path, extra: bool = False) -> collections.Counter:
    """Batch result of ``joined``: (word, label, count, total[, double])."""
    words = read_rows(root / "words")
    counts = collections.Counter(r["word"] for r in words)
    totals: collections.Counter = collections.Counter()
    for r in words:
        totals[r["word"]] += int(r["n"])
    out: collections.Counter = collections.Counter()
    for r in read_rows(root / "labels"):
        if r["word"] in counts:
            row = (r["word"], r["label"], counts[r["word"]], totals[r["word"]])
            out[row + ((2 * totals[r["word"]],) if extra else ())] += 1
    return out


def expected_best(root: Path) -> collections.Counter:
    """Batch result of ``best``: per word, the row of its largest n."""
    best: dict[str, int] = {}
    for r in read_rows(root / "words"):
        best[r["word"]] = max(best.get(r["word"], 0), int(r["n"]))
    return collections.Counter(best.items())


Change = tuple[tuple, int, int]


def joined_changes(path: Path, extra: bool = False) -> list[Change]:
    columns = ["word", "label", "count", "total"] + (["double"] if extra else [])
    return [(tuple(r[c] for c in columns), r["time"], r["diff"]) for r in read_jsonlines_output(path, allow_torn=True)]


def best_changes(path: Path) -> list[Change]:
    if not path.exists():
        return []
    _, rows = read_csv_output(path)
    return [((r["word"], int(r["n"])), int(r["time"]), int(r["diff"])) for r in rows]


def sqlite_changes(path: Path, table: str, extra: bool = False) -> list[Change]:
    if not path.exists():
        return []
    columns = ["word", "label", '"count"', "total"] + (["double"] if extra else [])
    with sqlite3.connect(path) as conn:
        try:
            found = conn.execute(f"SELECT {', '.join(columns)}, time, diff FROM {table} ORDER BY time, diff").fetchall()
        except sqlite3.OperationalError:  # no table yet
            return []
    return [(tuple(row[:-2]), row[-2], row[-1]) for row in found]


def fault_env(base: dict[str, str], work: Path) -> dict[str, str]:
    """Each test its own working copies: copies of one storage share its plan's
    incarnation, which names the working copies in a shared cache.  No fault point but
    the one a run is given (none inherited from the test's own environment)."""
    env = {k: v for k, v in base.items() if not k.startswith("SPARKWAY_FAULT_")}
    return {**env, "SPARKWAY_STATE_CACHE": str(work / "cache")}


def tagged(env: dict[str, str], tag: str) -> dict[str, str]:
    return {**env, "RUN_TAG": tag}


@pytest.fixture(scope="module")
def committed_storage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the original program, its first batch of input and the storage of
    its first run (one committed step), which each test copies."""
    root = tmp_path_factory.mktemp("committed")
    write_batch(root, "a", seed=1)
    script = program(root, ORIGINAL)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in [str(ROOT), os.environ.get("PYTHONPATH", "")] if p),
           "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}  # as conftest's python_env
    check_ok(run_program(script, root, tagged(fault_env(env, root), "base")))
    assert expected_joined(root) and (root / "state" / "commits").is_dir()
    shutil.rmtree(root / "cache")
    return root


def reached(counter: Path) -> list[str]:
    return counter.read_text().split("\n")[:-1] if counter.exists() else []


def crash_at(point: str, script: Path, work: Path, env: dict[str, str], programs) -> str:
    """Runs ``script`` with the fault point; it must die there.  Returns its stderr."""
    times = TIMES.get(point, 1)
    counter = work / "fault.count"
    crashing = programs(script, work, {**tagged(env, "crash"), "SPARKWAY_FAULT_POINT": f"{point}:{times}",
                                       "SPARKWAY_FAULT_COUNTER": str(counter)}, "crash")
    try:
        crashing.proc.wait(300)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the run with {point} did not end: {describe(crashing)}") from None
    crashing.kill()  # what may be left of its process group
    record_kills("fault points")
    code = crashing.returncode
    hits = reached(counter)
    assert len(hits) == times and all(h.startswith(point + " ") for h in hits), (
        f"{point} was reached {len(hits)} time(s), not {times}: the scenario must reach it; {describe(crashing)}"
    )
    assert code in (137, -signal.SIGKILL), f"the run with {point} did not die at it: {describe(crashing)}"
    return crashing.stderr_text()


def leftover_temporary_files(storage: Path) -> list[str]:
    return sorted(str(p.relative_to(storage)) for p in storage.rglob("*") if ".tmp-" in p.name)


@pytest.mark.parametrize("point", POINTS)
def test_a_crash_at_a_fault_point_loses_nothing(
    point: str, tmp_path: Path, committed_storage: Path, python_env: dict[str, str], programs,
) -> None:
    work = tmp_path / "work"
    shutil.copytree(committed_storage, work)
    env = fault_env(python_env, work)
    rebuild = point in REBUILD_POINTS + NEW_STORAGE_POINTS
    write_batch(work, "b", seed=2)
    before_joined, before_best = expected_joined(committed_storage), expected_best(committed_storage)
    all_joined, all_best = expected_joined(work, extra=rebuild), expected_best(work)
    assert snapshot_diff(before_joined, expected_joined(work)), "the second batch changes nothing"

    script = program(work, CHANGED if rebuild else ORIGINAL)
    crash_stderr = crash_at(point, script, work, env, programs)
    restart = run_program(script, work, tagged(env, "restart"))
    check_ok(restart)
    context = f"{point}; crashed run's stderr (tail):\n{crash_stderr[-3000:]}\nrestart: {describe(restart)}"

    runs = ["crash", "restart"] if rebuild else ["base", "crash", "restart"]
    joined = {tag: joined_changes(work / f"joined-{tag}.jsonlines", extra=rebuild) for tag in runs}
    best = {tag: best_changes(work / f"best-{tag}.csv") for tag in runs}
    table = CHANGED["sqlite_table"] if rebuild else ORIGINAL["sqlite_table"]
    try:
        check_stream("joined", list(joined.values()), all_joined, one_per=lambda row: row[:2])
        check_stream("best", list(best.values()), all_best, one_per=lambda row: row[0])
        # exactly once: all the changes of every run in one list, where none may repeat
        check_stream("sqlite", [sqlite_changes(work / "out.db", table, extra=rebuild)], all_joined,
                     one_per=lambda row: row[:2])
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{context}") from None

    # what the restart did: after a rebuild, everything from scratch; after the commit,
    # nothing again; else the step, whole, at the time the crashed run gave it
    if rebuild:
        wanted_joined, wanted_best = snapshot_diff(collections.Counter(), all_joined), snapshot_diff(
            collections.Counter(), all_best)
    elif point in COMMITTED:
        wanted_joined = wanted_best = collections.Counter()
    else:
        wanted_joined, wanted_best = snapshot_diff(before_joined, all_joined), snapshot_diff(before_best, all_best)
    got_joined = collections.Counter(row + (diff,) for row, _, diff in joined["restart"])
    got_best = collections.Counter(row + (diff,) for row, _, diff in best["restart"])
    assert got_joined == wanted_joined, f"the restart's joined changes: {sorted(got_joined)}; {context}"
    assert got_best == wanted_best, f"the restart's best changes: {sorted(got_best)}; {context}"
    crash_times = {t for _, t, _ in joined["crash"] + best["crash"]}
    restart_times = {t for _, t, _ in joined["restart"] + best["restart"]}
    if crash_times and not rebuild:
        assert restart_times <= crash_times, f"the replayed step has another time: {restart_times} {crash_times}"
    assert not leftover_temporary_files(work / "state"), (
        f"temporary files left in the storage after the restart: {leftover_temporary_files(work / 'state')}"
    )


# ------------------------------------------------------ (b) SIGKILLs at random moments

#: SIGKILLs of the random-moment tests here; with the fault points' crashes and the
#: other crash tests' kills (tests/e2e: test_crash 6, test_s3 4, test_postgres_crash 7,
#: test_cluster 3, test_python_subject 4, test_kafka 1, test_spark_failures 1 of the JVM)
#: more than 100 in all
STREAMING_KILLS = {"filesystem": 30, "s3_postgres": 22}
STATIC_KILLS = 8


def test_many_sigkills_of_a_streaming_program_on_a_filesystem_storage(tmp_path: Path, python_env, programs) -> None:
    """File sinks (JSON lines, CSV), a groupby and a session window; many short
    kill/restart cycles while files keep coming."""
    kills = STREAMING_KILLS["filesystem"]
    run_crash_test(tmp_path, python_env, programs, kills=kills, budget_s=120, moment=crash_soon,
                   runs_with_output=max(2, kills // 6))


POSTGRES_SINKS = '''
settings = {settings!r}
pw.io.postgres.write(counts, settings, "changes", init_mode="create_if_not_exists")
pw.io.postgres.write_snapshot(counts, settings, "counts", [counts.word], init_mode="create_if_not_exists")
'''


def test_many_sigkills_of_a_streaming_program_on_s3_with_postgres_sinks(
    tmp_path: Path, python_env, programs, s3_bucket, postgres,
) -> None:
    """The same program with its storage on S3 and its word counts written to PostgreSQL
    too (stream and snapshot: exactly once), next to the file sinks (at least once)."""
    kills = STREAMING_KILLS["s3_postgres"]
    result = run_crash_test(
        tmp_path, python_env, programs, kills=kills, budget_s=120, backend=s3_backend(s3_bucket, "state"),
        moment=crash_soon, more_sinks=POSTGRES_SINKS.replace("{settings!r}", repr(postgres)),
        runs_with_output=max(2, kills // 6),
    )
    expected = word_counts(tmp_path / "inputs")
    assert snapshot(postgres) == expected, f"the snapshot table: {sorted(snapshot(postgres).items())}; {result['context']}"
    # exactly once: every change of every run in one list, where none may repeat
    check_stream("changes", [stream_changes(postgres)], expected, one_per=lambda row: row[0])


def test_sigkills_of_a_static_program_at_random_moments(
    tmp_path: Path, committed_storage: Path, python_env: dict[str, str], programs,
) -> None:
    """The static program of (a), killed at random moments of its runs (start-up,
    recovery, the step), a batch of input added now and then; the last run ends by
    itself."""
    seed = random.randrange(10**6)
    rng = random.Random(seed)
    work = tmp_path / "work"
    shutil.copytree(committed_storage, work)
    env = fault_env(python_env, work)
    script = program(work, ORIGINAL)
    tags, history = ["base"], []
    kills = 0
    # a moment drawn within the shortest whole run seen so far, so that most runs are
    # killed however fast the machine is (a run ending by itself shortens the range)
    longest_delay = 12.0
    for k in range(4 * STATIC_KILLS):
        if kills == STATIC_KILLS:
            break
        if k % 3 == 0:
            write_batch(work, f"k{k}", seed=100 + k)
        tag = f"run{k}"
        run = programs(script, work, tagged(env, tag), tag)
        started = time.monotonic()
        delay = rng.uniform(0.2, longest_delay)
        while time.monotonic() < started + delay and run.poll() is None:
            time.sleep(0.02)
        if run.poll() is None:
            run.crash(whole_group=rng.random() < 0.7)
            record_kills("SIGKILLs at random moments")
            kills += 1
            history.append(f"{tag}: killed after {delay:.1f} s")
        else:
            assert run.returncode == 0, describe(run)
            lasted = time.monotonic() - started
            longest_delay = max(0.5, min(longest_delay, 0.9 * lasted))
            history.append(f"{tag}: ended by itself after {lasted:.1f} s")
        run.kill()
        tags.append(tag)
    final = run_program(script, work, tagged(env, "final"))
    tags.append("final")
    context = f"seed {seed}; {'; '.join(history)}; final run: {describe(final)}"
    check_ok(final)
    try:
        check_stream("joined", [joined_changes(work / f"joined-{t}.jsonlines") for t in tags], expected_joined(work),
                     one_per=lambda row: row[:2])
        check_stream("best", [best_changes(work / f"best-{t}.csv") for t in tags], expected_best(work),
                     one_per=lambda row: row[0])
        check_stream("sqlite", [sqlite_changes(work / "out.db", "changes")], expected_joined(work),
                     one_per=lambda row: row[:2])
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n({context})") from None
    print(context)
    assert kills == STATIC_KILLS, f"too few runs were killed: {context}"


# ------------------------------------------------------------ (c) a missing input root

WORD_COUNT = '''
import sparkway as pw
{prelude}

class Words(pw.Schema):
    word: str


words = pw.io.csv.read("inputs/", schema=Words, mode={mode}, name="words")
counts = words.groupby(words.word).reduce(words.word, count=pw.reducers.count())
pw.io.jsonlines.write(counts, {output})
pw.run(persistence_config=pw.persistence.Config({backend}))
'''
FILESYSTEM = 'pw.persistence.Backend.filesystem("./state/")'


def word_count_script(folder: Path, name: str, *, mode: str, output: str, backend: str = FILESYSTEM,
                      prelude: str = "") -> Path:
    script = write_script(folder, name, WORD_COUNT, mode=mode, output=output)
    script.write_text(script.read_text().replace("{backend}", backend).replace("{prelude}", prelude))
    return script


def word_changes(path: Path) -> collections.Counter:
    return changes(read_jsonlines_output(path, allow_torn=True), ["word", "count"])


def test_a_missing_input_root_is_an_error_in_static_mode_naming_it(tmp_path: Path, python_env) -> None:
    script = word_count_script(tmp_path, "static.py", mode="static", output="out.jsonlines")
    proc = run_program(script, tmp_path, python_env)
    assert proc.returncode != 0, f"a static read of a missing folder succeeded: {describe(proc)}"
    assert f"{tmp_path / 'inputs'} does not exist" in proc.stderr or "inputs/ does not exist" in proc.stderr, (
        f"the error does not name the missing path: {describe(proc)}"
    )
    assert not read_jsonlines_output(tmp_path / "out.jsonlines"), "output was written"
    assert not (tmp_path / "state" / "commits").exists() or not list((tmp_path / "state" / "commits").iterdir())


def test_a_missing_input_root_in_streaming_mode_retracts_nothing_and_comes_back(
    tmp_path: Path, python_env, programs,
) -> None:
    inputs, moved = tmp_path / "inputs", tmp_path / "moved"
    write_file(inputs / "a.csv", "word\nant\nbee\nant\n")
    first = word_counts(inputs)
    script = word_count_script(tmp_path, "streaming.py", mode="streaming", output="out.jsonlines")
    run = programs(script, tmp_path, python_env)
    out = tmp_path / "out.jsonlines"
    run.wait_until(lambda: word_changes(out) == snapshot_diff(collections.Counter(), first), 180, "a.csv counted")
    inputs.rename(moved)  # an unmounted disk, a folder moved away
    run.wait_until(lambda: "does not exist" in run.stderr_text(), 60, "the warning about the missing folder")
    time.sleep(3)  # several more looks at the missing folder
    assert word_changes(out) == snapshot_diff(collections.Counter(), first), (
        f"changes while the folder was missing: {sorted(word_changes(out).elements())}"
    )
    warning = next(line for line in run.stderr_text().splitlines() if "does not exist" in line)
    assert "inputs" in warning and "WARNING" in warning, warning
    moved.rename(inputs)
    write_file(inputs / "b.csv", "word\nbee\ncat\n")
    expected = snapshot_diff(collections.Counter(), first) + snapshot_diff(first, word_counts(inputs))
    run.wait_until(lambda: word_changes(out) == expected, 120, "b.csv counted, a.csv neither retracted nor read again")
    assert run.terminate() == 0, describe(run)
    assert word_changes(out) == expected


# -------------------------------------------------------- (d) a paused S3 lease holder

#: the program's lease lasts 6 s instead of 30 (renewed every 2 s), so that the test
#: waits little for it to expire
SHORT_LEASE = '''
from sparkway.persistence import metadata
metadata.MetadataLog.__init__.__defaults__ = (6.0,)
'''
LEASE_TTL_S = 6.0


def test_a_paused_s3_lease_holder_is_refused_then_taken_over_and_writes_nothing_once_resumed(
    tmp_path: Path, python_env, programs, s3_bucket,
) -> None:
    inputs = tmp_path / "inputs"
    write_file(inputs / "a.csv", "word\nant\nbee\nant\n")
    first_counts = word_counts(inputs)
    backend = s3_backend(s3_bucket, "state")
    first_script = word_count_script(tmp_path, "first.py", mode="streaming", output="first.jsonlines",
                                     backend=backend, prelude=SHORT_LEASE)
    second_script = word_count_script(tmp_path, "second.py", mode="streaming", output="second.jsonlines",
                                      backend=backend, prelude=SHORT_LEASE)
    first = programs(first_script, tmp_path, python_env, "first")
    first.wait_until(lambda: word_changes(tmp_path / "first.jsonlines") == snapshot_diff(collections.Counter(), first_counts),
                     180, "the first program's output")
    # its sink is written before the step's commit: paused in between, the second program
    # would rightly do the step again, so pause it once the step is committed (logged after)
    first.wait_until(lambda: "Step 1 (" in first.stderr_text(), 60, "the first program to commit its step")
    os.killpg(first.pid, signal.SIGSTOP)  # a frozen machine: the driver, its JVM and workers
    paused_at = time.monotonic()
    try:
        first_output = (tmp_path / "first.jsonlines").read_bytes()

        # while the lease is fresh, a second program is refused at once, naming the holder
        refused = run_program(second_script, tmp_path, python_env, timeout=120)
        assert refused.returncode != 0 and "in use by process" in refused.stderr and str(first.pid) in refused.stderr, (
            f"the second program was not refused while the lease was fresh: {describe(refused)}"
        )
        assert time.monotonic() - paused_at < LEASE_TTL_S, "too slow: the lease may have expired meanwhile"

        # once it expired, the second program takes the storage over and continues the state
        time.sleep(max(0.0, LEASE_TTL_S + 2.5 - (time.monotonic() - paused_at)))
        second = programs(second_script, tmp_path, python_env, "second")
        second.wait_until(lambda: "Took over the persistence storage lease" in second.stderr_text(), 120,
                          "the take-over")
        write_file(inputs / "b.csv", "word\nbee\ncat\n")
        expected_second = snapshot_diff(first_counts, word_counts(inputs))
        second.wait_until(lambda: word_changes(tmp_path / "second.jsonlines") == expected_second, 180,
                          "the second program to count b.csv on the first one's state")
    finally:
        os.killpg(first.pid, signal.SIGCONT)

    # resumed, the first program sees b.csv too, but it lost the lease: it stops before it
    # logs or commits a step, and its sink gets nothing more
    try:
        code = first.proc.wait(120)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the resumed first program goes on: {describe(first)}") from None
    assert code != 0 and "lost the lease" in first.stderr_text(), f"the resumed holder did not stop: {describe(first)}"
    assert (tmp_path / "first.jsonlines").read_bytes() == first_output, "the resumed first program wrote output"
    assert second.poll() is None, f"the second program stopped: {describe(second)}"
    before = word_counts(inputs)
    write_file(inputs / "c.csv", "word\ncat\ndog\n")
    expected_second += snapshot_diff(before, word_counts(inputs))
    second.wait_until(lambda: word_changes(tmp_path / "second.jsonlines") == expected_second, 120,
                      "the second program to count c.csv")
    assert second.terminate() == 0, describe(second)


# ------------------------------------------------------------------ (e) a full disk




def test_a_full_disk_stops_the_run_naming_the_file_and_the_next_run_continues(
    tmp_path: Path, python_env, small_disk: Path,
) -> None:
    rng = random.Random(7)
    write_file(tmp_path / "inputs" / "a.csv", "word\nant\nbee\n")
    # rows that do not compress: a few MB of stored rows and state, more than the disk holds
    write_file(tmp_path / "inputs" / "b.csv", "word\n" + "".join(f"{rng.getrandbits(120):x}\n" for _ in range(60_000)))
    backend = f'pw.persistence.Backend.filesystem({str(small_disk / "state")!r})'
    script = word_count_script(tmp_path, "program.py", mode="static", output="out.jsonlines", backend=backend)
    env = {**python_env, "SPARKWAY_STATE_CACHE": str(tmp_path / "cache")}
    proc = run_program(script, tmp_path, env)
    assert proc.returncode != 0, f"the run did not stop on a full disk: {describe(proc)}"
    errors = [line for line in proc.stderr.splitlines() if "no space left to write" in line]
    assert errors and str(small_disk / "state") in errors[0], (
        f"no error naming the file that could not be written: {describe(proc)}"
    )
    assert "PersistenceError" in proc.stderr, describe(proc)
    assert not leftover_temporary_files(small_disk), f"temporary files left: {leftover_temporary_files(small_disk)}"
    assert not list((small_disk / "state").glob("commits/*")), "a step was committed on a full disk"

    # space freed (the disk grown): the next run does the step again, from the start
    subprocess.run(["mount", "-o", "remount,size=256m", str(small_disk)], check=True)
    proc = run_program(script, tmp_path, env)
    check_ok(proc)
    assert word_changes(tmp_path / "out.jsonlines") == snapshot_diff(collections.Counter(), word_counts(tmp_path / "inputs"))


# ------------------------------------------------------------------ (f) scratch folders of a killed run


SCRATCH_PROGRAM = '''
import sparkway as pw


class Words(pw.Schema):
    word: str


words = pw.io.csv.read("inputs/", schema=Words, mode={mode})
counts = words.groupby(words.word).reduce(words.word, count=pw.reducers.count())
pw.io.jsonlines.write(counts, {output})
pw.run()
'''


def test_the_scratch_folders_of_a_killed_run_are_removed_by_the_next_run(tmp_path: Path, python_env, programs) -> None:
    from sparkway.persistence.scratch import GRACE_S, LOCK

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**python_env, "TMPDIR": str(scratch)}
    write_file(tmp_path / "inputs" / "a.csv", "word\nant\nbee\nant\n")
    streaming = write_script(tmp_path, "streaming.py", SCRATCH_PROGRAM, mode="streaming", output="first.jsonlines")
    first = programs(streaming, tmp_path, env)
    first.wait_until(lambda: word_changes(tmp_path / "first.jsonlines") == snapshot_diff(collections.Counter(), word_counts(tmp_path / "inputs")),
                     180, "the first program's output")
    first.crash()  # SIGKILL: the program cannot remove its state and step inputs
    record_kills("scratch")
    left = sorted(p for p in scratch.iterdir() if (p / LOCK).exists())
    assert any(p.name.startswith("sparkway-state-") for p in left), f"no scratch state of the killed run: {left}"
    spark_files = [c.name for p in left if p.name.startswith("sparkway-spark-") for c in p.iterdir()]
    assert any(name.startswith("blockmgr-") for name in spark_files), f"the JVM's files are elsewhere: {left}"
    then = time.time() - 2 * GRACE_S  # as if it had been killed a while ago
    for folder in left:
        os.utime(folder / LOCK, (then, then))

    static = write_script(tmp_path, "static.py", SCRATCH_PROGRAM, mode="static", output="second.jsonlines")
    check_ok(run_program(static, tmp_path, env))

    assert not [p for p in left if p.exists()], "the killed run's scratch folders were left"
    deadline = time.monotonic() + 30  # the second run's JVM deletes its folder as it exits, after the program
    while [p for p in scratch.iterdir() if p.name.startswith("sparkway-")] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p.name for p in scratch.iterdir()], "the second run left temporary files"
