"""The least a fresh process pays after Spark's start before any step can end (issue 11's
fresh-process target: a rerun's wall time at most Spark's start + 1.5 s).

    .venv/bin/python bench/spark_floor.py [--runs 5] [--quiet-wait 30]

Each run is a fresh Python process on sparkway's Spark settings (``get_spark``: local[2],
the class-data archive, the Python workers warmed up in the background) that measures,
one after the other:

- ``api``: loading sparkway's public API, as a program's first ``class S(pw.Schema)``
  does (numpy, pandas, pyarrow, pyspark's Python side);
- ``spark start``: ``get_spark()``, the figure the target adds 1.5 s to;
- ``first Python job``: an Arrow map of one row in one task, as a step's kernel is,
  submitted as soon as the session exists; it ends once Spark's Python daemon has started
  and forked a worker, and the cold JVM has planned one query;
- ``first SQL job`` (in runs of their own, without the warm-up: ``SPARKWAY_WARM_WORKERS=0``):
  one row through a projection, no Python at all.

A sparkway rerun with new input runs at least one Python task (its stateful kernels),
so ``api`` + ``first Python job`` is the least it takes over Spark's start, before it
reads, computes and writes anything.  Prints min / median / max over the runs, and the
cores other processes used meanwhile.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from machine import Monitor, wait_quiet  # noqa: E402
from run import ROOT, child_env  # noqa: E402


def child(mode: str) -> None:
    started = time.perf_counter()
    import sparkway as pw

    class Row(pw.Schema):  # noqa: F841 - what loads the API in a program
        a: int

    api = time.perf_counter() - started
    from sparkway.engine.spark import get_spark

    spark = get_spark()
    spark_start = time.perf_counter() - started - api
    submitted = time.perf_counter()
    if mode == "python":
        spark.range(1, numPartitions=1).mapInArrow(_same, "id long").collect()
    else:
        spark.range(1, numPartitions=1).selectExpr("id + 1 AS x").collect()
    print(json.dumps({"api": api, "spark start": spark_start, f"first {mode} job": time.perf_counter() - submitted}))


def _same(batches):
    yield from batches


def run(mode: str, cache: str) -> dict:
    env = child_env(cache)
    if mode == "sql":
        env["SPARKWAY_WARM_WORKERS"] = "0"
    monitor = Monitor()
    process = subprocess.Popen([sys.executable, __file__, "--child", mode], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    monitor.start(process.pid)
    out, _ = process.communicate(timeout=300)
    figures = json.loads(out.strip().splitlines()[-1])
    figures["others (cores)"] = monitor.stop()["others_cores"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quiet-wait", type=float, default=30, help="seconds to wait for a quiet machine first")
    parser.add_argument("--child", choices=["python", "sql"])
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    compileall.compile_dir(os.path.join(ROOT, "sparkway"), quiet=1)  # as an installed package has it
    wait_quiet(args.quiet_wait)
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="spark-floor-") as cache:
        for _ in range(args.runs):
            for mode in ("python", "sql"):  # interleaved: a slow minute of the machine hits both
                for name, value in run(mode, cache).items():
                    results.setdefault(name, []).append(value)
    print(f"{args.runs} fresh processes per kind, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print("| figure (s) | min | median | max |\n| :--- | ---: | ---: | ---: |")
    for name, values in results.items():
        print(f"| {name} | {min(values):.2f} | {statistics.median(values):.2f} | {max(values):.2f} |")


if __name__ == "__main__":
    main()
