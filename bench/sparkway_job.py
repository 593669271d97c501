"""The sparkway programs the benchmarks run, with paths and mode as arguments, and timing
probes.

    python bench/sparkway_job.py --logs DIR --storage DIR --out out.csv \\
        [--pipeline sessions|count] [--mode static|streaming] [--probe probe.jsonl]

Both read a log directory with ``pw.io.csv.read(..., persistent_id="logs")``, write with
``pw.io.csv.write`` and run with ``pw.run`` on a filesystem persistence backend and the
default ``pw.persistence.Config``:

- ``sessions``: the program of seeds 002/003 (``examples/sessions/script.py``), unchanged:
  ``windowby(access_time, session(max_gap=300), instance=user_id).reduce(...)``;
- ``count``: ``groupby(user_id).reduce(user_id, count=pw.reducers.count())``.

``--probe FILE`` appends one JSON line per phase to FILE (flushed at once, so that a
parent process can follow it): ``start`` (when the interpreter got here, after
imports), ``spark`` (SparkSession start), ``open`` (persistence metadata restored),
one ``step`` per engine step (its total wall time, and the parts spent reading the
input, computing the Spark job and writing the sinks on the driver, each second in one
part: a sink written while the job runs counts in ``write``) and ``end`` (with the
driver process's own peak RSS).  The probes wrap methods of the engine from outside (no
change to ``sparkway/``); they cost microseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

STARTED = time.time()

import sparkway as pw  # noqa: E402
from machine import own_peak_rss  # noqa: E402


class InputSchema(pw.Schema):
    user_id: str
    access_time: int


def sessions(table: pw.Table) -> pw.Table:
    """The seed's sessions: visits of a user less than 300 s apart."""
    return table.windowby(
        pw.this.access_time,
        window=pw.temporal.session(max_gap=300),
        instance=pw.this.user_id,
    ).reduce(
        user_id=table.user_id,
        session_length=pw.reducers.max(table.access_time) - pw.reducers.min(table.access_time),
        session_start=pw.reducers.min(table.access_time),
        session_finish=pw.reducers.max(table.access_time),
        count=pw.reducers.count(),
    )


def count(table: pw.Table) -> pw.Table:
    """Log lines per user."""
    return table.groupby(pw.this.user_id).reduce(pw.this.user_id, count=pw.reducers.count())


PIPELINES = {"sessions": sessions, "count": count}


def build(pipeline: str, logs: str, out: str, mode: str) -> None:
    table = pw.io.csv.read(logs, mode=mode, schema=InputSchema, persistent_id="logs")
    pw.io.csv.write(PIPELINES[pipeline](table), out)


class Probe:
    """Appends timing records to a JSON-lines file."""

    def __init__(self, path: str | None) -> None:
        self.file = open(path, "a", encoding="utf-8") if path else None

    def emit(self, kind: str, **fields) -> None:
        if self.file is not None:
            self.file.write(json.dumps({"kind": kind, "at": time.time(), **fields}) + "\n")
            self.file.flush()


def install_probes(probe: Probe) -> None:
    from sparkway.connectors import files, writers
    from sparkway.engine import runner

    parts: dict[str, float] = {}
    # the parts running now, innermost last: a large step writes its sinks a piece at a
    # time while its Spark job runs, and each second counts in the innermost part only
    active: list[str] = []

    def timed(owner, name: str, part: str | None = None):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            if part is not None:
                active.append(part)
            try:
                return original(*args, **kwargs)
            finally:
                took = time.perf_counter() - t0
                if part is not None:
                    active.pop()
                    parts[part] = parts.get(part, 0.0) + took
                    if active:
                        parts[active[-1]] = parts.get(active[-1], 0.0) - took
                else:
                    probe.emit(name.strip("_"), seconds=took)

        setattr(owner, name, wrapper)

    timed(runner, "get_spark")  # -> "get_spark" record
    timed(runner.Runner, "_open")
    timed(files.FileSource, "read", "read")
    timed(runner.Runner, "_compute", "compute")
    # the driver's part of writing a file sink: a sink that takes a time's output in
    # pieces (formatted in Spark's tasks) appends them and commits them there; `write`
    # calls both, so only they are timed, or `write` alone where they do not exist
    sink = writers._FileSink
    for name in ("take_piece", "end_time") if hasattr(sink, "take_piece") else ("write",):
        timed(sink, name, "write")

    original_step = runner.Runner._run_step

    def step(self, spark, location, segments, when, **kwargs):
        parts.clear()
        t0 = time.perf_counter()
        original_step(self, spark, location, segments, when, **kwargs)
        took = time.perf_counter() - t0
        probe.emit("step", step=self.step, seconds=took, files=sum(len(s) for s in segments.values()),
                   **{k: round(v, 4) for k, v in parts.items()})

    runner.Runner._run_step = step


def poll_every(seconds: float) -> None:
    """How often the step loop looks for new files (pw.run has no such parameter: the
    benchmark sets the engine's option, to measure a step's latency, not the poll's)."""
    from sparkway.engine import runner

    original = runner.Runner.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.options.poll_interval_s = seconds

    runner.Runner.__init__ = init


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--logs", required=True)
    parser.add_argument("--storage", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--pipeline", default="sessions", choices=sorted(PIPELINES))
    parser.add_argument("--mode", default="static", choices=["static", "streaming"])
    parser.add_argument("--probe")
    parser.add_argument("--poll-ms", type=int, default=100)
    args = parser.parse_args()
    probe = Probe(args.probe)
    probe.emit("start", seconds=time.time() - STARTED, pid=os.getpid())
    install_probes(probe)
    poll_every(args.poll_ms / 1000)
    build(args.pipeline, args.logs, args.out, args.mode)
    backend = pw.persistence.Backend.filesystem(args.storage)
    pw.run(
        monitoring_level=pw.MonitoringLevel.NONE,
        persistence_config=pw.persistence.Config(backend),
    )
    probe.emit("end", seconds=time.time() - STARTED, driver_peak_rss_bytes=own_peak_rss())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
