"""Streaming latency and memory (issue 11): sparkway, Pathway 0.33 and Spark Structured
Streaming side by side, in one invocation, on a streaming groupby-count and on the
streaming sessions pipeline of seeds 002/003.

    .venv/bin/python bench/latency.py [--keys 50000,5000000] [--steps 20] [--pipelines count,sessions]
        [--systems sparkway,pathway,spark] [--work DIR] [--results DIR]

For each pipeline, size of state (``--keys`` distinct user ids, one row each, in ten CSV
files that are in the watched folder when the process starts) and system, one process
(``bench/streaming_job.py`` for sparkway and Pathway, ``bench/streaming_spark.py`` for
Structured Streaming with its RocksDB state store, count only: Structured Streaming
refuses the update output mode for session windows, SPARK-36463, and in append mode a
session comes out only once the watermark has passed its end, a step later at best):

- ``ready_s``: from the start of the process until its output file shows the count of a
  probe key of the history (start-up and reading the history);
- then ``--steps`` times: a file of 1,000 rows (999 of existing keys, one of a new probe
  key) is written next to the watched folder and renamed into it; the step's latency is
  the time from just before the rename until the probe key's count appears in the output
  file, which the benchmark reads every 2 ms from outside the process.  A step starts
  when the previous one was seen and the process had half a second to settle; the first
  ``--warmup`` steps are not counted;
- p50 and p99 of the counted latencies (nearest rank: of 20 steps, p99 is the largest),
  the peak RSS of the process tree over the whole run, and the CPU that other processes
  used meanwhile (``machine.Monitor``).

Each system runs with its defaults, as a user starts it (sparkway and Pathway poll the
folder on their own schedule; Spark's file stream lists it before each micro-batch).
Pathway runs from a virtual environment of its own, ``--pathway-python``, by default one
made on first use under ``$SPARKWAY_CACHE/bench/pathway-0.33.0`` (``pip install
pathway==0.33.0``).  Results: ``latency-<UTC>.json`` and ``.md`` in ``--results`` (and
``latency-latest.md``), with issue 11's latency and memory targets.
"""

from __future__ import annotations

import argparse
import compileall
import datetime as _dt
import json
import itertools
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import machine  # noqa: E402

PATHWAY = "0.33.0"
SYSTEMS = ("sparkway", "pathway", "spark")
#: the systems that run each pipeline (see above for Structured Streaming's sessions)
PIPELINES = {"count": SYSTEMS, "sessions": ("sparkway", "pathway")}
NAMES = {"sparkway": "sparkway", "pathway": f"Pathway {PATHWAY}", "spark": "Structured Streaming (RocksDB)"}
STEP_ROWS = 1_000
HISTORY_FILES = 10
#: issue 11's targets
P50_S, P99_S = 0.3, 0.6


def user(i: int) -> str:
    return f"u{i:08d}"


def probe(step: int) -> str:
    """A key of its own per step, found in the output by its text alone (``p000012q``
    is no prefix of another probe)."""
    return f"p{step:06d}q"


def write_history(folder: str, keys: int) -> None:
    """``keys`` rows, one per key, in ``HISTORY_FILES`` files; the last row is probe 0."""
    os.makedirs(folder)
    per_file = -(-keys // HISTORY_FILES)
    for f in range(HISTORY_FILES):
        with open(os.path.join(folder, f"history-{f:02d}.csv"), "w", encoding="utf-8") as out:
            out.write("user_id,access_time\n")
            out.writelines(f"{user(i)},{i}\n" for i in range(f * per_file, min(keys, (f + 1) * per_file)))
            if f == HISTORY_FILES - 1:
                out.write(f"{probe(0)},0\n")


def write_step(staging: str, keys: int, step: int, rng: random.Random) -> str:
    path = os.path.join(staging, f"step-{step:04d}.csv")
    with open(path, "w", encoding="utf-8") as out:
        out.write("user_id,access_time\n")
        out.writelines(f"{user(rng.randrange(keys))},{step}\n" for _ in range(STEP_ROWS - 1))
        out.write(f"{probe(step)},{step}\n")
    return path


class OutputWatch:
    """Follows a growing output file: ``wait_for`` returns when a text appears in it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0
        self.tail = b""

    def wait_for(self, text: str, deadline: float, alive) -> float | None:
        """The monotonic time at which ``text`` was seen; None at the deadline or when
        ``alive()`` says the process ended."""
        wanted = text.encode()
        while time.monotonic() < deadline:
            new = self._read()
            if new:
                seen = self.tail + new
                if wanted in seen:
                    found = time.monotonic()
                    self.tail = seen[seen.index(wanted) + len(wanted):][-64:]
                    return found
                self.tail = seen[-64:]
            elif not alive():
                return None
            time.sleep(0.002)
        return None

    def _read(self) -> bytes:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return b""
        self.offset += len(data)
        return data


def command(system: str, pipeline: str, work: str, pathway_python: str | None) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ, SPARK_LOCAL_IP=os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"))
    inputs, out = os.path.join(work, "in"), os.path.join(work, "out.csv")
    if system == "spark":
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        return [sys.executable, os.path.join(HERE, "streaming_spark.py"), "--input", inputs, "--out", out,
                "--checkpoint", os.path.join(work, "checkpoint")], env
    if system == "pathway":
        env.pop("PYTHONPATH", None)
        return [pathway_python, os.path.join(HERE, "streaming_job.py"), "--engine", "pathway",
                "--pipeline", pipeline, "--input", inputs, "--out", out], env
    env["PYTHONPATH"] = ROOT
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    return [sys.executable, os.path.join(HERE, "streaming_job.py"), "--engine", "sparkway",
            "--pipeline", pipeline, "--input", inputs, "--out", out], env


def measure(system: str, pipeline: str, keys: int, args: argparse.Namespace) -> dict:
    work = os.path.join(args.work, f"{pipeline}-{system}-{keys}")
    shutil.rmtree(work, ignore_errors=True)
    write_history(os.path.join(work, "in"), keys)
    staging = os.path.join(work, "staging")
    os.makedirs(staging)
    argv, env = command(system, pipeline, work, args.pathway_python)
    rng = random.Random(keys)
    with open(os.path.join(work, "process.log"), "wb") as log:
        started = time.monotonic()
        proc = subprocess.Popen(argv, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        monitor = machine.Monitor()
        monitor.start(proc.pid)
        watch = OutputWatch(os.path.join(work, "out.csv"))
        alive = lambda: proc.poll() is None  # noqa: E731
        result: dict = {"system": system, "pipeline": pipeline, "keys": keys}
        try:
            ready = watch.wait_for(probe(0), started + args.ready_timeout, alive)
            if ready is None:
                result["status"] = _failure(proc, work, "reading the history")
                return result  # with the memory the monitor saw (added below)
            result["ready_s"] = round(ready - started, 2)
            latencies = []
            for step in range(1, args.warmup + args.steps + 1):
                time.sleep(0.5)
                path = write_step(staging, keys, step, rng)
                before = time.monotonic()
                os.rename(path, os.path.join(work, "in", os.path.basename(path)))
                seen = watch.wait_for(probe(step), before + args.step_timeout, alive)
                if seen is None:
                    result.update(status=_failure(proc, work, f"step {step}"), latencies_s=latencies)
                    return result
                latencies.append(round(seen - before, 4))
            counted = sorted(latencies[args.warmup:])
            result.update(status="ok", latencies_s=latencies, p50_s=_rank(counted, 0.50), p99_s=_rank(counted, 0.99),
                          max_s=counted[-1])
        finally:
            _stop(proc)
            result.update(monitor.stop())
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return result


def _rank(ordered: list[float], q: float) -> float:
    """The nearest-rank percentile of sorted values."""
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _failure(proc: subprocess.Popen, work: str, during: str) -> str:
    with open(os.path.join(work, "process.log"), "rb") as f:
        last = f.read().decode(errors="replace").strip().splitlines()[-3:]
    state = "still running" if proc.poll() is None else f"exited with {proc.returncode}"
    return f"failed during {during} ({state}): " + " | ".join(last)


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM (each system stops gracefully on it), then the whole process group."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # Spark's JVM and Python workers too
    except ProcessLookupError:
        pass
    proc.wait()


def pathway_python(folder: str) -> str:
    """Python of a virtual environment with Pathway, made on first use."""
    python = os.path.join(folder, "bin", "python")
    if not os.path.exists(python):
        print(f"   installing pathway=={PATHWAY} into {folder} (once) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", folder], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", f"pathway=={PATHWAY}"], check=True)
    return python


def targets(results: list[dict]) -> list[dict]:
    """Issue 11's latency and memory targets for sparkway, against the others of the run."""
    def of(system: str, pipeline: str, keys: int) -> dict | None:
        found = [r for r in results if (r["system"], r["pipeline"], r["keys"]) == (system, pipeline, keys)
                 and r.get("status") == "ok"]
        return found[0] if found else None

    rows = []
    for pipeline in dict.fromkeys(r["pipeline"] for r in results):
        sizes = sorted({r["keys"] for r in results if r["pipeline"] == pipeline})
        for keys in sizes:
            mine, theirs = of("sparkway", pipeline, keys), of("pathway", pipeline, keys)
            rows.append(_target("p50 latency (s)", pipeline, keys, mine and mine["p50_s"], P50_S))
            rows.append(_target("p99 latency (s)", pipeline, keys, mine and mine["p99_s"], P99_S))
            rows.append(_target(f"p50 / {NAMES['pathway']}'s", pipeline, keys,
                                mine and theirs and round(mine["p50_s"] / theirs["p50_s"], 2), 1.0))
        spark, mine = of("spark", pipeline, sizes[-1]), of("sparkway", pipeline, sizes[-1])
        if spark:
            rows.append(_target("peak RSS / Structured Streaming's", pipeline, sizes[-1],
                                mine and round(mine["peak_rss_bytes"] / spark["peak_rss_bytes"], 2), 1.0))
    return rows


def _target(name: str, pipeline: str, keys: int, value: float | None, limit: float) -> dict:
    return {"target": name, "pipeline": pipeline, "keys": keys, "value": value, "limit": limit,
            "met": None if value is None else value <= limit}


def markdown(results: list[dict], meta: dict) -> str:
    lines = [f"# Streaming latency, {meta['date']}", "",
             f"Machine: {meta['machine']}; commit {meta['commit']}; {meta['steps']} counted steps of "
             f"{STEP_ROWS:,} rows after {meta['warmup']} warm-up step(s) per run.", "",
             "| pipeline | system | keys of state | ready (s) | p50 (s) | p99 (s) | max (s) | peak RSS (GB) | others (cores) | status |",
             "| :--- | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :--- |"]
    for r in results:
        gb = r.get("peak_rss_bytes", 0) / 2**30
        lines.append(f"| {r['pipeline']} | {NAMES[r['system']]} | {r['keys']:,} | {r.get('ready_s', 'n/a')} | {r.get('p50_s', 'n/a')} | "
                     f"{r.get('p99_s', 'n/a')} | {r.get('max_s', 'n/a')} | {gb:.2f} | {r.get('others_cores', 'n/a')} | "
                     f"{r.get('status')} |")
    lines += ["", "## Targets (issue 11)", "", "| target | pipeline | keys | measured | target | met |",
              "| :--- | :--- | ---: | ---: | ---: | :--- |"]
    for t in meta["targets"]:
        met = "n/a" if t["met"] is None else "yes" if t["met"] else "**no**"
        lines.append(f"| {t['target']} | {t['pipeline']} | {t['keys']:,} | {t['value'] if t['value'] is not None else 'n/a'} | <= {t['limit']} | {met} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    cache = os.environ.get("SPARKWAY_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "sparkway")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", default="50000,5000000", help="sizes of the state: distinct keys, comma-separated")
    parser.add_argument("--steps", type=int, default=20, help="counted steps per run")
    parser.add_argument("--warmup", type=int, default=2, help="steps not counted, first")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"of {', '.join(SYSTEMS)}")
    parser.add_argument("--pipelines", default=",".join(PIPELINES), help=f"of {', '.join(PIPELINES)}")
    parser.add_argument("--pathway-python", help="a Python with pathway==0.33.0 (default: a venv made on first use)")
    parser.add_argument("--work", default=os.path.join(HERE, "data", "latency"))
    parser.add_argument("--results", default=os.path.join(HERE, "results"))
    parser.add_argument("--ready-timeout", type=float, default=1200.0, help="seconds to read the history")
    parser.add_argument("--step-timeout", type=float, default=60.0)
    parser.add_argument("--quiet-wait", type=float, default=30.0, help="seconds to wait for an idle machine per run")
    parser.add_argument("--keep", action="store_true", help="keep each run's folder (logs, output)")
    args = parser.parse_args(argv)
    systems = args.systems.split(",")
    unknown = set(systems) - set(SYSTEMS)
    if unknown:
        parser.error(f"--systems: unknown {', '.join(sorted(unknown))}; choose among {', '.join(SYSTEMS)}")
    if set(args.pipelines.split(",")) - set(PIPELINES):
        parser.error(f"--pipelines: choose among {', '.join(PIPELINES)}")
    if "pathway" in systems and args.pathway_python is None:
        args.pathway_python = pathway_python(os.path.join(cache, "bench", f"pathway-{PATHWAY}"))
    compileall.compile_dir(os.path.join(ROOT, "sparkway"), quiet=1)  # as an installed package has it
    results = []
    for pipeline, keys, system in itertools.product(args.pipelines.split(","), [int(k) for k in args.keys.split(",")],
                                                    systems):
        if system not in PIPELINES[pipeline]:
            continue
        machine.wait_quiet(args.quiet_wait)
        print(f"-- {pipeline}: {NAMES[system]}, {keys:,} keys ...", flush=True)
        result = measure(system, pipeline, keys, args)
        results.append(result)
        print(f"   {result.get('status')}: ready {result.get('ready_s')} s, p50 {result.get('p50_s')} s, "
              f"p99 {result.get('p99_s')} s, peak RSS {result.get('peak_rss_bytes', 0) / 2**30:.2f} GB "
              f"(others {result.get('others_cores')} cores)", flush=True)
    now = _dt.datetime.now(_dt.timezone.utc)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    meta = {"date": now.strftime("%Y-%m-%d %H:%M UTC"), "machine": f"{os.cpu_count()} cores", "commit": commit,
            "steps": args.steps, "warmup": args.warmup, "targets": targets(results)}
    os.makedirs(args.results, exist_ok=True)
    stem = os.path.join(args.results, "latency-" + now.strftime("%Y%m%dT%H%M%SZ"))
    with open(stem + ".json", "w", encoding="utf-8") as f:
        json.dump({**meta, "results": results}, f, indent=1)
    text = markdown(results, meta)
    for path in (stem + ".md", os.path.join(args.results, "latency-latest.md")):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
