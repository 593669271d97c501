"""Where the time of a sparkway run goes: py-spy over the driver *and* Spark's Python
workers (the executors' kernels), summarized by function.

    .venv/bin/python bench/pyspy_profile.py build --rows 1000000    # the first run (state build)
    .venv/bin/python bench/pyspy_profile.py rerun --rows 1000000    # a rerun with 0.1% new rows

``build`` generates the history (as ``bench/run.py`` does) and profiles the first run;
``rerun`` then adds 0.1% new rows and profiles the rerun (run ``build`` first, with the
same ``--rows``).  ``--pipeline count`` profiles the groupby-count pipeline instead of
the sessions one.  Needs ``py-spy`` (``.venv/bin/pip install py-spy``).  Sampling
follows child processes: the driver (``sparkway_job.py``), the JVM's ``pyspark.daemon``
and its forked workers.  The JVM's own time is not seen (py-spy samples Python only).

Prints, per kind of process, the sampled seconds by function: *self* (the function was
running) and *total* (the function was on the stack), the top ``--top`` of each.
Writes the raw samples to ``bench/results/profile-<pipeline>-<what>-<rows>.txt`` (flamegraph
format) and the summary next to it as JSON.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gen  # noqa: E402
from run import DATA, OUTPUT_COLUMNS, PYTHON, RESULTS, ROWS_PER_USER, child_env, job_argv, phases  # noqa: E402

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^():]*?)(?::(?P<line>\d+))?\)$")
IDLE = {"select", "poll", "wait", "accept", "recv_into", "readinto", "read", "_recv", "sleep", "manager", "_wait_for_tstate_lock"}


def kind_of(process: str) -> str:
    if "sparkway_job.py" in process:
        return "driver"
    if "pyspark.daemon" in process or "pyspark.worker" in process:
        return "worker"
    return "other"


def summarize(raw: str, rate: int, top: int) -> dict:
    """{kind: {"self": [(function, seconds)], "total": [...], "seconds": n}}."""
    self_time: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    total_time: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    samples: collections.Counter = collections.Counter()
    with open(raw, encoding="utf-8", errors="replace") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not count.isdigit():
                continue
            n = int(count)
            frames = stack.split(";")
            processes = [x for x in frames if x.startswith("process ")]
            functions = [x for x in frames if not x.startswith("process ") and not x.startswith("thread ")]
            if not processes or not functions:
                continue
            # the root process is the driver (its command line may read as "" once it exited)
            kind = "driver" if len(processes) == 1 else kind_of(processes[-1])
            names = []
            for frame in functions:
                m = _FRAME.match(frame)
                names.append(f"{m.group('func')} ({os.path.basename(m.group('file'))})" if m else frame)
            leaf = names[-1]
            if leaf.split(" ")[0] in IDLE:
                kind_key = kind + " (waiting)"
                samples[kind_key] += n
                continue
            samples[kind] += n
            self_time[kind][leaf] += n
            for name in set(names):
                total_time[kind][name] += n
    out = {}
    for kind in sorted(samples):
        entry = {"seconds": round(samples[kind] / rate, 1)}
        if kind in self_time:
            entry["self"] = [(f, round(c / rate, 1)) for f, c in self_time[kind].most_common(top)]
            entry["total"] = [(f, round(c / rate, 1)) for f, c in total_time[kind].most_common(top)]
        out[kind] = entry
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description="profile a sparkway run of a benchmark pipeline")
    parser.add_argument("what", choices=["build", "rerun"])
    parser.add_argument("--pipeline", default="sessions", choices=sorted(OUTPUT_COLUMNS))
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rate", type=int, default=20, help="samples per second per process")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    pyspy = shutil.which("py-spy") or os.path.join(os.path.dirname(PYTHON), "py-spy")
    if not os.path.exists(pyspy):
        sys.exit("py-spy is not installed: .venv/bin/pip install py-spy")
    users = max(1, args.rows // ROWS_PER_USER)
    case = os.path.join(DATA, f"profile-{args.pipeline}-{args.rows}")
    logs, storage, cache = (os.path.join(case, x) for x in ("logs", "PStorage", "cache"))
    if args.what == "build":
        shutil.rmtree(case, ignore_errors=True)
        os.makedirs(case)
        gen.history(logs, args.rows, users, seed=args.rows)
    else:
        if not os.path.isdir(storage):
            sys.exit(f"run `pyspy_profile.py build --pipeline {args.pipeline} --rows {args.rows}` first")
        existing = [n for n in os.listdir(logs) if n.startswith("new_")]
        gen.new_rows(os.path.join(logs, f"new_{len(existing) + 1}.csv"), max(1, args.rows // 1000),
                     gen.present_users(logs), users, seed=100 + len(existing))
    os.makedirs(RESULTS, exist_ok=True)
    raw = os.path.join(RESULTS, f"profile-{args.pipeline}-{args.what}-{args.rows}.txt")
    probe = os.path.join(case, f"probe-profile-{args.what}.jsonl")
    if os.path.exists(probe):
        os.remove(probe)
    argv = [pyspy, "record", "--subprocesses", "--nonblocking", "-r", str(args.rate), "-f", "raw", "-o", raw, "--",
            *job_argv(args.pipeline, logs, storage, os.path.join(case, f"{args.what}.csv"), probe)]
    started = time.perf_counter()
    with open(os.path.join(case, f"profile-{args.what}.log"), "w") as log:
        rc = subprocess.run(argv, cwd=case, env=child_env(cache), stdout=log, stderr=subprocess.STDOUT).returncode
    wall = time.perf_counter() - started
    summary = {"what": args.what, "rows": args.rows, "exit": rc, "wall_s": round(wall, 1), **phases(probe),
               "by_process": summarize(raw, args.rate, args.top)}
    with open(raw.replace(".txt", ".json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"{args.what} of {args.rows:,} rows: exit {rc}, {wall:.1f} s wall (with py-spy)")
    for key in ("python_imports_s", "spark_start_s", "restore_s"):
        if key in summary:
            print(f"  {key}: {summary[key]}")
    for step in summary.get("steps", []):
        print(f"  step {step['step']}: {step['seconds']} s (read {step.get('read')}, compute {step.get('compute')}, write {step.get('write')})")
    for kind, entry in summary["by_process"].items():
        print(f"\n[{kind}] {entry['seconds']} s sampled")
        for label in ("self", "total"):
            if label in entry:
                print(f"  by {label} time:")
                for func, sec in entry[label]:
                    print(f"    {sec:8.1f} s  {func}")
    print(f"\nraw samples: {os.path.relpath(raw)}")


if __name__ == "__main__":
    main()
