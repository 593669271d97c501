"""Task retries, speculative attempts and lost executors never change a result (issue 35).

A step is a pure function of (the state at its base, its input): a retried task rolls
its state partitions back to their base and gives the same output, and so does a second
attempt running at the same time.  Faults are injected in Spark tasks with
``SPARKWAY_TASK_FAULT`` (``sparkway/persistence/faults.py``), which also records, in a
counter file, every task attempt that reached a watched point and in which process.

(a) ``test_a_task_failing_once_in_each_stateful_kernel_changes_nothing``: on
    ``local-cluster[2,1,1024]`` with ``spark.task.maxFailures=4``, a program with every
    kind of stateful kernel (reduce, accumulated reduce, join, session window and its
    reduce, deduplicate, sort, two time gates, stream_to_table, update_rows) over a dozen
    steps of debug input; each operator's task fails once right after that operator
    switched its state to the step (``LATEST`` written: the retry must start from the
    base, not from the version the failed attempt wrote), one operator per step.  The run
    ends by itself, and its outputs are a clean run's, line for line.
(b) ``test_a_lost_executor_in_a_large_step_changes_nothing``: an executor's JVM SIGKILLed
    in a large step (220,000 rows through a groupby and a join, chunked on the
    executors): with persistence, right after a state partition committed (Spark runs the
    executor's tasks, and the map outputs it held, again on the other one, and the master
    starts another executor), then a rerun with new input; and without persistence, as a kernel's task
    starts while the other executor is in the middle of its own.  No run restarts, and
    every output is the batch result computed here in plain Python (the rerun: only the
    changes).
(c) ``test_a_speculative_copy_changes_nothing``: Spark's speculation, made aggressive,
    with two kernel tasks made slow: one as it starts (it wakes to find the state moved
    on, when its rows come), one after it wrote its runs (it has begun and computed, and
    reaches its commit after later steps committed theirs).  Both attempts of each run,
    one wins, and the loser is not stopped while it sleeps:
    ``spark.python.task.killTimeout`` is raised (by default Spark kills a losing
    attempt's Python worker 2 to 4 s after the winner ends, which narrows the window
    without closing it: a small step takes less).  The outputs are a clean run's, line for line, and no partition's
    ``LATEST`` is switched by a step after a later step switched it: a late attempt stops
    without writing (``state/versions.py``, ``LateAttempt``).  Before that check, a
    loser set an arrangement's ``LATEST`` back and the outputs were wrong from there on.

    Spark never launches a speculative copy on a host where an attempt of the task runs
    already (``TaskSetManager``'s ``hasAttemptOnHost``), and every executor of
    ``local-cluster`` has the same host.  So this test runs on a standalone cluster
    (``tests/services/standalone.py``) whose two workers bind 127.0.0.1 and 127.0.0.2
    (Linux routes all of 127/8 to the loopback device): two hosts to Spark's scheduler.
    A stage of one task (a small step's) is speculated only past
    ``spark.speculation.task.duration.threshold``, which is set too.

The tests share one program for (a) and (c), and one clean run of it.  Each lost executor
is counted in the terminal summary ("executor SIGKILLs", ``helpers.EXECUTOR_KILLS``).
"""

from __future__ import annotations

import collections
import json
import os
import socket
import sys
from pathlib import Path

import pytest

from .helpers import (
    EXECUTOR_KILLS, check_ok, describe, read_jsonlines_output, record_kills, run_program, snapshot_diff, write_file,
    write_script,
)

pytestmark = [pytest.mark.subprocess, pytest.mark.cluster]

ROOT = Path(__file__).resolve().parents[2]
MASTER = "local-cluster[2,1,1024]"
#: Spark's default on a cluster; sparkway's local mode makes no retry
RETRIES = {"spark.task.maxFailures": "4"}

# ---------------------------------------------------------------- the program of (a), (c)

KERNELS_PROGRAM = '''
import random

import sparkway as pw

STEPS = {steps}


def markdown(header, rows):
    return "\\n".join([" | ".join(header), *(" | ".join(str(v) for v in row) for row in rows)])


# three events a step (times 2, 4, ...), one of them retracted every third step; labels
# and patches changing now and then
rng = random.Random(5)
events, held = [], []
for step in range(1, STEPS + 1):
    for _ in range(3):
        row = (rng.choice("uvw"), rng.randint(2 * step - 4, 2 * step + 6), rng.randint(1, 9))
        held.append(row)
        events.append((*row, 2 * step, 1))
    if step % 3 == 0:
        events.append((*held.pop(rng.randrange(len(held))), 2 * step, -1))
labels = [("u", "red", 2, 1), ("v", "blue", 4, 1), ("w", "green", 6, 1), ("u", "red", 8, -1), ("u", "pink", 8, 1),
          ("v", "blue", 12, -1), ("v", "navy", 12, 1)]
patches, current = [], {}
for step in range(2, STEPS + 1, 2):
    k = rng.randint(1, 4)
    if k in current:
        patches.append((k, current[k], 2 * step, -1))
    current[k] = rng.randint(10, 99)
    patches.append((k, current[k], 2 * step, 1))

events = pw.debug.table_from_markdown(markdown(["user", "t", "v", "__time__", "__diff__"], events))
labels = pw.debug.table_from_markdown(markdown(["user", "label", "__time__", "__diff__"], labels))
base = pw.debug.table_from_markdown(markdown(["k", "v"], [(k, k) for k in range(1, 5)])).with_id_from(pw.this.k)
patch = pw.debug.table_from_markdown(markdown(["k", "v", "__time__", "__diff__"], patches)).with_id_from(pw.this.k)


def write(table, name):
    pw.io.jsonlines.write(table, f"out/{name}.jsonlines")


per_user = events.groupby(events.user).reduce(
    events.user, n=pw.reducers.count(), lo=pw.reducers.min(events.t), hi=pw.reducers.max(events.t))
write(per_user, "reduce")
write(events.groupby(events.user).reduce(events.user, n=pw.reducers.count(), total=pw.reducers.sum(events.v)),
      "accumulated")
write(per_user.join(labels, per_user.user == labels.user).select(per_user.user, labels.label, per_user.hi), "join")
sessions = events.windowby(events.t, window=pw.temporal.session(max_gap=3), instance=events.user).reduce(
    user=pw.this._pw_instance, start=pw.reducers.min(pw.this.t), end=pw.reducers.max(pw.this.t),
    n=pw.reducers.count())
write(sessions, "sessions")
# any other value is accepted, so that the state changes, and commits, at most steps (where
# the test of retries can fail its task)
write(events.deduplicate(value=events.v, instance=events.user, acceptor=lambda new, old: new != old), "deduplicate")
write(events.sort(key=events.t, instance=events.user), "sort")
write(events.forget(events.t, 5), "forget")
write(events.ignore_late(events.t, 5), "ignore_late")
stream = events.select(events.user, events.v).to_stream()
write(stream.stream_to_table(pw.this.is_upsert).without(pw.this.is_upsert), "stream_to_table")
write(base.update_rows(patch), "update_rows")
pw.run()
'''
STEPS = 12
#: the kinds of the program's stateful operators (their names: ``<number>-<kind>``)
KERNEL_KINDS = {"reduce", "join", "sessionwindow", "deduplicate", "sort", "timegate", "streamtotable", "keyedmerge"}


def base_env() -> dict[str, str]:
    """As conftest's ``python_env`` (module fixtures cannot use it), with no fault variable
    inherited from the test's own environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARKWAY_FAULT_") and k != "SPARKWAY_TASK_FAULT"}
    path = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    return {**env, "PYTHONPATH": path, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}


def on_cluster(env: dict[str, str], master: str = MASTER, **conf: str) -> dict[str, str]:
    """``env`` for a program on ``master``, with Spark's retries and settings ``conf``."""
    return {**env, "SPARKWAY_SPARK_MASTER": master, "SPARKWAY_SPARK_CONF": json.dumps({**RETRIES, **conf})}


def with_fault(env: dict[str, str], fault: str, counter: Path) -> dict[str, str]:
    """``env`` with the task fault(s) ``fault``, counted in ``counter``."""
    return {**env, "SPARKWAY_TASK_FAULT": fault, "SPARKWAY_FAULT_COUNTER": str(counter)}


def run_kernels_program(folder: Path, env: dict[str, str]) -> dict[str, list[bytes]]:
    """Runs the program of (a) and (c) in ``folder``; its outputs, each as sorted lines
    (the rows of a step may come in another order: their times are the debug input's)."""
    (folder / "out").mkdir(parents=True)
    proc = run_program(write_script(folder, "kernels.py", KERNELS_PROGRAM, steps=STEPS), folder, env)
    check_ok(proc)
    return {path.name: sorted(path.read_bytes().splitlines()) for path in sorted((folder / "out").iterdir())}


@pytest.fixture(scope="module")
def clean_outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[bytes]]:
    outputs = run_kernels_program(tmp_path_factory.mktemp("clean"), on_cluster(base_env()))
    assert len(outputs) == 10 and all(outputs.values()), {name: len(lines) for name, lines in outputs.items()}
    return outputs


def assert_same_outputs(got: dict[str, list[bytes]], clean: dict[str, list[bytes]], context: str) -> None:
    """Every output file holds the clean run's lines, byte for byte (in any order)."""
    assert got.keys() == clean.keys(), context
    for name, lines in clean.items():
        missing = collections.Counter(lines) - collections.Counter(got[name])
        extra = collections.Counter(got[name]) - collections.Counter(lines)
        assert not missing and not extra, (
            f"{name} differs from the clean run's: missing {sorted(missing.elements())[:10]}, "
            f"extra {sorted(extra.elements())[:10]}; {context}"
        )


# ------------------------------------------------------------------- the counter's lines


def reached(counter: Path) -> list[dict[str, str]]:
    """The counter file's task lines: ``point``, ``pid``, ``task`` (stage:partition),
    ``op``, ``attempt``, ``action``."""
    lines = counter.read_text().splitlines() if counter.exists() else []
    out = []
    for line in lines:
        point, pid, *fields = line.split(" ")
        if len(fields) == 4:  # not a driver fault's line (``<point> <pid>``)
            out.append({"point": point, "pid": pid, **dict(f.split("=", 1) for f in fields)})
    return out


def acted(lines: list[dict[str, str]]) -> list[dict[str, str]]:
    """The lines of the times a fault acted."""
    return [line for line in lines if line["action"] != "none"]


def summary(lines: list[dict[str, str]]) -> str:
    """The last lines, for assertion messages."""
    return "\n".join(" ".join(line.values()) for line in lines[-60:])


# ----------------------------------------------------------------------------------- (a)


def test_a_task_failing_once_in_each_stateful_kernel_changes_nothing(
    tmp_path: Path, clean_outputs: dict[str, list[bytes]],
) -> None:
    counter = tmp_path / "fault.count"
    fault = "state.latest.written:each:fail,arrangement.latest.written:each:fail"
    outputs = run_kernels_program(tmp_path / "faulty", with_fault(on_cluster(base_env()), fault, counter))
    lines = reached(counter)
    context = f"the counter's lines (tail):\n{summary(lines)}"

    failed = acted(lines)
    operators = {line["op"] for line in lines}
    # every stateful operator committed its state, and failed once right after
    assert {op.split("-", 1)[1] for op in operators} == KERNEL_KINDS, context
    assert sorted(line["op"] for line in failed) == sorted(operators), f"not every operator failed once; {context}"
    assert all(line["action"] == "fail" for line in failed), context
    # ... each in a task of its own, which failed that once and then passed the same point
    assert len({line["task"] for line in failed}) == len(failed), context
    for line in failed:
        retried = [later for later in lines if later["task"] == line["task"] and later["op"] == line["op"]
                   and int(later["attempt"]) > int(line["attempt"])]
        assert retried and all(r["action"] == "none" for r in retried), f"{line} was not retried; {context}"
    assert_same_outputs(outputs, clean_outputs, context)


# ----------------------------------------------------------------------------------- (b)

LARGE_PROGRAM = '''
import os

import sparkway as pw


class Words(pw.Schema):
    word: str
    n: int


class Labels(pw.Schema):
    word: str
    label: str


words = pw.io.csv.read("words/", schema=Words, mode="static", name="words")
labels = pw.io.csv.read("labels/", schema=Labels, mode="static", name="labels")
counts = words.groupby(words.word).reduce(
    words.word, count=pw.reducers.count(), total=pw.reducers.sum(words.n), top=pw.reducers.max(words.n))
joined = counts.join(labels, counts.word == labels.word).select(
    counts.word, labels.label, counts.count, counts.total, counts.top)
tag = os.environ["RUN_TAG"]
pw.io.jsonlines.write(counts, f"counts-{tag}.jsonlines")
pw.io.jsonlines.write(joined, f"joined-{tag}.jsonlines")
persistent = os.environ.get("PERSISTENT") == "1"
pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem("./state/")) if persistent else None)
'''
LARGE_ROWS = 220_000  # a large step: at least runner.LARGE_STEP_ROWS (200,000) rows


def write_batch(root: Path, name: str, rows: int, seed: int) -> None:
    """``words/<name>.csv`` (``rows`` words of 40,000, with numbers) and
    ``labels/<name>.csv`` (a label for one word in ten)."""
    import random

    rng = random.Random(seed)
    lines = "".join(f"w{rng.randrange(40_000)},{rng.randint(1, 99)}\n" for _ in range(rows))
    write_file(root / "words" / f"{name}.csv", "word,n\n" + lines)
    labelled = rng.sample(range(40_000), 4_000)
    write_file(root / "labels" / f"{name}.csv", "word,label\n" + "".join(f"w{w},{name}{w % 7}\n" for w in labelled))


def batch_results(root: Path) -> tuple[collections.Counter, collections.Counter]:
    """Batch ``counts`` (word, count, total, top) and ``joined`` (word, label, count,
    total, top) over every input file, in plain Python."""
    import csv

    stats: dict[str, list[int]] = {}
    for path in sorted((root / "words").glob("*.csv")):
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                n = int(row["n"])
                held = stats.setdefault(row["word"], [0, 0, n])
                held[0], held[1], held[2] = held[0] + 1, held[1] + n, max(held[2], n)
    counts = collections.Counter((word, *s) for word, s in stats.items())
    joined: collections.Counter = collections.Counter()
    for path in sorted((root / "labels").glob("*.csv")):
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if row["word"] in stats:
                    joined[(row["word"], row["label"], *stats[row["word"]])] += 1
    return counts, joined


def large_outputs(folder: Path, tag: str) -> tuple[collections.Counter, collections.Counter]:
    """(counts, joined) of run ``tag`` as multisets of (values..., diff), with the run's
    single time checked."""
    out = []
    for name, columns in (("counts", ["word", "count", "total", "top"]),
                          ("joined", ["word", "label", "count", "total", "top"])):
        rows = read_jsonlines_output(folder / f"{name}-{tag}.jsonlines")
        assert len({r["time"] for r in rows}) <= 1, f"{name}-{tag}: the rows of one step have several times"
        out.append(collections.Counter(tuple(r[c] for c in columns) + (r["diff"],) for r in rows))
    return out[0], out[1]


def check_lost_executor(counter: Path, point: str) -> str:
    """The kill happened at ``point``, the executor's JVM is gone, and a task of another
    process passed the point after it.  Returns a description, for messages."""
    lines = reached(counter)
    context = f"the counter's lines (tail):\n{summary(lines)}"
    kills = acted(lines)
    assert [k["point"] for k in kills] == [point] and kills[0]["action"].startswith("kill-executor:"), context
    record_kills(EXECUTOR_KILLS)
    jvm = int(kills[0]["action"].split(":")[1])
    assert not running(jvm), f"the executor's JVM {jvm} is still there; {context}"
    after = lines[lines.index(kills[0]) + 1:]
    assert any(line["pid"] != kills[0]["pid"] for line in after), f"no task went on after the kill; {context}"
    return context


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and has not ended (a zombie waiting to be reaped
    has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def test_a_lost_executor_in_a_large_step_changes_nothing(tmp_path: Path, python_env: dict[str, str]) -> None:
    from sparkway.engine.runner import LARGE_STEP_ROWS

    assert LARGE_ROWS >= LARGE_STEP_ROWS, "the first step would not be a large one"
    write_batch(tmp_path, "a", LARGE_ROWS, seed=1)
    script = write_script(tmp_path, "large.py", LARGE_PROGRAM)
    env = {**on_cluster(python_env), "SPARKWAY_STATE_CACHE": str(tmp_path / "cache")}
    counts, joined = batch_results(tmp_path)

    # with persistence: the executor dies right after a partition of the groupby committed
    counter = tmp_path / "persistent.count"
    point = "arrangement.latest.written"
    first = run_program(script, tmp_path, {**with_fault(env, f"{point}:1:kill-executor", counter),
                                           "RUN_TAG": "first", "PERSISTENT": "1"})
    check_ok(first)
    context = check_lost_executor(counter, point)
    got = large_outputs(tmp_path, "first")
    expected = (snapshot_diff(collections.Counter(), counts), snapshot_diff(collections.Counter(), joined))
    assert got == expected, f"the first run's outputs are not the batch result; {describe(first)}\n{context}"

    # a rerun with new input outputs the changes only
    write_batch(tmp_path, "b", 3_000, seed=2)
    new_counts, new_joined = batch_results(tmp_path)
    second = run_program(script, tmp_path, {**env, "RUN_TAG": "second", "PERSISTENT": "1"})
    check_ok(second)
    changed = (snapshot_diff(counts, new_counts), snapshot_diff(joined, new_joined))
    assert large_outputs(tmp_path, "second") == changed, (
        f"the rerun's outputs are not the changes of the batch result; {describe(second)}"
    )
    leftovers = [p for p in (tmp_path / "state").rglob("*") if ".tmp-" in p.name]
    assert not leftovers, f"temporary files left in the storage: {leftovers}"

    # without persistence: an executor dies as a kernel's task starts, the other
    # executor's task being in the middle of its chunks
    counter = tmp_path / "scratch.count"
    third = run_program(script, tmp_path, {**with_fault(env, "kernel.started:2:kill-executor", counter),
                                           "RUN_TAG": "third"})
    check_ok(third)
    context = check_lost_executor(counter, "kernel.started")
    assert large_outputs(tmp_path, "third") == (
        snapshot_diff(collections.Counter(), new_counts), snapshot_diff(collections.Counter(), new_joined)
    ), f"the outputs without persistence are not the batch result; {describe(third)}\n{context}"


# ----------------------------------------------------------------------------------- (c)

#: hosts of the two workers: two to Spark's scheduler, one machine
HOSTS = ("127.0.0.1", "127.0.0.2")
SPECULATION = {
    "spark.speculation": "true",
    "spark.speculation.interval": "100ms",
    "spark.speculation.multiplier": "1",
    "spark.speculation.quantile": "0.01",
    "spark.speculation.minTaskRuntime": "100ms",
    # a stage of one task (a small step's) is copied once it runs longer than this
    "spark.speculation.task.duration.threshold": "1s",
    # a slow task reads little: Spark's measure of its efficiency would not tell it apart
    "spark.speculation.efficiency.enabled": "false",
    # the losing attempt is not stopped while it sleeps in its kernel (by default Spark
    # kills its Python worker 2 to 4 s after the other attempt won)
    "spark.python.task.killTimeout": "120s",
}
#: two kernel tasks made slow while a copy of each runs on the other host: the 20th to
#: start (about step 2: it wakes to find the state moved on, when it gets its rows), and
#: the 60th partition to write its runs (about step 5: it has begun, computed and written
#: its runs, and wakes to commit after later steps did).  Each sleeps long enough for a
#: few more steps to commit.  Every switch of an arrangement's ``LATEST`` is recorded.
SLOW_FAULTS = "kernel.started:20:slow=6,arrangement.runs.written:60:slow=6,arrangement.latest.written:each:record"


@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory: pytest.TempPathFactory):
    """A standalone cluster whose workers are on two loopback addresses."""
    from services.standalone import StandaloneCluster

    with socket.socket() as s:
        try:
            s.bind((HOSTS[1], 0))
        except OSError as error:
            pytest.skip(f"{HOSTS[1]} is not a loopback address here ({error}): no second host for speculation")
    cluster = StandaloneCluster(tmp_path_factory.mktemp("two-hosts"), hosts=HOSTS)
    yield cluster
    cluster.stop()


def test_a_speculative_copy_changes_nothing(
    tmp_path: Path, clean_outputs: dict[str, list[bytes]], two_hosts,
) -> None:
    counter = tmp_path / "fault.count"
    # the workers start executors without this test's environment: what they need is passed on
    executors = {"spark.executorEnv.PYTHONPATH": str(ROOT), "spark.executorEnv.SPARKWAY_TASK_FAULT": SLOW_FAULTS,
                 "spark.executorEnv.SPARKWAY_FAULT_COUNTER": str(counter)}
    env = with_fault(on_cluster(base_env(), two_hosts.url, **SPECULATION, **executors), SLOW_FAULTS, counter)
    outputs = run_kernels_program(tmp_path / "speculated", env)
    lines = reached(counter)
    context = f"the counter's lines (tail):\n{summary(lines)}"

    slow = acted(lines)
    assert sorted((line["point"], line["action"]) for line in slow) == [
        ("arrangement.runs.written", "slow"), ("kernel.started", "slow")], context
    for line in slow:  # another attempt of the slowed task ran, in another process
        others = [o for o in lines if o["task"] == line["task"] and o["attempt"] != line["attempt"]]
        assert others and all(o["pid"] != line["pid"] for o in others), f"{line} was not speculated; {context}"
    # Spark ended attempts for their speculative copies (the executors' logs say so)
    logs = "".join((folder / "stderr").read_text(errors="replace") for folder in two_hosts.executor_folders())
    assert "reason: another attempt succeeded" in logs, "Spark never ended an attempt for a speculative copy"
    assert_no_late_latest(lines, context)
    assert_same_outputs(outputs, clean_outputs, context)


def assert_no_late_latest(lines: list[dict[str, str]], context: str) -> None:
    """No partition's ``LATEST`` is switched by a step after a later step switched it:
    the recorded switches of each operator come in the order of their steps' stages
    (a task is ``<stage>:<partition>``; a later step runs later stages)."""
    for op in {line["op"] for line in lines}:
        stages = [int(line["task"].split(":")[0]) for line in lines
                  if line["point"] == "arrangement.latest.written" and line["op"] == op]
        assert stages == sorted(stages), f"{op}: a late attempt switched LATEST back (stages {stages}); {context}"


# ----------------------------------------------------------------------------------- (d)

SINKS_PROGRAM = '''
import sparkway as pw
import sparkway.engine.runner as runner

# every step is large, its output in 8 pieces that Spark's tasks write (a task fails once at
# most: enough tasks for each sink to fail in one)
runner.LARGE_STEP_ROWS = 0
runner.collect_parts = lambda tables, partitions: 8


class Words(pw.Schema):
    word: str


words = pw.io.csv.read("words/", schema=Words, mode="static")
counts = words.groupby(words.word).reduce(words.word, count=pw.reducers.count())
pw.io.csv.write(counts, "out/counts.csv")
pw.io.jsonlines.write(counts, "out/counts.jsonlines")
pw.io.fs.write(counts, "out/parquet", format="parquet")
pw.io.deltalake.write(counts, "out/delta")
pw.io.deltalake.write(counts, "out/delta_by_count", partition_columns=[counts.count], name="by_count")
pw.io.iceberg.write(counts, pw.io.iceberg.SqlCatalog(uri="sqlite:///catalog.db", warehouse="warehouse"),
                    ["lake"], "counts")
pw.run()
'''
#: the sinks whose pieces Spark's tasks write, by the class of their ``PieceWriter``
PIECE_WRITERS = {"CsvLines", "JsonLines", "ParquetFiles", "DeltaDataFiles", "IcebergDataFiles"}
PARALLEL_SINKS = 6  # two Delta tables: one partitioned


def sink_rows(root: Path) -> dict[str, collections.Counter]:
    """Each sink's rows as a multiset of (word, count, diff), read without sparkway."""
    import csv

    import deltalake
    import pyarrow.parquet as pq
    from pyiceberg.catalog import load_catalog

    def counted(rows: list[dict]) -> collections.Counter:
        return collections.Counter((r["word"], int(r["count"]), int(r["diff"])) for r in rows)

    with open(root / "out" / "counts.csv", newline="") as f:
        csv_rows = list(csv.DictReader(f))
    catalog = load_catalog("default", type="sql", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse")
    return {
        "csv": counted(csv_rows),
        "jsonlines": counted(read_jsonlines_output(root / "out" / "counts.jsonlines")),
        "parquet": counted(pq.read_table(root / "out" / "parquet").to_pylist()),
        "delta": counted(deltalake.DeltaTable(str(root / "out" / "delta")).to_pyarrow_table().to_pylist()),
        "delta, partitioned": counted(
            deltalake.DeltaTable(str(root / "out" / "delta_by_count")).to_pyarrow_table().to_pylist()),
        "iceberg": counted(catalog.load_table("lake.counts").scan().to_arrow().to_pylist()),
    }


def test_a_task_failing_once_in_each_parallel_sink_changes_nothing(tmp_path: Path) -> None:
    """Each sink's task fails once after it did its piece's work (formatted its lines,
    wrote its files): Spark retries it, the driver takes the retry's piece only, and each
    sink holds every change once (a second attempt's files are never committed)."""
    pytest.importorskip("pyiceberg")
    pytest.importorskip("sqlalchemy")
    import random

    rng = random.Random(7)
    words = [f"w{rng.randrange(300)}" for _ in range(3_000)]
    write_file(tmp_path / "words" / "a.csv", "word\n" + "\n".join(words) + "\n")
    (tmp_path / "out").mkdir()
    counter = tmp_path / "fault.count"
    env = with_fault(on_cluster(base_env()), "sink.piece.written:each:fail", counter)
    proc = run_program(write_script(tmp_path, "sinks.py", SINKS_PROGRAM), tmp_path, env)
    check_ok(proc)

    lines = reached(counter)
    context = f"the counter's lines (tail):\n{summary(lines)}"
    failed = acted(lines)
    assert {line["op"].split("-", 1)[1] for line in failed} == PIECE_WRITERS, context
    assert len({line["op"] for line in failed}) == PARALLEL_SINKS, context
    assert all(line["action"] == "fail" for line in failed), context
    for line in failed:  # the same piece, done again by a later attempt of its task
        assert any(later["task"] == line["task"] and later["op"] == line["op"]
                   and int(later["attempt"]) > int(line["attempt"]) for later in lines), f"{line}; {context}"
    expected = collections.Counter((word, n, 1) for word, n in collections.Counter(words).items())
    for sink, rows in sink_rows(tmp_path).items():
        assert rows == expected, f"{sink}: {sorted((rows - expected).elements())[:5]} extra, " \
                                 f"{sorted((expected - rows).elements())[:5]} missing; {describe(proc)}"
    assert all(p.name.startswith("part-") for p in (tmp_path / "out" / "parquet").iterdir()), "staged files left"
