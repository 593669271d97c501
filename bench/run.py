"""sparkway benchmarks: one command, every measurement side by side, a markdown table on
stdout and in ``bench/results/<UTC>.md``, and the raw figures in ``bench/results/<UTC>.json``.

    .venv/bin/python bench/run.py            # full sizes (about an hour on 2 cores today)
    .venv/bin/python bench/run.py --quick    # small sizes, a smoke run (about 8 minutes)
    .venv/bin/python bench/run.py --only throughput --sizes 1000000 --pipelines count

Sections (``--only`` picks some, comma-separated):

- ``steps``: step cost vs state size.  One streaming sparkway process holds the
  sessions of a history of 50k (or 5M) log rows; the benchmark drops files of 1,000 new
  log lines of existing users into its input folder, one at a time, and times each
  engine step from inside the process (``Runner._run_step``: read the file, run the
  Spark job, update the state, write the output, commit).  Spark start-up and polling
  are not in it.  Both processes are built first (one at a time), then, both idle and
  waiting, they get steps in turn (small, large, small, ...), so that the rest of the
  machine's load weighs on both alike.  The first step of each is a warm-up; the median
  of the next ones counts.
- ``throughput``: for the sessions pipeline of the seeds and a groupby-count pipeline,
  at 1M and 10M rows of history: sparkway's first run (wall time, peak RSS of the
  process tree), a rerun without new input, a rerun with 0.1% new rows, the plain
  PySpark job (``bench/plain_spark.py``) recomputing the same result from the same
  files (wall time, peak RSS), a rerun without the local state cache, the persisted
  state against the input bytes, whether the outputs agree.  Every run is a fresh
  process, one at a time.
- ``hotkey``: groupby-count over a history plus one key holding 1M rows; in one
  streaming process, steps of 1,000 rows of that key and steps of 1,000 rows of cold
  keys, in turn, timed from inside the process as in ``steps``.
- ``w3``: an output-heavy stateless program (issue 35): web-server access logs of 1M and
  10M rows, half of them kept by a filter, three computed columns, one CSV file written
  (``bench/w3_job.py``), against the same job in plain PySpark (``bench/w3_plain.py``,
  ``df.write.csv``); runs of the two alternate, each a fresh process: wall time, peak RSS
  of the process tree, the driver process's own peak RSS, the rows written.
- ``--huge`` (not part of the default run): a first run of each pipeline over 100M rows
  generated in ``bench/data`` and deleted afterwards.

The plain PySpark baselines run with Spark's default JVM settings and sparkway's driver
memory; ``--tuned-baseline`` adds a run of each with sparkway's JVM options, reported
beside the default one (the targets compare with the default one).

The results end with the targets of issues 10, 11 and 35, each with the measured value
and whether it is met.  See bench/README.md for what each number means.
"""

from __future__ import annotations

import argparse
import compileall
import datetime as _dt
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import gen  # noqa: E402
import machine  # noqa: E402
from plain_spark import TUNED_JVM_OPTIONS  # noqa: E402

PYTHON = sys.executable
DATA = os.path.join(HERE, "data")  # --work
RESULTS = os.path.join(HERE, "results")  # --results
ROWS_PER_USER = 50
SECTIONS = ("steps", "throughput", "hotkey", "w3")

FULL = {
    "step_sizes": [50_000, 5_000_000],
    "step_rows": 1_000,
    "steps": 7,
    "sizes": [1_000_000, 10_000_000],
    "pipelines": ["sessions", "count"],
    "hot_rows": 1_000_000,
    "hot_cold_rows": 100_000,  # 2,000 cold keys: a cold step touches 1,000 of them
    "huge_rows": 100_000_000,
    "w3_sizes": [1_000_000, 10_000_000],
    "w3_runs": 3,  # of each system, alternating
}
QUICK = {
    **FULL,
    "step_sizes": [50_000, 250_000],  # at least 1,000 users each: a step touches 1,000 users in both
    "steps": 3,
    "sizes": [20_000, 100_000],
    "hot_rows": 20_000,
    "hot_cold_rows": 60_000,
    "huge_rows": 300_000,
    "w3_sizes": [20_000, 100_000],
    "w3_runs": 2,
}

# issue 10's targets: the measured ratio must be at most this
TARGETS = {
    "first_over_plain": 1.5,
    "memory_over_plain": 1.3,
    "rerun_growth": 1.2,
    "rerun_over_plain": 0.25,
    "state_over_input": 2.0,
    "hot_over_cold": 1.2,
    # issue 35, W3 (output-heavy, stateless)
    "w3_time_over_plain": 1.2,
    "w3_memory_over_plain": 1.3,
    "w3_driver_growth": 1.1,  # the driver's peak RSS at the largest size over the smallest's
}

#: issue 11: a fresh process's rerun takes at most Spark's start-up and this many seconds
FRESH_PROCESS_OVER_SPARK_START_S = 1.5

# what each pipeline outputs, to compare sparkway's update stream with the plain job's rows
OUTPUT_COLUMNS = {
    "sessions": ["user_id", "session_start", "session_finish", "count"],
    "count": ["user_id", "count"],
}


def say(text: str = "") -> None:
    print(text, flush=True)


DRIVER_MEMORY: str | None = None  # --driver-memory: sparkway's SPARKWAY_DRIVER_MEMORY


def plain_driver_memory() -> str:
    """The plain jobs' driver memory: sparkway's (``--driver-memory``, else
    ``$SPARKWAY_DRIVER_MEMORY``, else its default, 4g), so that both get the same heap."""
    return DRIVER_MEMORY or os.environ.get("SPARKWAY_DRIVER_MEMORY") or "4g"


def child_env(cache: str) -> dict[str, str]:
    env = dict(os.environ)
    if DRIVER_MEMORY:
        env["SPARKWAY_DRIVER_MEMORY"] = DRIVER_MEMORY
    env["PYTHONPATH"] = os.pathsep.join(p for p in [ROOT, env.get("PYTHONPATH", "")] if p)
    env["PYSPARK_PYTHON"] = PYTHON
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env["SPARKWAY_STATE_CACHE"] = cache  # working copies of the state, per benchmark case
    env["SPARKWAY_DAEMON"] = "0"  # each run is a process with a Spark of its own, as the baselines are
    return env


def read_probe(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.endswith("\n")]


def kill_tree(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the process group we started (start_new_session)
    except ProcessLookupError:
        pass
    proc.wait()


def failure_reason(log: str) -> str | None:
    """The line of a failed run's log that says why: the last line naming a lack of memory
    or disk, else the last error or exception."""
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f.readlines()[-400:] if line.strip()]
    except OSError:
        return None
    for words in (("OutOfMemoryError", "MemoryError", "No space left", "Cannot allocate memory"),
                  ("Error", "Exception", "Traceback")):
        found = [line for line in lines if any(w in line for w in words)]
        if found:
            return found[-1][:400]
    return lines[-1][:400] if lines else None


def timed(argv: list[str], *, cwd: str, env: dict, timeout: float, log: str, quiet_wait: float) -> dict:
    """Runs one fresh process, times it and samples its process tree; never raises on
    failure or timeout."""
    busy_before = machine.wait_quiet(quiet_wait, log=say)
    os.sync()  # the run before's writes (a first run's state: 1.4 GB at 10M rows) are not this run's
    with open(log, "w", encoding="utf-8") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        monitor = machine.Monitor()
        monitor.start(proc.pid)
        status, error = "ok", None
        try:
            rc = proc.wait(timeout=timeout)
            if rc != 0:
                how = f"killed by signal {-rc}" if rc < 0 else f"exit {rc}"
                if rc == -signal.SIGKILL:
                    how += " (the kernel's out-of-memory killer, unless something else killed it)"
                status = f"failed ({how}; see {os.path.relpath(log, ROOT)})"
                error = failure_reason(log)
        except subprocess.TimeoutExpired:
            kill_tree(proc)
            status = f"timeout after {timeout:.0f} s (killed)"
        seconds = time.perf_counter() - started
        load = monitor.stop()
    run = {"status": status, "seconds": round(seconds, 2), "others_cores_before": None if busy_before is None else round(busy_before, 2), **load}
    if error:
        run["error"] = error
    return run


def job_argv(pipeline: str, logs: str, storage: str, out: str, probe: str, mode: str = "static") -> list[str]:
    """The command line of a sparkway run of ``pipeline`` (bench/sparkway_job.py)."""
    return [PYTHON, os.path.join(HERE, "sparkway_job.py"), "--pipeline", pipeline, "--logs", logs,
            "--storage", storage, "--out", out, "--probe", probe, "--mode", mode]


def phases(probe: str) -> dict:
    """The probe records of one run, summed up: start-up, restore, steps."""
    records = read_probe(probe)
    out: dict = {}
    for r in records:
        if r["kind"] == "start":
            out["python_imports_s"] = round(r["seconds"], 2)
        elif r["kind"] == "get_spark":
            out["spark_start_s"] = round(r["seconds"], 2)
        elif r["kind"] == "open":
            out["restore_s"] = round(r["seconds"], 2)
        elif r["kind"] == "step":
            out.setdefault("steps", []).append({k: (round(v, 3) if isinstance(v, float) else v)
                                               for k, v in r.items() if k not in ("kind", "at")})
    return out


def snapshot_versions(storage: str) -> dict[str, list[int]]:
    """Per state partition, the steps whose commit wrote a full snapshot (still kept)."""
    found = {}
    operators = os.path.join(storage, "operators")
    if not os.path.isdir(operators):
        return found
    for op in sorted(os.listdir(operators)):
        for part in sorted(os.listdir(os.path.join(operators, op))):
            folder = os.path.join(operators, op, part, "snapshot")
            if os.path.isdir(folder):
                found[f"{op}/{part}"] = sorted(int(n.split(".")[0]) for n in os.listdir(folder))
    return found


def du(path: str) -> int:
    """Bytes of the file ``path``, or of the files under it (0 if it does not exist)."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for folder, _, names in os.walk(path):
        for name in names:
            try:
                total += os.path.getsize(os.path.join(folder, name))
            except OSError:
                pass
    return total


def persisted(storage: str) -> dict:
    """What a persistence folder holds: the operators' state (the figure issue 10's
    target is about), the whole folder, and each top-level part."""
    parts = {name: du(os.path.join(storage, name)) for name in sorted(os.listdir(storage))} if os.path.isdir(storage) else {}
    return {"state_bytes": parts.get("operators", 0), "persisted_bytes": sum(parts.values()), "persisted_parts": parts}


def fresh(folder: str) -> str:
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    return folder


def linked_copy(source: str, folder: str) -> str:
    """``folder`` with the files of ``source`` (hard links: each pipeline gets its own input
    folder, to add files to, without copying the history)."""
    os.makedirs(folder, exist_ok=True)
    for name in sorted(os.listdir(source)):
        try:
            os.link(os.path.join(source, name), os.path.join(folder, name))
        except OSError:
            shutil.copy2(os.path.join(source, name), os.path.join(folder, name))
    return folder


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def seconds_of(run: dict | None) -> float | None:
    return run["seconds"] if run and run.get("status") == "ok" else None


def rss_of(run: dict | None) -> int | None:
    return run.get("peak_rss_bytes") if run and run.get("status") == "ok" else None


# ------------------------------------------------------------ streaming processes


class StreamingCase:
    """One streaming sparkway process of ``pipeline`` over the files of ``<case>/logs``; a
    step is a file dropped into that folder, timed from inside the process."""

    def __init__(self, case: str, pipeline: str, label: str, result: dict) -> None:
        self.case, self.pipeline, self.label = case, pipeline, label
        self.logs, self.storage, self.cache = (os.path.join(case, x) for x in ("logs", "PStorage", "cache"))
        self.probe = os.path.join(case, "probe.jsonl")
        self.result = result
        result["steps"] = []
        self.proc: subprocess.Popen | None = None
        self.log = None
        self.next_step = 1

    def wait_step(self, number: int, timeout: float) -> dict | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for r in read_probe(self.probe):
                if r["kind"] == "step" and r["step"] == number:
                    return r
            if self.proc.poll() is not None:
                return None
            time.sleep(0.05)
        return None

    def build(self, args) -> bool:
        """Starts the process; it reads every file already in the folder in its first step."""
        say(f"-- {self.label}: building the state")
        machine.wait_quiet(args.quiet_wait, log=say)
        started = time.perf_counter()
        self.log = open(os.path.join(self.case, "program.log"), "w", encoding="utf-8")
        self.proc = subprocess.Popen(
            job_argv(self.pipeline, self.logs, self.storage, os.path.join(self.case, "out.csv"), self.probe, "streaming"),
            cwd=self.case, env=child_env(self.cache), stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        monitor = machine.Monitor()
        monitor.start(self.proc.pid)
        built = self.wait_step(1, args.build_timeout)
        load = monitor.stop()
        if built is None:
            status = "failed" if self.proc.poll() is not None else f"timeout after {args.build_timeout:.0f} s"
            self.result.update(status=f"state build {status}", build_s=round(time.perf_counter() - started, 1))
            error = failure_reason(self.log.name)
            if error:
                self.result["error"] = error
            say(f"   {self.result['status']} after {self.result['build_s']:.0f} s (see {os.path.relpath(self.log.name, ROOT)})")
            return False
        self.result.update(build_process_s=round(time.perf_counter() - started, 1), build_step_s=round(built["seconds"], 1),
                           build_load=load)
        say(f"   state built: step 1 took {built['seconds']:.1f} s ({time.perf_counter() - started:.1f} s since start)")
        self.next_step = 2
        return True

    def step(self, kind: str, write: Callable[[str], object], warmup: bool, args) -> bool:
        """``write(path)`` writes one file of new rows there; waits for the step that reads it."""
        monitor = machine.Monitor()
        monitor.start(self.proc.pid)
        dropped = time.perf_counter()
        write(os.path.join(self.logs, f"new_{kind}_{self.next_step:03d}.csv"))
        number = self.next_step
        record = self.wait_step(number, args.step_timeout)
        load = monitor.stop()
        if record is None:
            self.result["status"] = f"step {number} did not finish"
            say(f"   {self.result['status']} (see {os.path.relpath(self.log.name, ROOT)})")
            return False
        self.next_step += 1
        snapshots = [p for p, versions in snapshot_versions(self.storage).items() if number in versions]
        self.result["steps"].append({"step": number, "kind": kind, "warmup": warmup, "seconds": round(record["seconds"], 3),
                                     "file_to_output_s": round(time.perf_counter() - dropped, 3),
                                     **{k: record.get(k) for k in ("read", "compute", "write")},
                                     "snapshots": snapshots, **load})
        say(f"   {self.label}, {kind} step {number}{' (warm-up)' if warmup else ''}: {record['seconds']:.2f} s"
            f"  (compute {record.get('compute', 0):.2f} s; full snapshots of {len(snapshots)} state partitions;"
            f" other processes used {load['others_cores']:.1f} cores)")
        return True

    def finish(self) -> dict:
        """Ends the process; the result gets, per kind of step, the median of the measured ones."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # the runner ends after the current step
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                kill_tree(self.proc)
        if self.log is not None:
            self.log.close()
        if "status" not in self.result:
            self.result["status"] = "ok"
        self.result["by_kind"] = {}
        for kind in dict.fromkeys(s["kind"] for s in self.result["steps"]):
            measured = [s for s in self.result["steps"] if s["kind"] == kind and not s["warmup"]]
            if not measured:
                continue
            times = [s["seconds"] for s in measured]
            plain_steps = [s["seconds"] for s in measured if not s["snapshots"]]
            snap_steps = [s["seconds"] for s in measured if s["snapshots"]]
            self.result["by_kind"][kind] = {
                "steps": len(measured), "median_s": round(statistics.median(times), 3),
                "min_s": min(times), "max_s": max(times),
                "no_snapshot_median_s": round(statistics.median(plain_steps), 3) if plain_steps else None,
                "snapshot_steps": len(snap_steps),
                "snapshot_median_s": round(statistics.median(snap_steps), 3) if snap_steps else None,
                "others_cores": round(statistics.mean(s["others_cores"] for s in measured), 2),
            }
        self.result["snapshot_steps"] = snapshot_versions(self.storage)
        self.result.update(persisted(self.storage))
        return self.result


def take_turns(cases: list[StreamingCase], kinds: list[tuple[StreamingCase, str, Callable[[int], Callable]]],
               cfg: dict, args) -> list[dict]:
    """Builds each case (one at a time), then, every process idle and waiting for input,
    gives the steps of ``kinds`` in turn, one warm-up round then ``cfg["steps"]`` rounds,
    so that what else runs on the machine weighs on every kind alike.  ``kinds`` holds
    (case, kind, writer for round i)."""
    try:
        alive = {id(c) for c in cases if c.build(args)}
        for i in range(1 + cfg["steps"]):
            machine.wait_quiet(args.quiet_wait, log=say)
            for case, kind, writer in kinds:
                if id(case) in alive and not case.step(kind, writer(i), i == 0, args):
                    alive.discard(id(case))
    finally:
        results = [c.finish() for c in cases]
    return results


# ------------------------------------------------------------ steps: step cost vs state size


def step_cost(cfg: dict, args) -> list[dict]:
    """The sessions pipeline with a small and a large state; steps of new rows of existing
    users, the sizes in turn."""
    cases, kinds = [], []
    for rows in cfg["step_sizes"]:
        case = fresh(os.path.join(DATA, f"step-{rows}"))
        users = max(1, rows // ROWS_PER_USER)
        t0 = time.perf_counter()
        summary = gen.history(os.path.join(case, "logs"), rows, users, seed=rows)
        present = gen.present_users(os.path.join(case, "logs"))
        c = StreamingCase(case, "sessions", f"step cost, {rows:,} rows of state", {
            "state_rows": rows, "users": summary["users_with_rows"], "generate_s": round(time.perf_counter() - t0, 2),
            "new_rows_per_step": cfg["step_rows"]})
        cases.append(c)

        def writer(i: int, present=present, users=users) -> Callable[[str], object]:
            return lambda path: gen.new_rows(path, cfg["step_rows"], present, users, seed=10_000 + i)

        kinds.append((c, "step", writer))
    return take_turns(cases, kinds, cfg, args)


# ------------------------------------------------------------ hotkey: a hot key vs cold keys


def hot_key(cfg: dict, args) -> dict:
    """groupby-count over a history of cold keys plus one hot key; one streaming process
    gets steps that touch only the hot key and steps that touch only cold keys, in turn."""
    case = fresh(os.path.join(DATA, "hotkey"))
    logs = os.path.join(case, "logs")
    users = max(1, cfg["hot_cold_rows"] // ROWS_PER_USER)
    t0 = time.perf_counter()
    summary = gen.history(logs, cfg["hot_cold_rows"], users, seed=7)
    gen.hot_key(os.path.join(logs, "hot.csv"), cfg["hot_rows"])
    present = gen.present_users(logs)
    c = StreamingCase(case, "count", f"hot key, {cfg['hot_rows']:,} rows in one key", {
        "pipeline": "count", "hot_key_rows": cfg["hot_rows"], "cold_rows": cfg["hot_cold_rows"],
        "cold_keys": summary["users_with_rows"], "new_rows_per_step": cfg["step_rows"],
        "generate_s": round(time.perf_counter() - t0, 2)})

    def hot(i: int) -> Callable[[str], object]:
        return lambda path: gen.hot_key(path, cfg["step_rows"], seed=20_000 + i)

    def cold(i: int) -> Callable[[str], object]:
        return lambda path: gen.new_rows(path, cfg["step_rows"], present, users, seed=30_000 + i)

    result = take_turns([c], [(c, "hot", hot), (c, "cold", cold)], cfg, args)[0]
    by_kind = result["by_kind"]
    if "hot" in by_kind and "cold" in by_kind:
        result["hot_over_cold"] = ratio(by_kind["hot"]["median_s"], by_kind["cold"]["median_s"])
    return result


# ------------------------------------------------------------ throughput: first run, rerun, plain PySpark


def history_for(name: str, rows: int) -> tuple[str, str, dict]:
    """A fresh folder with a generated history of ``rows`` rows: (folder, history, summary)."""
    base = fresh(os.path.join(DATA, f"{name}-{rows}"))
    history = os.path.join(base, "history")
    t0 = time.perf_counter()
    summary = gen.history(history, rows, max(1, rows // ROWS_PER_USER), seed=rows)
    summary["generate_s"] = round(time.perf_counter() - t0, 2)
    summary["input_bytes"] = du(history)
    say(f"   generated {rows:,} rows ({summary['input_bytes'] / 2**20:,.0f} MB of CSV) in {summary['generate_s']:.1f} s")
    return base, history, summary


class PipelineCase:
    """The folders of one pipeline's runs over one history: its own input folder (the
    history's files, then the new ones), persistence storage, state cache and outputs."""

    def __init__(self, base: str, history: str, pipeline: str, args) -> None:
        self.pipeline, self.args = pipeline, args
        self.case = fresh(os.path.join(base, pipeline))
        self.logs = linked_copy(history, os.path.join(self.case, "logs"))
        self.storage, self.cache = os.path.join(self.case, "PStorage"), os.path.join(self.case, "cache")
        self.env = child_env(self.cache)

    def sparkway(self, name: str, timeout: float, master: str | None = None) -> dict:
        """One sparkway run (a fresh process) on the persistence storage; attached to the
        ``sparkway server`` at ``master`` when given."""
        probe = os.path.join(self.case, f"probe-{name}.jsonl")
        env = self.env if master is None else {**self.env, "SPARKWAY_SPARK_MASTER": master}
        run = timed(job_argv(self.pipeline, self.logs, self.storage, self.out(name), probe), cwd=self.case, env=env,
                    timeout=timeout, log=os.path.join(self.case, f"{name}.log"), quiet_wait=self.args.quiet_wait)
        run.update(phases(probe))
        return run

    def plain(self, name: str = "plain") -> dict:
        """The plain PySpark job over the same files (a fresh process): ``plain`` with
        Spark's default JVM settings, ``plain_tuned`` with sparkway's JVM options."""
        probe = os.path.join(self.case, f"probe-{name}.jsonl")
        argv = [PYTHON, os.path.join(HERE, "plain_spark.py"), "--pipeline", self.pipeline, "--logs", self.logs,
                "--out", self.out(name), "--probe", probe, *plain_options(name)]
        run = timed(argv, cwd=self.case, env=self.env, timeout=self.args.build_timeout,
                    log=os.path.join(self.case, f"{name}.log"), quiet_wait=self.args.quiet_wait)
        return {**run, **plain_probe(probe)}

    def out(self, name: str) -> str:
        return os.path.join(self.case, f"{name}_out" if name.startswith("plain") else f"{name}.csv")

    def attached_reruns(self, result: dict, present: list, users: int, new: int) -> None:
        """Two reruns with 0.1% new rows each, attached to a ``sparkway server`` (issue
        11's long-lived mode): the first is the server's first run of this program, the
        second (``attached``) what a program run again and again costs."""
        server, address = start_server(self.env, os.path.join(self.case, "server.log"))
        try:
            for seed, name in ((3, "attached_first"), (4, "attached")):
                gen.new_rows(os.path.join(self.logs, f"new_{seed}.csv"), new, present, users, seed=seed)
                result[name] = self.sparkway(name, self.args.rerun_timeout, master=address)
                say(f"   [{self.pipeline}] {RUN_NAMES[name]}, {new:,} new rows: {describe(result[name])}")
        finally:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                pass
            kill_tree(server)


def plain_options(name: str) -> list[str]:
    """The session options of a plain job's command line: sparkway's driver memory, and
    for ``plain_tuned`` sparkway's JVM options (``plain_spark.TUNED_JVM_OPTIONS``)."""
    return ["--driver-memory", plain_driver_memory(), *(["--tuned"] if name == "plain_tuned" else [])]


def plain_probe(probe: str) -> dict:
    """What a plain job recorded about itself: its phases' seconds and the driver's peak RSS."""
    records = read_probe(probe)
    if not records:
        return {}
    return {k: (round(v, 2) if isinstance(v, float) else v) for k, v in records[-1].items() if k != "kind"}


def start_server(env: dict, log: str, port: int = 15123) -> tuple[subprocess.Popen, str]:
    """A ``sparkway server`` (its own process tree, not measured with the runs), once it
    listens."""
    address = f"sc://127.0.0.1:{port}"
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen([PYTHON, "-m", "sparkway", "server", "--port", str(port)], cwd=os.path.dirname(log),
                                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 300
    while address not in open(log, encoding="utf-8").read():
        if proc.poll() is not None or time.monotonic() > deadline:
            kill_tree(proc)
            raise RuntimeError(f"the sparkway server did not start: see {log}")
        time.sleep(0.2)
    return proc, address


def describe(run: dict) -> str:
    if run["status"] != "ok":
        return run["status"] + (f": {run['error']}" if run.get("error") else "")
    return (f"{run['seconds']:.1f} s, peak RSS {run['peak_rss_bytes'] / 2**30:.2f} GB"
            f" (PSS {run.get('pss_at_peak_bytes', 0) / 2**30:.2f} GB)"
            f" (other processes used {run['others_cores']:.1f} cores)")


def throughput(rows: int, cfg: dict, args) -> list[dict]:
    """At one size, for each pipeline (one process at a time): sparkway's first run, a
    rerun without new input, a rerun with 0.1% new rows, the plain PySpark job over the
    same files, then a rerun without the local state cache."""
    users = max(1, rows // ROWS_PER_USER)
    new = max(1, rows // 1000)
    say(f"-- throughput, {rows:,} rows of history, {new:,} new rows")
    base, history, summary = history_for("throughput", rows)
    present = gen.present_users(history)
    results = []
    for pipeline in cfg["pipelines"]:
        p = PipelineCase(base, history, pipeline, args)
        result: dict = {"pipeline": pipeline, "rows": rows, "users": summary["users_with_rows"], "new_rows": new,
                        "files": summary["files"], "generate_s": summary["generate_s"],
                        "input_bytes": summary["input_bytes"]}
        results.append(result)
        say(f"   [{pipeline}] first run (builds the state) ...")
        first = result["first_run"] = p.sparkway("first", args.build_timeout)
        say(f"   [{pipeline}] first run: {describe(first)}")
        if first["status"] == "ok" and args.noop:
            result["noop_rerun"] = p.sparkway("noop", args.rerun_timeout)
            say(f"   [{pipeline}] rerun without new input: {describe(result['noop_rerun'])}")
        gen.new_rows(os.path.join(p.logs, "new_1.csv"), new, present, users, seed=1)
        result["input_bytes_with_new"] = du(p.logs)
        if first["status"] == "ok":
            result["rerun"] = p.sparkway("rerun", args.rerun_timeout)
            say(f"   [{pipeline}] rerun with {new:,} new rows: {describe(result['rerun'])}")
        plain = result["plain"] = p.plain()
        say(f"   [{pipeline}] plain PySpark over the same files: {describe(plain)}")
        if args.tuned_baseline:
            result["plain_tuned"] = p.plain("plain_tuned")
            say(f"   [{pipeline}] plain PySpark, sparkway's JVM options: {describe(result['plain_tuned'])}")
        result.update(persisted(p.storage))
        if seconds_of(result.get("rerun")) and seconds_of(plain):
            result["outputs_agree"] = outputs_agree([p.out("first"), p.out("rerun")], p.out("plain"),
                                                    OUTPUT_COLUMNS[pipeline])
            say(f"   [{pipeline}] outputs agree: {result['outputs_agree']}")
            if args.cold:
                # the same kind of rerun on a machine without the working copy of the state
                # (a new executor, another host): the state is rebuilt from the checkpoint
                shutil.rmtree(p.cache, ignore_errors=True)
                gen.new_rows(os.path.join(p.logs, "new_2.csv"), new, present, users, seed=2)
                result["cold_rerun"] = p.sparkway("cold", args.rerun_timeout)
                say(f"   [{pipeline}] rerun with {new:,} more rows, local state cache deleted: "
                    f"{describe(result['cold_rerun'])}")
        if args.attached and first["status"] == "ok":
            p.attached_reruns(result, present, users, new)
        result["ratios"] = {
            "first_over_plain": ratio(seconds_of(first), seconds_of(plain)),
            "memory_over_plain": ratio(rss_of(first), rss_of(plain)),
            # the same at the same moments, with shared pages counted once (see machine.py)
            "pss_memory_over_plain": ratio(*(r.get("pss_at_peak_bytes") if rss_of(r) else None for r in (first, plain))),
            "rerun_over_plain": ratio(seconds_of(result.get("rerun")), seconds_of(plain)),
            "state_over_input": ratio(result["state_bytes"], result["input_bytes_with_new"]) if first["status"] == "ok" else None,
        }
    return results


def huge(cfg: dict, args) -> list[dict]:
    """A first run of each pipeline over ``huge_rows`` rows, generated for it and deleted
    afterwards (data, state and outputs)."""
    rows = cfg["huge_rows"]
    say(f"-- huge: first run over {rows:,} rows")
    results = []
    base = os.path.join(DATA, f"huge-{rows}")
    try:
        base, history, summary = history_for("huge", rows)
        for pipeline in cfg["pipelines"]:
            p = PipelineCase(base, history, pipeline, args)
            run = p.sparkway("first", args.huge_timeout)
            result = {"pipeline": pipeline, "rows": rows, "users": summary["users_with_rows"],
                      "generate_s": summary["generate_s"], "input_bytes": summary["input_bytes"], "first_run": run,
                      **persisted(p.storage)}
            results.append(result)
            say(f"   [{pipeline}] first run over {rows:,} rows: {describe(run)}")
            log, kept = os.path.join(p.case, "first.log"), os.path.join(RESULTS, f"huge-{rows}-{pipeline}.log")
            shutil.copy(log, kept)  # the case folder goes, its log stays
            run["status"] = run["status"].replace(os.path.relpath(log, ROOT), os.path.relpath(kept, ROOT))
            shutil.rmtree(p.case, ignore_errors=True)  # the next pipeline gets the disk back
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return results


# ------------------------------------------------------------ w3: output-heavy, stateless (issue 35)

W3_SYSTEMS = {"sparkway": "sparkway", "plain": "plain PySpark", "plain_tuned": "plain PySpark, sparkway's JVM options"}


def w3_argv(system: str, logs: str, out: str, probe: str) -> list[str]:
    """The command line of one W3 run: sparkway's program or the plain PySpark job."""
    common = ["--logs", logs, "--out", out, "--probe", probe]
    if system == "sparkway":
        return [PYTHON, os.path.join(HERE, "w3_job.py"), *common]
    return [PYTHON, os.path.join(HERE, "w3_plain.py"), *common, *plain_options(system)]


def newlines(path: str) -> int:
    """The lines of a file, read in blocks: an output of 10M rows is most of a GB."""
    count = 0
    with open(path, "rb") as f:
        while block := f.read(1 << 24):
            count += block.count(b"\n")
    return count


def rows_written(system: str, out: str) -> int:
    """The rows of a W3 output: sparkway's one CSV file, after its header line; the plain
    job's part files, which have no header (Spark's default).  No value holds a newline."""
    if system == "sparkway":
        return max(0, newlines(out) - 1) if os.path.exists(out) else 0
    return sum(newlines(os.path.join(out, name)) for name in os.listdir(out) if name.startswith("part-"))


def remove(path: str) -> None:
    """Deletes the file or folder ``path``, if any."""
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


def w3_run(system: str, base: str, logs: str, index: int, args) -> dict:
    """One W3 run of ``system`` in a fresh process: wall time and load as ``timed``
    measures them, the driver's own peak RSS (recorded by the process itself), and the
    rows and bytes it wrote, counted once it ended; its output is then deleted."""
    out = os.path.join(base, "out.csv" if system == "sparkway" else f"{system}_out")
    probe = os.path.join(base, f"probe-{system}-{index}.jsonl")
    remove(out)  # Spark refuses to write into an existing folder, by default
    run = timed(w3_argv(system, logs, out, probe), cwd=base, env=child_env(os.path.join(base, "cache")),
                timeout=args.build_timeout, log=os.path.join(base, f"{system}-{index}.log"), quiet_wait=args.quiet_wait)
    if system == "sparkway":
        run.update(phases(probe))
        ends = [r for r in read_probe(probe) if r["kind"] == "end"]
        run["driver_peak_rss_bytes"] = ends[-1]["driver_peak_rss_bytes"] if ends else None
    else:
        run.update(plain_probe(probe))
    if run["status"] == "ok":
        run.update(rows_written=rows_written(system, out), output_bytes=du(out))
    remove(out)  # the disk back: each system's output of 10M rows is most of a GB
    return run


def w3_summary(runs: list[dict]) -> dict:
    """One system's runs at one size: the median wall time, the largest peaks (a peak is
    a peak: the worst run counts), the rows written."""
    ok = [r for r in runs if r["status"] == "ok"]
    if not ok:
        return {"runs": 0, "status": runs[0]["status"] if runs else "not run"}
    times = [r["seconds"] for r in ok]
    drivers = [r["driver_peak_rss_bytes"] for r in ok if r.get("driver_peak_rss_bytes")]
    return {"runs": len(ok), "status": "ok" if len(ok) == len(runs) else f"{len(runs) - len(ok)} of {len(runs)} failed",
            "median_s": round(statistics.median(times), 2), "min_s": min(times), "max_s": max(times),
            "peak_rss_bytes": max(r["peak_rss_bytes"] for r in ok),
            "driver_peak_rss_bytes": max(drivers) if drivers else None,
            "rows_written": sorted({r["rows_written"] for r in ok}), "output_bytes": ok[-1]["output_bytes"],
            "others_cores": max(r["others_cores"] for r in ok)}


def w3_agree(result: dict) -> bool:
    """Every run of every system wrote exactly the rows the filter keeps."""
    runs = [r for system_runs in result["runs"].values() for r in system_runs]
    return bool(runs) and all(r["status"] == "ok" and r["rows_written"] == result["kept"] for r in runs)


def w3(rows: int, cfg: dict, args) -> dict:
    """W3 at one size: the access logs generated once, then ``w3_runs`` rounds of one run
    of each system (sparkway, the plain job, its tuned variant with ``--tuned-baseline``),
    alternating, so that what else runs on the machine weighs on each alike."""
    say(f"-- W3 (output-heavy, stateless), {rows:,} rows")
    base = fresh(os.path.join(DATA, f"w3-{rows}"))
    logs = os.path.join(base, "logs")
    t0 = time.perf_counter()
    summary = gen.web_logs(logs, rows, seed=rows)
    result = {"rows": rows, "files": summary["files"], "kept": summary["kept"], "input_bytes": du(logs),
              "generate_s": round(time.perf_counter() - t0, 2)}
    say(f"   generated {rows:,} rows ({result['input_bytes'] / 2**20:,.0f} MB of CSV; {summary['kept']:,} "
        f"to keep) in {result['generate_s']:.1f} s")
    systems = ["sparkway", "plain", *(["plain_tuned"] if args.tuned_baseline else [])]
    result["runs"] = {system: [] for system in systems}
    for index in range(cfg["w3_runs"]):
        for system in systems:
            run = w3_run(system, base, logs, index, args)
            result["runs"][system].append(run)
            rows_out = f", {run['rows_written']:,} rows written" if "rows_written" in run else ""
            driver = f", driver {gb(run.get('driver_peak_rss_bytes'))} GB" if run["status"] == "ok" else ""
            say(f"   [{W3_SYSTEMS[system]}] run {index + 1}: {describe(run)}{driver}{rows_out}")
    result["summary"] = {system: w3_summary(runs) for system, runs in result["runs"].items()}
    result["rows_agree"] = w3_agree(result)
    if not result["rows_agree"]:
        say(f"   W3, {rows:,} rows: the rows written differ from the {summary['kept']:,} kept (or a run failed)")
    ours, plain = result["summary"]["sparkway"], result["summary"]["plain"]
    tuned = result["summary"].get("plain_tuned", {})
    result["ratios"] = {
        "time_over_plain": ratio(ours.get("median_s"), plain.get("median_s")),
        "memory_over_plain": ratio(ours.get("peak_rss_bytes"), plain.get("peak_rss_bytes")),
        "driver_memory_over_plain": ratio(ours.get("driver_peak_rss_bytes"), plain.get("driver_peak_rss_bytes")),
        "time_over_tuned": ratio(ours.get("median_s"), tuned.get("median_s")),
        "memory_over_tuned": ratio(ours.get("peak_rss_bytes"), tuned.get("peak_rss_bytes")),
    }
    return result


def outputs_agree(sparkway_csvs: list[str], plain_dir: str, keys: list[str]) -> bool:
    """The rows of sparkway's update streams (insertions minus deletions) equal the plain
    job's rows, on the columns ``keys``."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    types = {k: (pa.string() if k == "user_id" else pa.int64()) for k in [*keys, "diff"]}
    opts = pacsv.ConvertOptions(column_types=types, include_columns=[*keys, "diff"])
    updates = pa.concat_tables([pacsv.read_csv(p, convert_options=opts) for p in sparkway_csvs])
    net = updates.group_by(keys).aggregate([("diff", "sum")])
    net = net.filter(pc.not_equal(net.column("diff_sum"), 0))
    if net.num_rows and (pc.max(net.column("diff_sum")).as_py() != 1 or pc.min(net.column("diff_sum")).as_py() != 1):
        return False
    parts = [os.path.join(plain_dir, n) for n in sorted(os.listdir(plain_dir))
             if n.endswith(".csv") and os.path.getsize(os.path.join(plain_dir, n))]
    plain = pa.concat_tables([pacsv.read_csv(p, convert_options=pacsv.ConvertOptions(column_types=types,
                                                                                     include_columns=keys))
                              for p in parts])
    order = [(k, "ascending") for k in keys]
    return net.select(keys).sort_by(order).equals(plain.select(keys).sort_by(order))


# ------------------------------------------------------------------------- targets


def targets(results: dict) -> list[dict]:
    """Issue 10's targets, each with the measured value, the limit and whether it is met;
    the size-dependent ones at the largest size measured."""
    out = []

    def add(target: str, pipeline: str, where: str, value, limit, runs: list[dict | None], met: bool | None = None,
            limit_text: str | None = None):
        loads = [r["others_cores"] for r in runs if r and "others_cores" in r]
        out.append({"target": target, "pipeline": pipeline, "where": where, "value": value, "limit": limit,
                    "met": (value is not None and value <= limit) if met is None else met,
                    "others_cores": max(loads) if loads else None,
                    **({"limit_text": limit_text} if limit_text else {})})

    for pipeline in dict.fromkeys(r["pipeline"] for r in results["throughput"]):
        cases = sorted((r for r in results["throughput"] if r["pipeline"] == pipeline), key=lambda r: r["rows"])
        big, small = cases[-1], cases[0]
        at = f"{big['rows']:,} rows"
        add("first run / PySpark job (wall time)", pipeline, at, big["ratios"]["first_over_plain"],
            TARGETS["first_over_plain"], [big["first_run"], big["plain"]])
        add("peak memory / PySpark job's (process tree RSS)", pipeline, at, big["ratios"]["memory_over_plain"],
            TARGETS["memory_over_plain"], [big["first_run"], big["plain"]])
        if len(cases) > 1:
            add("rerun with 0.1% new rows: large / small history", pipeline, f"{big['rows']:,} / {small['rows']:,} rows",
                ratio(seconds_of(big.get("rerun")), seconds_of(small.get("rerun"))), TARGETS["rerun_growth"],
                [big.get("rerun"), small.get("rerun")])
        add("rerun / PySpark full recompute", pipeline, at, big["ratios"]["rerun_over_plain"],
            TARGETS["rerun_over_plain"], [big.get("rerun"), big["plain"]])
        add("persisted operator state / input bytes", pipeline, at, big["ratios"]["state_over_input"],
            TARGETS["state_over_input"], [])
        for run, how in ((big.get("rerun"), "own Spark"), (big.get("attached"), "attached to a server")):
            start = (big.get("rerun") or {}).get("spark_start_s")
            if seconds_of(run) and start:  # issue 11: a fresh process within Spark's start + 1.5 s
                add(f"rerun, {how}: seconds over Spark's start (issue 11)", pipeline, at,
                    round(seconds_of(run) - start, 2), FRESH_PROCESS_OVER_SPARK_START_S, [run])
    hot = results.get("hot_key")
    if hot:
        add("hot-key step / cold-key step (medians)", "count", f"hot key of {hot['hot_key_rows']:,} rows",
            hot.get("hot_over_cold"), TARGETS["hot_over_cold"],
            [hot["by_kind"].get("hot"), hot["by_kind"].get("cold")] if "by_kind" in hot else [])
    for r in results.get("huge", []):
        run = r["first_run"]
        add("first run completes (seconds)", r["pipeline"], f"{r['rows']:,} rows", seconds_of(run), None, [run],
            met=run["status"] == "ok")
    if results.get("w3"):
        w3_targets(results["w3"], add)
    return out


def w3_targets(w3_results: list[dict], add: Callable[..., None]) -> None:
    """Issue 35's targets of W3: time and memory against the plain job (the default one)
    at the largest size, the driver's peak across sizes, the rows written at every size."""
    cases = sorted(w3_results, key=lambda r: r["rows"])
    big, small = cases[-1], cases[0]
    ours, plain = big["summary"]["sparkway"], big["summary"]["plain"]
    at = f"{big['rows']:,} rows"
    add("W3 wall time / plain PySpark job's (medians; issue 35)", "w3", at, big["ratios"]["time_over_plain"],
        TARGETS["w3_time_over_plain"], [ours, plain])
    add("W3 peak memory / plain job's (process tree RSS; issue 35)", "w3", at, big["ratios"]["memory_over_plain"],
        TARGETS["w3_memory_over_plain"], [ours, plain])
    if len(cases) > 1:
        small_ours = small["summary"]["sparkway"]
        add("W3 driver's own peak RSS: largest / smallest size (issue 35)", "w3",
            f"{big['rows']:,} / {small['rows']:,} rows",
            ratio(ours.get("driver_peak_rss_bytes"), small_ours.get("driver_peak_rss_bytes")),
            TARGETS["w3_driver_growth"], [ours, small_ours])
    for r in cases:
        written = r["summary"]["sparkway"].get("rows_written"), r["summary"]["plain"].get("rows_written")
        add("W3 rows written: sparkway's / the plain job's (issue 35)", "w3", f"{r['rows']:,} rows",
            ratio(*(w[0] if w else None for w in written)), 1, [], met=r["rows_agree"],
            limit_text=f"= 1 ({r['kept']:,} rows each)")


# ------------------------------------------------------------------------- report


def fmt(x, digits: int = 1) -> str:
    return "n/a" if x is None else f"{x:,.{digits}f}"


def gb(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 2**30:,.2f}"


def mb(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 2**20:,.1f}"


def table(header: list[str], rows: list[list[str]], right: str = "") -> list[str]:
    """A markdown table; ``right`` flags ('r'/'l' per column) align numbers right."""
    align = [":---" if (right[i:i + 1] or "l") == "l" else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def sec(run: dict | None) -> str:
    """A run's seconds, or why there are none."""
    if not run:
        return "n/a"
    return fmt(run["seconds"]) if run.get("status") == "ok" else run["status"].split(" (")[0].split(";")[0]


def load(*runs: dict | None) -> str:
    return " / ".join(fmt(r.get("others_cores"), 1) if r else "-" for r in runs)


def report(results: dict) -> str:
    lines = [f"# sparkway benchmarks, {results['date']}{' (--quick)' if results['quick'] else ''}", ""]
    start, end = results.get("code_at_start", {}), results.get("code_at_end", {})
    code = f"commit {start.get('commit')}{' + uncommitted changes in sparkway/' if start.get('sparkway_dirty') else ''}"
    if end and end != start:
        code += f" at the start, {end.get('commit')}{' (dirty)' if end.get('sparkway_dirty') else ''} at the end"
    lines += [f"- machine: {results['machine']}", f"- code: {code}",
              f"- Spark driver memory of the sparkway processes: {results['sparkway_driver_memory']}; "
              f"of the plain PySpark jobs: {results['plain_driver_memory']}",
              "- plain PySpark jobs: Spark's default JVM settings"
              + (f"; the tuned ones (beside them): sparkway's JVM options, `{results['tuned_jvm_options']}`"
                 if results.get("tuned_jvm_options") else ""),
              f"- total time: {fmt(results.get('total_s'), 0)} s",
              "- others (cores): CPU used by other processes on the machine during the measurement (2 cores in all)", ""]
    if results["targets"]:
        lines += ["## Targets (issues 10, 11, 35)", ""]
        lines += table(["target", "pipeline", "where", "measured", "target", "met", "others (cores)"], [
            [t["target"], t["pipeline"], t["where"], fmt(t["value"], 2),
             t.get("limit_text") or ("completes" if t["limit"] is None else f"<= {t['limit']}"),
             "yes" if t["met"] else "**no**", fmt(t["others_cores"], 1)] for t in results["targets"]], "lllrrlr")
        lines.append("")
    if results["step_cost"]:
        lines += report_steps(results)
    if results["throughput"]:
        lines += report_throughput(results)
    if results.get("hot_key"):
        lines += report_hot_key(results["hot_key"])
    if results.get("huge"):
        lines += report_huge(results["huge"])
    if results.get("w3"):
        lines += report_w3(results["w3"])
    return "\n".join(lines)


def step_row(r: dict, kind: str, first: list[str]) -> list[str]:
    s = r.get("by_kind", {}).get(kind)
    if not s:
        return [*first, fmt(r.get("build_step_s")), r.get("status", "n/a"), "", "", "", ""]
    return [*first, fmt(r.get("build_step_s")), f"**{fmt(s['median_s'], 2)}**", f"{fmt(s['min_s'], 2)}-{fmt(s['max_s'], 2)}",
            f"{fmt(s['no_snapshot_median_s'], 2)} ({s['steps'] - s['snapshot_steps']})",
            f"{fmt(s['snapshot_median_s'], 2)} ({s['snapshot_steps']})", fmt(s["others_cores"], 1)]


STEP_HEADER = ["build (step 1, s)", "step median (s)", "min-max (s)", "w/o snapshot: median (steps)",
               "w/ snapshot: median (steps)", "others (cores)"]


def report_steps(results: dict) -> list[str]:
    cfg = results["config"]
    lines = ["## 1. Step cost vs state size (sessions, streaming)", "",
             f"{cfg['step_rows']:,} new rows of existing users per step; median of {cfg['steps']} steps after a warm-up; "
             "the sizes in turn; time from inside the process. 'w/ snapshot': the step's commit also wrote a full "
             "snapshot of a state partition.", ""]
    lines += table(["state rows", "users", *STEP_HEADER],
                   [step_row(r, "step", [f"{r['state_rows']:,}", f"{r['users']:,}"]) for r in results["step_cost"]],
                   "rrrrrrrr")
    lines += [f"\n{r['state_rows']:,} rows: {r['status']}: `{r['error']}`" for r in results["step_cost"] if r.get("error")]
    ok = [r["by_kind"]["step"] for r in results["step_cost"] if "step" in r.get("by_kind", {})]
    if len(ok) == 2:
        results["step_ratio"] = ratio(ok[1]["median_s"], ok[0]["median_s"])
        lines += ["", f"Ratio of the step medians (large / small state): {fmt(results['step_ratio'], 2)}"]
    return [*lines, ""]


RUN_NAMES = {"first_run": "first run", "noop_rerun": "no-input rerun", "rerun": "rerun", "plain": "plain PySpark",
             "plain_tuned": "plain PySpark, sparkway's JVM options",
             "cold_rerun": "cold-cache rerun", "attached_first": "rerun attached to a server (its first)",
             "attached": "rerun attached to a server"}


def report_throughput(results: dict) -> list[str]:
    lines = ["## 2. Throughput: first run, rerun with 0.1% new rows, plain PySpark", "",
             "Wall time of a fresh process each, one at a time; peak RSS of the process tree (driver, JVM, Python "
             "workers). The plain PySpark job reads the history and the new rows (a full recompute); 'state' is the "
             "persisted operator state after the rerun, against the CSV bytes read by then. others (cores): during "
             "the first run / the PySpark job / the rerun.", ""]
    tuned = any(r.get("plain_tuned") for r in results["throughput"])
    if tuned:
        lines += ["'PySpark tuned': the same plain job with sparkway's JVM options, beside the default one; the ratios "
                  "are against the default one.", ""]
    for pipeline in dict.fromkeys(r["pipeline"] for r in results["throughput"]):
        lines += [f"### {pipeline}", ""]
        rows = []
        for r in (r for r in results["throughput"] if r["pipeline"] == pipeline):
            ratios = r["ratios"]
            beside = [sec(r.get("plain_tuned")), gb(rss_of(r.get("plain_tuned")))] if tuned else []
            rows.append([f"{r['rows']:,}", f"{r['users']:,}", mb(r["input_bytes"]), sec(r["first_run"]),
                         gb(rss_of(r["first_run"])), sec(r["plain"]), gb(rss_of(r["plain"])), *beside,
                         f"**{fmt(ratios['first_over_plain'], 2)}**", f"**{fmt(ratios['memory_over_plain'], 2)}**",
                         sec(r.get("noop_rerun")), sec(r.get("rerun")), f"**{fmt(ratios['rerun_over_plain'], 2)}**",
                         sec(r.get("cold_rerun")), mb(r.get("state_bytes")), f"**{fmt(ratios['state_over_input'], 1)}**",
                         str(r.get("outputs_agree", "n/a")), load(r["first_run"], r["plain"], r.get("rerun"))])
        lines += table(["rows", "users", "input (MB)", "first run (s)", "first run peak RSS (GB)", "PySpark (s)",
                        "PySpark peak RSS (GB)",
                        *(["PySpark tuned (s)", "PySpark tuned peak RSS (GB)"] if tuned else []),
                        "first / PySpark", "memory ratio", "no-input rerun (s)", "rerun (s)",
                        "rerun / PySpark", "cold-cache rerun (s)", "state (MB)", "state / input", "outputs agree",
                        "others (cores)"], rows, "rrrrrrr" + ("rr" if tuned else "") + "rrrrrrrrlr")
        lines.append("")
    lines += ["Where the time goes (s): Python imports + Spark start + restore + steps (+ exit and the rest)", ""]
    rows = []
    for r in results["throughput"]:
        for key in ("first_run", "noop_rerun", "rerun", "cold_rerun", "attached_first", "attached"):
            run = r.get(key)
            if not run or run.get("status") != "ok":
                continue
            steps = sum(s["seconds"] for s in run.get("steps", []))
            known = run.get("python_imports_s", 0) + run.get("spark_start_s", 0) + run.get("restore_s", 0) + steps
            rows.append([r["pipeline"], f"{r['rows']:,}", RUN_NAMES[key], fmt(run["seconds"]), fmt(run.get("python_imports_s")),
                         fmt(run.get("spark_start_s")), fmt(run.get("restore_s"), 2), fmt(steps),
                         fmt(run["seconds"] - known), fmt(run["others_cores"], 1)])
        for key in ("plain", "plain_tuned"):
            plain = r.get(key)
            if plain and plain.get("status") == "ok" and "job" in plain:
                rows.append([r["pipeline"], f"{r['rows']:,}", RUN_NAMES[key], fmt(plain["seconds"]),
                             fmt(plain.get("imports")), fmt(plain["spark"]), "", f"job {fmt(plain['job'])}",
                             fmt(plain["seconds"] - plain.get("imports", 0) - plain["spark"] - plain["job"]),
                             fmt(plain["others_cores"], 1)])
    lines += table(["pipeline", "rows", "run", "total", "imports", "Spark start", "restore", "steps", "rest",
                    "others (cores)"], rows, "lrlrrrrrrr")
    failed = [(r, key) for r in results["throughput"]
              for key in ("first_run", "noop_rerun", "rerun", "plain", "plain_tuned", "cold_rerun")
              if r.get(key) and r[key].get("error")]
    if failed:
        lines += ["", "Failures:"]
        lines += [f"- {r['pipeline']}, {r['rows']:,} rows, {RUN_NAMES[key]}: {r[key]['status']}: `{r[key]['error']}`"
                  for r, key in failed]
    return [*lines, ""]


def report_hot_key(hot: dict) -> list[str]:
    lines = ["## 3. Hot key (groupby-count, streaming)", "",
             f"One key holds {hot['hot_key_rows']:,} rows, {hot['cold_keys']:,} cold keys hold {hot['cold_rows']:,}; "
             f"steps of {hot['new_rows_per_step']:,} rows touching only the hot key or only cold keys (distinct ones), "
             "in turn, after one warm-up step of each; time from inside the process.", ""]
    lines += table(["steps touching", *STEP_HEADER],
                   [step_row(hot, kind, [kind]) for kind in ("hot", "cold")], "lrrrrrr")
    lines += ["", f"Hot / cold (medians): **{fmt(hot.get('hot_over_cold'), 2)}**"]
    if hot.get("error"):
        lines.append(f"\n{hot['status']}: `{hot['error']}`")
    return [*lines, ""]


def w3_phases(run: dict) -> dict[str, float]:
    """One W3 run's seconds by phase, sparkway's (its one step's parts) or the plain job's."""
    if "job" in run:
        known = {"imports": run.get("imports", 0.0), "Spark start": run.get("spark", 0.0), "job": run["job"]}
    else:
        steps = run.get("steps", [])
        known = {"imports": run.get("python_imports_s", 0.0), "Spark start": run.get("spark_start_s", 0.0),
                 **{part: sum(s.get(part) or 0.0 for s in steps) for part in ("read", "compute", "write")}}
    return {"total": run["seconds"], **known, "rest": run["seconds"] - sum(known.values())}


def w3_phase_row(result: dict, system: str) -> list[str]:
    """A row of W3's time table: each phase's median over the system's runs at that size."""
    phases_of = [w3_phases(r) for r in result["runs"][system] if r["status"] == "ok"]
    cells = [fmt(statistics.median(p[name] for p in phases_of)) if name in phases_of[0] else ""
             for name in ("total", "imports", "Spark start", "read", "compute", "write", "job", "rest")]
    return [f"{result['rows']:,}", W3_SYSTEMS[system], *cells]


def report_w3(w3_results: list[dict]) -> list[str]:
    """W3's table (one row per size and system), its ratios, and the failures."""
    lines = ["## 5. W3: output-heavy, stateless (issue 35)", "",
             "Web-server access logs (CSV, about 100 bytes a row); rows with a status under 400 (half) kept, three "
             "columns computed (the path in lower case, bytes / 1024, the hour), written as CSV: sparkway to one file "
             "(`pw.io.csv.write`), the plain PySpark job with `df.write.csv` to a folder. Runs alternate, each a fresh "
             "process: time is the median of the runs; memories the largest peak: of the process tree (driver, JVM, "
             "Python workers), and of the driver process alone (sparkway's Python driver, without its JVM child; the "
             "plain job's Python process).", ""]
    rows = []
    for r in w3_results:
        for system, s in r["summary"].items():
            if not s["runs"]:
                rows.append([f"{r['rows']:,}", W3_SYSTEMS[system], s["status"], "", "", "", "", "", ""])
                continue
            rows.append([f"{r['rows']:,}", W3_SYSTEMS[system], f"**{fmt(s['median_s'])}**",
                         f"{fmt(s['min_s'])}-{fmt(s['max_s'])} ({s['runs']})", gb(s["peak_rss_bytes"]),
                         gb(s["driver_peak_rss_bytes"]), ", ".join(f"{n:,}" for n in s["rows_written"]),
                         mb(s["output_bytes"]), fmt(s["others_cores"], 1)])
    lines += table(["rows", "system", "time (s)", "min-max (runs)", "peak RSS (GB)", "driver peak RSS (GB)",
                    "rows written", "output (MB)", "others (cores)"], rows, "rlrrrrrrr")
    lines += ["", "sparkway over the plain job (the default one; the tuned one in brackets, if run):", ""]
    for r in w3_results:
        q = r["ratios"]
        tuned = lambda key: f" ({fmt(q[key], 2)})" if q.get(key) is not None else ""  # noqa: E731
        lines.append(f"- {r['rows']:,} rows: time **{fmt(q['time_over_plain'], 2)}**{tuned('time_over_tuned')}, "
                     f"peak RSS **{fmt(q['memory_over_plain'], 2)}**{tuned('memory_over_tuned')}, driver's peak RSS "
                     f"{fmt(q['driver_memory_over_plain'], 2)}; rows written as kept ({r['kept']:,}): "
                     f"{'yes' if r['rows_agree'] else '**no**'}")
    lines += ["", "Where the time goes (s, medians of the runs): Python imports + Spark start + the step's read, "
              "compute and write on the driver (sparkway), or the job (plain PySpark), + exit and the rest", ""]
    lines += table(["rows", "system", "total", "imports", "Spark start", "read", "compute", "write", "job", "rest"],
                   [w3_phase_row(r, system) for r in w3_results for system in r["runs"] if r["summary"][system]["runs"]],
                   "rlrrrrrrrr")
    failed = [(r, system, run) for r in w3_results for system, runs in r["runs"].items() for run in runs
              if run["status"] != "ok"]
    if failed:
        lines += ["", "Failures:"]
        lines += [f"- {r['rows']:,} rows, {W3_SYSTEMS[system]}: {run['status']}: `{run.get('error')}`"
                  for r, system, run in failed]
    return [*lines, ""]


def report_huge(huge_results: list[dict]) -> list[str]:
    lines = ["## 4. Huge first run (generated, then deleted)", ""]
    lines += table(["pipeline", "rows", "input (GB)", "first run", "peak RSS (GB)", "state (GB)", "others (cores)"],
                   [[r["pipeline"], f"{r['rows']:,}", gb(r["input_bytes"]), sec(r["first_run"]),
                     gb(r["first_run"].get("peak_rss_bytes")), gb(r.get("state_bytes")), load(r["first_run"])]
                    for r in huge_results], "lrrrrrr")
    for r in huge_results:
        run = r["first_run"]
        if run["status"] != "ok":
            lines.append(f"\n{r['pipeline']}: {run['status']}: `{run.get('error')}`")
    return [*lines, ""]


# ------------------------------------------------------------------------- main


def code_version() -> dict:
    """The commit measured, and whether sparkway/ had uncommitted changes."""
    def git(*argv: str) -> str:
        try:
            return subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    return {"commit": git("rev-parse", "--short", "HEAD"), "sparkway_dirty": bool(git("status", "--porcelain", "--", "sparkway"))}


def sizes(text: str) -> list[int]:
    return [int(x.replace("_", "")) for x in text.split(",") if x]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="sparkway benchmarks (see bench/README.md)")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run of a few minutes")
    parser.add_argument("--only", help=f"comma-separated sections to run, of: {', '.join(SECTIONS)} (default: all)")
    parser.add_argument("--huge", action="store_true", help="also a first run over 100M rows (generated, then deleted)")
    parser.add_argument("--sizes", type=sizes, help="history sizes (rows) of the throughput section, e.g. 1000000,10000000")
    parser.add_argument("--pipelines", type=lambda t: t.split(","), help="of the throughput and huge sections: sessions,count")
    parser.add_argument("--step-sizes", type=sizes, help="state sizes (rows) of the steps section")
    parser.add_argument("--steps", type=int, help="measured steps per kind, after the warm-up (steps and hotkey)")
    parser.add_argument("--hot-rows", type=int, help="rows of the hot key (hotkey section)")
    parser.add_argument("--hot-cold-rows", type=int, help="rows of the cold keys' history (hotkey section)")
    parser.add_argument("--huge-rows", type=int, help="rows of the --huge first run (default 100M)")
    parser.add_argument("--w3-sizes", type=sizes, help="rows of the w3 section's access logs, e.g. 1000000,10000000")
    parser.add_argument("--w3-runs", type=int, help="w3: runs of each system per size, alternating (default 3)")
    parser.add_argument("--tuned-baseline", action="store_true",
                        help="also run each plain PySpark job with sparkway's JVM options, reported beside the "
                        "default one (which the targets compare with)")
    parser.add_argument("--no-noop", dest="noop", action="store_false", help="skip the rerun without new input")
    parser.add_argument("--no-cold", dest="cold", action="store_false", help="skip the rerun without the local state cache")
    parser.add_argument("--attached", action="store_true",
                        help="also reruns attached to a `sparkway server` (issue 11's long-lived mode)")
    parser.add_argument("--build-timeout", type=float, default=1800, help="seconds allowed to a first run or plain job")
    parser.add_argument("--rerun-timeout", type=float, default=600)
    parser.add_argument("--step-timeout", type=float, default=300)
    parser.add_argument("--huge-timeout", type=float, default=4 * 3600)
    parser.add_argument("--quiet-wait", type=float, default=None,
                        help="before each measurement, wait up to this long for other processes to leave the CPU idle "
                        "(0: do not wait; default 30 s, 3 s with --quick)")
    parser.add_argument("--driver-memory", help="Spark driver memory of the sparkway processes (SPARKWAY_DRIVER_MEMORY, "
                        "e.g. 8g) and of the plain PySpark jobs; default: sparkway's own (4g)")
    parser.add_argument("--work", default=DATA, help="folder for generated data, state and outputs (default bench/data)")
    parser.add_argument("--results", default=RESULTS, help="folder for the results (default bench/results)")
    args = parser.parse_args(argv)
    only = args.only.split(",") if args.only else list(SECTIONS)
    unknown = [s for s in only if s not in (*SECTIONS, "huge")]
    if unknown:
        parser.error(f"--only: unknown section {', '.join(unknown)}; choose among {', '.join(SECTIONS)}, huge")
    args.huge = args.huge or "huge" in only  # --only huge: the huge first runs alone
    args.only = [s for s in only if s != "huge"]
    cfg = dict(QUICK if args.quick else FULL)
    for key in ("sizes", "pipelines", "step_sizes", "steps", "hot_rows", "hot_cold_rows", "huge_rows", "w3_sizes",
                "w3_runs"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    bad = [p for p in cfg["pipelines"] if p not in OUTPUT_COLUMNS]
    if bad:
        parser.error(f"--pipelines: unknown pipeline {', '.join(bad)}; choose among {', '.join(OUTPUT_COLUMNS)}")
    args.cfg = cfg
    if args.quiet_wait is None:
        args.quiet_wait = 3 if args.quick else 30
    return args


def _lock_work_folder(folder: str) -> object:
    """Keeps a second benchmark out of ``folder``: each rebuilds and deletes its data
    there, and two at once delete each other's (an open file holding a lock)."""
    import fcntl

    os.makedirs(folder, exist_ok=True)
    handle = open(os.path.join(folder, ".lock"), "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SystemExit(f"another benchmark is running in {folder}; wait for it, or pass --work DIR") from None
    return handle


def main(argv: list[str] | None = None) -> None:
    global DATA, RESULTS, DRIVER_MEMORY
    args = parse_args(argv)
    cfg = args.cfg
    DATA, RESULTS, DRIVER_MEMORY = os.path.abspath(args.work), os.path.abspath(args.results), args.driver_memory
    os.makedirs(RESULTS, exist_ok=True)
    lock = _lock_work_folder(DATA)  # noqa: F841 (held until the process ends)
    # the measured tree's bytecode, as an installed package has it (scripts/setup.sh)
    compileall.compile_dir(os.path.join(ROOT, "sparkway"), quiet=1)
    now = _dt.datetime.now(_dt.timezone.utc)
    results: dict = {
        "date": now.strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GB, "
                   f"Python {platform.python_version()}, local[2]",
        "quick": args.quick,
        "sections": args.only + (["huge"] if args.huge else []),
        "code_at_start": code_version(),
        "config": cfg,
        "sparkway_driver_memory": args.driver_memory or os.environ.get("SPARKWAY_DRIVER_MEMORY") or "sparkway's default (4g)",
        "plain_driver_memory": plain_driver_memory(),
        "tuned_jvm_options": TUNED_JVM_OPTIONS if args.tuned_baseline else None,
        "targets_limits": TARGETS,
        "step_cost": [],
        "throughput": [],
        "hot_key": None,
        "huge": [],
        "w3": [],
    }
    try:
        import pyspark
        results["machine"] += f", PySpark {pyspark.__version__}"
    except ImportError:
        pass
    started = time.perf_counter()
    if "steps" in args.only:
        results["step_cost"] = step_cost(cfg, args)
    if "throughput" in args.only:
        for rows in cfg["sizes"]:
            results["throughput"] += throughput(rows, cfg, args)
    if "hotkey" in args.only:
        results["hot_key"] = hot_key(cfg, args)
    if args.huge:
        results["huge"] = huge(cfg, args)
    if "w3" in args.only:
        results["w3"] = [w3(rows, cfg, args) for rows in cfg["w3_sizes"]]
    results["total_s"] = round(time.perf_counter() - started, 1)
    results["code_at_end"] = code_version()
    results["targets"] = targets(results)
    text = report(results)
    name = now.strftime("%Y%m%dT%H%M%SZ") + ("-quick" if args.quick else "")
    with open(os.path.join(RESULTS, f"{name}.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    for md in (f"{name}.md", "latest.md"):
        with open(os.path.join(RESULTS, md), "w", encoding="utf-8") as f:
            f.write(text + "\n")
    say("")
    say(text)
    say("")
    say(f"total {results['total_s']:.0f} s; results in {os.path.relpath(os.path.join(RESULTS, name + '.json'), ROOT)} "
        f"and {name}.md (also latest.md)")
    differ = [f"{r['rows']:,}" for r in results["w3"] if not r["rows_agree"]]
    if differ:  # the figures are kept above; the run still says that W3's outputs are wrong
        raise SystemExit(f"W3: the rows written differ from the rows kept (or a run failed) at "
                         f"{', '.join(differ)} rows")


if __name__ == "__main__":
    main()
