"""sparkway benchmarks on the sessions pipeline of seeds 002/003: one command, both
measurements side by side, a table on stdout and JSON in ``bench/results/``.

    .venv/bin/python bench/run.py            # full sizes (about 45 minutes on 2 cores)
    .venv/bin/python bench/run.py --quick    # small sizes, a smoke run (about 3 minutes)

1. Step cost vs state size: one streaming sparkway process holds the sessions of a
   history of 50k (or 5M) log rows; the benchmark then drops files of 1,000 new log
   lines of existing users into its input folder, one at a time, and times each engine
   step from inside the process (``Runner._run_step``: read the file, run the Spark
   job, update the state, write the output, commit).  Spark start-up and polling are
   not in it.  Both processes are built first (one at a time), then, both idle and
   waiting, they get steps in turn (small, large, small, ...), so that the rest of the
   machine's load weighs on both alike.  The first step of each is a warm-up; the
   median of the next ones counts.
2. Rerun vs recompute: with 1M (20k users) and 10M (200k users) rows of history over
   30 days, a persistent sparkway program is run once to build its state, then rerun
   with 0.1% new rows added (a fresh process: Python, Spark start-up, restore, the
   step); a plain PySpark batch job (``bench/plain_spark.py``) recomputes every session
   from all the files, also as a fresh process.  Both are wall times of the process.

See bench/README.md for what each number means and the results on this machine.
"""

from __future__ import annotations

import argparse
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import gen  # noqa: E402
import machine  # noqa: E402

PYTHON = sys.executable
DATA = os.path.join(HERE, "data")
RESULTS = os.path.join(HERE, "results")
ROWS_PER_USER = 50

FULL = {
    "step_sizes": [50_000, 5_000_000],
    "step_rows": 1_000,
    "steps": 7,
    "rerun_sizes": [1_000_000, 10_000_000],
}
QUICK = {
    "step_sizes": [50_000, 250_000],  # at least 1,000 users each: a step touches 1,000 users in both
    "step_rows": 1_000,
    "steps": 3,
    "rerun_sizes": [20_000, 100_000],
}


def say(text: str = "") -> None:
    print(text, flush=True)


DRIVER_MEMORY: str | None = None  # --driver-memory: passed to sparkway's Spark through spark-submit


def child_env(cache: str) -> dict[str, str]:
    env = dict(os.environ)
    if DRIVER_MEMORY:
        env["PYSPARK_SUBMIT_ARGS"] = f"--driver-memory {DRIVER_MEMORY} pyspark-shell"
    env["PYTHONPATH"] = os.pathsep.join(p for p in [ROOT, env.get("PYTHONPATH", "")] if p)
    env["PYSPARK_PYTHON"] = PYTHON
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env["SPARKWAY_STATE_CACHE"] = cache  # working copies of the state, per benchmark case
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


def timed(argv: list[str], *, cwd: str, env: dict, timeout: float, log: str, quiet_wait: float) -> dict:
    """Runs one fresh process and times it; never raises on failure or timeout."""
    busy_before = machine.wait_quiet(quiet_wait, log=say)
    with open(log, "w", encoding="utf-8") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        monitor = machine.Monitor()
        monitor.start(proc.pid)
        status = "ok"
        try:
            rc = proc.wait(timeout=timeout)
            if rc != 0:
                status = f"failed (exit {rc}; see {os.path.relpath(log, ROOT)})"
        except subprocess.TimeoutExpired:
            kill_tree(proc)
            status = f"timeout after {timeout:.0f} s (killed)"
        seconds = time.perf_counter() - started
        load = monitor.stop()
    return {"status": status, "seconds": round(seconds, 2), "others_cores_before": round(busy_before, 2), **load}


def sessions_argv(logs: str, storage: str, out: str, probe: str, mode: str = "static") -> list[str]:
    return [PYTHON, os.path.join(HERE, "sessions_job.py"), "--logs", logs, "--storage", storage,
            "--out", out, "--probe", probe, "--mode", mode]


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
    total = 0
    for folder, _, names in os.walk(path):
        for name in names:
            try:
                total += os.path.getsize(os.path.join(folder, name))
            except OSError:
                pass
    return total


def fresh(folder: str) -> str:
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    return folder


# ------------------------------------------------------------ 1. step cost vs state size


class StreamingCase:
    """One streaming sparkway process over a history of ``rows`` log rows."""

    def __init__(self, rows: int, cfg: dict) -> None:
        self.rows = rows
        self.users = max(1, rows // ROWS_PER_USER)
        self.cfg = cfg
        self.case = fresh(os.path.join(DATA, f"step-{rows}"))
        self.logs, self.storage, self.cache = (os.path.join(self.case, x) for x in ("logs", "PStorage", "cache"))
        self.probe = os.path.join(self.case, "probe.jsonl")
        t0 = time.perf_counter()
        summary = gen.history(self.logs, rows, self.users, seed=rows)
        self.present = gen.present_users(self.logs)
        self.result: dict = {"state_rows": rows, "users": summary["users_with_rows"],
                             "generate_s": round(time.perf_counter() - t0, 2),
                             "new_rows_per_step": cfg["step_rows"], "steps": []}
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
        say(f"-- step cost, {self.rows:,} rows of state ({self.result['users']:,} users): building the state")
        machine.wait_quiet(args.quiet_wait, log=say)
        started = time.perf_counter()
        self.log = open(os.path.join(self.case, "program.log"), "w", encoding="utf-8")
        self.proc = subprocess.Popen(
            sessions_argv(self.logs, self.storage, os.path.join(self.case, "sessions.csv"), self.probe, "streaming"),
            cwd=self.case, env=child_env(self.cache), stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        monitor = machine.Monitor()
        monitor.start(self.proc.pid)
        built = self.wait_step(1, args.build_timeout)
        load = monitor.stop()
        if built is None:
            status = "failed" if self.proc.poll() is not None else f"timeout after {args.build_timeout:.0f} s"
            self.result.update(status=f"state build {status}", build_s=round(time.perf_counter() - started, 1))
            say(f"   {self.result['status']} after {self.result['build_s']:.0f} s (see {os.path.relpath(self.log.name, ROOT)})")
            return False
        self.result.update(build_process_s=round(time.perf_counter() - started, 1), build_step_s=round(built["seconds"], 1),
                           build_load=load)
        say(f"   state built: step 1 took {built['seconds']:.1f} s ({time.perf_counter() - started:.1f} s since start)")
        self.next_step = 2
        return True

    def step(self, i: int, args) -> bool:
        """Drops one file of new rows and waits for the step that reads it."""
        monitor = machine.Monitor()
        monitor.start(self.proc.pid)
        dropped = time.perf_counter()
        gen.new_rows(os.path.join(self.logs, f"new_{i:03d}.csv"), self.cfg["step_rows"], self.present, self.users,
                     seed=10_000 + i)
        number = self.next_step
        record = self.wait_step(number, args.step_timeout)
        load = monitor.stop()
        if record is None:
            self.result["status"] = f"step {number} did not finish"
            say(f"   {self.result['status']} (see {os.path.relpath(self.log.name, ROOT)})")
            return False
        self.next_step += 1
        latency = time.perf_counter() - dropped
        snapshots = [p for p, versions in snapshot_versions(self.storage).items() if number in versions]
        self.result["steps"].append({"step": number, "warmup": i == 0, "seconds": round(record["seconds"], 3),
                                     "file_to_output_s": round(latency, 3),
                                     **{k: record.get(k) for k in ("read", "compute", "write")},
                                     "snapshots": snapshots, **load})
        say(f"   {self.rows:>9,} rows of state, step {number}{' (warm-up)' if i == 0 else ''}: {record['seconds']:.2f} s"
            f"  (compute {record.get('compute', 0):.2f} s; full snapshots of {len(snapshots)} state partitions;"
            f" other processes used {load['others_cores']:.1f} cores)")
        return True

    def finish(self) -> dict:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # the runner ends after the current step
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                kill_tree(self.proc)
        if self.log is not None:
            self.log.close()
        measured = [s for s in self.result["steps"] if not s["warmup"]]
        if measured and "status" not in self.result:
            times = [s["seconds"] for s in measured]
            plain_steps = [s["seconds"] for s in measured if not s["snapshots"]]
            snap_steps = [s["seconds"] for s in measured if s["snapshots"]]
            self.result.update(status="ok", step_median_s=round(statistics.median(times), 3),
                               step_min_s=min(times), step_max_s=max(times),
                               no_snapshot_median_s=round(statistics.median(plain_steps), 3) if plain_steps else None,
                               snapshot_median_s=round(statistics.median(snap_steps), 3) if snap_steps else None)
        self.result["snapshot_steps"] = snapshot_versions(self.storage)
        self.result["persisted_bytes"] = du(self.storage)
        return self.result


def step_cost(cfg: dict, args) -> list[dict]:
    """Builds each state in its own streaming process (one at a time), then, with every
    process idle and waiting for input, gives them steps in turn: small, large, small,
    large... so that what else runs on the machine weighs on both sizes alike."""
    cases = [StreamingCase(rows, cfg) for rows in cfg["step_sizes"]]
    try:
        alive = [c for c in cases if c.build(args)]
        for i in range(1 + cfg["steps"]):  # one warm-up step, then the measured ones
            machine.wait_quiet(args.quiet_wait, log=say)
            for c in list(alive):
                if not c.step(i, args):
                    alive.remove(c)
    finally:
        results = [c.finish() for c in cases]
    return results


# ------------------------------------------------------------ 2. rerun vs recompute


def rerun_vs_recompute(rows: int, args) -> dict:
    users = max(1, rows // ROWS_PER_USER)
    new = max(1, rows // 1000)
    case = fresh(os.path.join(DATA, f"rerun-{rows}"))
    logs, storage, cache = (os.path.join(case, x) for x in ("logs", "PStorage", "cache"))
    t0 = time.perf_counter()
    summary = gen.history(logs, rows, users, seed=rows)
    present = gen.present_users(logs)
    result: dict = {"history_rows": rows, "users": summary["users_with_rows"], "new_rows": new,
                    "files": summary["files"], "generate_s": round(time.perf_counter() - t0, 2)}
    env = child_env(cache)

    def sparkway(name: str, timeout: float) -> dict:
        probe = os.path.join(case, f"probe-{name}.jsonl")
        run = timed(sessions_argv(logs, storage, os.path.join(case, f"{name}.csv"), probe), cwd=case, env=env,
                    timeout=timeout, log=os.path.join(case, f"{name}.log"), quiet_wait=args.quiet_wait)
        run.update(phases(probe))
        return run

    say(f"-- rerun vs recompute, {rows:,} rows of history ({summary['users_with_rows']:,} users), {new:,} new rows")
    say("   first run (builds the state) ...")
    first = sparkway("first", args.build_timeout)
    result["first_run"] = first
    say(f"   first run: {first['status']}, {first['seconds']:.1f} s")
    if first["status"] == "ok":
        noop = sparkway("noop", args.rerun_timeout)
        result["noop_rerun"] = noop
        say(f"   rerun without new input: {noop['seconds']:.1f} s")
    gen.new_rows(os.path.join(logs, "new_1.csv"), new, present, users, seed=1)
    if first["status"] == "ok":
        rerun = sparkway("rerun", args.rerun_timeout)
        result["rerun"] = rerun
        say(f"   sparkway rerun with {new:,} new rows: {rerun['status']}, {rerun['seconds']:.1f} s")
    plain_out = os.path.join(case, "plain_out")
    plain_probe = os.path.join(case, "probe-plain.jsonl")
    plain = timed([PYTHON, os.path.join(HERE, "plain_spark.py"), "--logs", logs, "--out", plain_out, "--probe", plain_probe],
                  cwd=case, env=env, timeout=args.build_timeout, log=os.path.join(case, "plain.log"),
                  quiet_wait=args.quiet_wait)
    records = read_probe(plain_probe)
    if records:
        plain.update({k: round(v, 2) for k, v in records[-1].items() if k != "kind"})
    result["plain"] = plain
    say(f"   plain PySpark recompute: {plain['status']}, {plain['seconds']:.1f} s")
    if first["status"] == "ok" and result["rerun"]["status"] == "ok" and plain["status"] == "ok":
        result["outputs_agree"] = outputs_agree([os.path.join(case, "first.csv"), os.path.join(case, "rerun.csv")],
                                                plain_out)
        result["rerun_over_plain"] = round(result["rerun"]["seconds"] / plain["seconds"], 3)
        if args.cold:
            # the same kind of rerun on a machine without the working copy of the state
            # (a new executor, another host): the state is rebuilt from the checkpoint
            shutil.rmtree(cache, ignore_errors=True)
            gen.new_rows(os.path.join(logs, "new_2.csv"), new, present, users, seed=2)
            cold = sparkway("cold", args.rerun_timeout)
            result["cold_rerun"] = cold
            say(f"   rerun with {new:,} more new rows, local state cache deleted: {cold['status']}, {cold['seconds']:.1f} s")
    result["persisted_bytes"] = du(storage)
    return result


def outputs_agree(sparkway_csvs: list[str], plain_dir: str) -> bool:
    """The sessions from sparkway's update streams (insertions minus deletions) equal the
    plain job's sessions."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    keys = ["user_id", "session_start", "session_finish", "count"]
    types = {"user_id": pa.string(), "session_start": pa.int64(), "session_finish": pa.int64(), "count": pa.int64(),
             "diff": pa.int64()}
    opts = pacsv.ConvertOptions(column_types=types, include_columns=[*keys, "diff"])
    updates = pa.concat_tables([pacsv.read_csv(p, convert_options=opts) for p in sparkway_csvs])
    net = updates.group_by(keys).aggregate([("diff", "sum")])
    net = net.filter(pc.not_equal(net.column("diff_sum"), 0))
    if net.num_rows and pc.max(net.column("diff_sum")).as_py() != 1 or pc.min(net.column("diff_sum")).as_py() != 1:
        return False
    parts = [os.path.join(plain_dir, n) for n in sorted(os.listdir(plain_dir)) if n.endswith(".csv")]
    plain = pa.concat_tables([pacsv.read_csv(p, convert_options=pacsv.ConvertOptions(column_types=types, include_columns=keys))
                              for p in parts])
    a = net.select(keys).sort_by([(k, "ascending") for k in keys])
    b = plain.select(keys).sort_by([(k, "ascending") for k in keys])
    return a.equals(b)


# ------------------------------------------------------------------------- report


def fmt(x, digits: int = 1) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.{digits}f}"


def report(results: dict) -> str:
    lines = []
    lines.append(f"sparkway bench, {results['date']}, {results['machine']}{' (--quick)' if results['quick'] else ''}")
    start, end = results.get("code_at_start", {}), results.get("code_at_end", {})
    code = f"code: commit {start.get('commit')}{' + uncommitted changes in sparkway/' if start.get('sparkway_dirty') else ''}"
    if end and end != start:
        code += f" at the start, {end.get('commit')}{' (dirty)' if end.get('sparkway_dirty') else ''} at the end"
    lines.append(code)
    lines.append(f"Spark driver memory of the sparkway processes: {results.get('sparkway_driver_memory')}")
    lines.append("")
    lines.append(f"1. Step cost vs state size: streaming, {results['config']['step_rows']:,} new rows per step "
                 f"(existing users), median of {results['config']['steps']} steps after a warm-up, the two sizes in turn")
    header = (f"{'state rows':>12} {'users':>9} {'build (s)':>10} {'step median':>12} {'min-max':>12} "
              f"{'w/o snapshot':>13} {'w/ snapshot':>12} {'others':>7}")
    lines.append(header)
    lines.append(f"{'':>12} {'':>9} {'':>10} {'(s)':>12} {'(s)':>12} {'median (s)':>13} {'median (s)':>12} {'(cores)':>7}")
    steps = results["step_cost"]
    for r in steps:
        if r.get("status") != "ok":
            lines.append(f"{r['state_rows']:>12,} {r['users']:>9,} {fmt(r.get('build_step_s')):>10} {r.get('status')}")
            continue
        measured = [s for s in r["steps"] if not s["warmup"]]
        others = statistics.mean(s["others_cores"] for s in measured)
        n_snap = sum(1 for s in measured if s["snapshots"])
        lines.append(f"{r['state_rows']:>12,} {r['users']:>9,} {fmt(r['build_step_s']):>10} {fmt(r['step_median_s'], 2):>12} "
                     f"{fmt(r['step_min_s'], 2) + '-' + fmt(r['step_max_s'], 2):>12} "
                     f"{fmt(r.get('no_snapshot_median_s'), 2) + f' ({len(measured) - n_snap})':>13} "
                     f"{fmt(r.get('snapshot_median_s'), 2) + f' ({n_snap})':>12} {fmt(others, 1):>7}")
    ok = [r for r in steps if r.get("status") == "ok"]
    if len(ok) == 2:
        ratio = ok[1]["step_median_s"] / ok[0]["step_median_s"]
        results["step_ratio"] = round(ratio, 2)
        text = f"ratio of the step medians (large / small state): {ratio:.2f}"
        if ok[0].get("no_snapshot_median_s") and ok[1].get("no_snapshot_median_s"):
            plain_ratio = ok[1]["no_snapshot_median_s"] / ok[0]["no_snapshot_median_s"]
            results["step_ratio_without_snapshots"] = round(plain_ratio, 2)
            text += f"; of the steps that wrote no full snapshot: {plain_ratio:.2f}"
        lines.append(text)
    if steps:
        lines.append("(in parentheses: how many steps; 'w/ snapshot': the step's commit also wrote a full snapshot of a state"
                     " partition (sparkway writes one when snapshot_interval_ms=60000 has passed and the changelogs"
                     " since the last one add up to a quarter of its size); others: CPU cores used by other"
                     " processes on the machine during the steps, on average)")
    lines.append("")
    lines.append("2. Rerun vs recompute: 0.1% new rows; wall time of a fresh process each")
    lines.append(f"{'history':>11} {'users':>8} {'new':>7} {'first run':>10} {'no-input':>9} {'sparkway':>9} "
                 f"{'plain':>8} {'rerun/':>7} {'cold-cache':>11} {'outputs':>8}")
    lines.append(f"{'rows':>11} {'':>8} {'rows':>7} {'(s)':>10} {'rerun (s)':>9} {'rerun (s)':>9} "
                 f"{'Spark (s)':>8} {'plain':>7} {'rerun (s)':>11} {'agree':>8}")
    for r in results["rerun_vs_recompute"]:
        first = r.get("first_run", {})
        first_text = fmt(first.get("seconds")) if first.get("status") == "ok" else first.get("status", "n/a")[:10]

        def sec(key):
            run = r.get(key)
            return fmt(run["seconds"]) if run and run.get("status") == "ok" else ("n/a" if not run else "FAILED")

        lines.append(f"{r['history_rows']:>11,} {r['users']:>8,} {r['new_rows']:>7,} {first_text:>10} {sec('noop_rerun'):>9} "
                     f"{sec('rerun'):>9} {sec('plain'):>8} {fmt(r.get('rerun_over_plain'), 2):>7} {sec('cold_rerun'):>11} "
                     f"{str(r.get('outputs_agree', 'n/a')):>8}")
    lines.append("")
    lines.append("Breakdown of the sparkway reruns (s): python imports + Spark start + restore + step")
    for r in results["rerun_vs_recompute"]:
        for key in ("noop_rerun", "rerun", "cold_rerun"):
            run = r.get(key)
            if not run or run.get("status") != "ok":
                continue
            step = sum(s["seconds"] for s in run.get("steps", []))
            lines.append(f"  {r['history_rows']:>11,} {key:<11} {run['seconds']:6.1f} = {run.get('python_imports_s', 0):.1f} + "
                         f"{run.get('spark_start_s', 0):.1f} + {run.get('restore_s', 0):.2f} + {step:.1f}"
                         f" (+ {run['seconds'] - run.get('python_imports_s', 0) - run.get('spark_start_s', 0) - run.get('restore_s', 0) - step:.1f} exit/other)"
                         f"; other processes used {run['others_cores']:.1f} cores")
        plain = r.get("plain")
        if plain and plain.get("status") == "ok" and "job" in plain:
            lines.append(f"  {r['history_rows']:>11,} {'plain':<11} {plain['seconds']:6.1f} = Spark start {plain['spark']:.1f} + "
                         f"job {plain['job']:.1f}; other processes used {plain['others_cores']:.1f} cores")
    return "\n".join(lines)


def code_version() -> dict:
    """The commit measured, and whether sparkway/ had uncommitted changes."""
    def git(*argv: str) -> str:
        try:
            return subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    return {"commit": git("rev-parse", "--short", "HEAD"), "sparkway_dirty": bool(git("status", "--porcelain", "--", "sparkway"))}


def main() -> None:
    parser = argparse.ArgumentParser(description="sparkway benchmarks (sessions pipeline)")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run of a few minutes")
    parser.add_argument("--only", choices=["steps", "rerun"], help="run one of the two benchmarks")
    parser.add_argument("--build-timeout", type=float, default=1800, help="seconds allowed to build a state (first run)")
    parser.add_argument("--rerun-timeout", type=float, default=600)
    parser.add_argument("--step-timeout", type=float, default=300)
    parser.add_argument("--quiet-wait", type=float, default=None,
                        help="before each measurement, wait up to this long for other processes to leave the CPU idle")
    parser.add_argument("--no-cold", dest="cold", action="store_false", help="skip the rerun without the local state cache")
    parser.add_argument("--step-sizes", help="comma-separated state sizes (rows) for the step benchmark")
    parser.add_argument("--rerun-sizes", help="comma-separated history sizes (rows) for the rerun benchmark")
    parser.add_argument("--driver-memory", help="Spark driver memory of the sparkway processes (e.g. 4g); "
                        "default: sparkway's own setting (Spark's default, 1g)")
    args = parser.parse_args()
    cfg = dict(QUICK if args.quick else FULL)
    for key in ("step_sizes", "rerun_sizes"):
        if getattr(args, key):
            cfg[key] = [int(x) for x in getattr(args, key).split(",")]
    global DRIVER_MEMORY
    DRIVER_MEMORY = args.driver_memory
    if args.quiet_wait is None:
        args.quiet_wait = 3 if args.quick else 30
    os.makedirs(RESULTS, exist_ok=True)
    now = _dt.datetime.now(_dt.timezone.utc)
    results: dict = {
        "date": now.strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GB, "
                   f"Python {platform.python_version()}, local[2]",
        "quick": args.quick,
        "code_at_start": code_version(),
        "config": cfg,
        "sparkway_driver_memory": args.driver_memory or "sparkway's default (Spark's 1g)",
        "step_cost": [],
        "rerun_vs_recompute": [],
    }
    try:
        import pyspark
        results["machine"] += f", PySpark {pyspark.__version__}"
    except ImportError:
        pass
    started = time.perf_counter()
    if args.only in (None, "steps"):
        results["step_cost"] = step_cost(cfg, args)
    if args.only in (None, "rerun"):
        for rows in cfg["rerun_sizes"]:
            results["rerun_vs_recompute"].append(rerun_vs_recompute(rows, args))
    results["total_s"] = round(time.perf_counter() - started, 1)
    results["code_at_end"] = code_version()
    table = report(results)
    name = now.strftime("%Y%m%dT%H%M%SZ") + ("-quick" if args.quick else "")
    with open(os.path.join(RESULTS, f"{name}.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    say("")
    say(table)
    say("")
    say(f"total {results['total_s']:.0f} s; results in {os.path.relpath(os.path.join(RESULTS, name + '.json'), ROOT)}")


if __name__ == "__main__":
    main()
