"""The numbers of a run: rows per source and per output, steps and their durations, the
Spark stages of the running step.  The step loop writes them; the live view and the HTTP
endpoints read a consistent copy (``snapshot``) from other threads."""

from __future__ import annotations

import statistics
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: "in the last minute" counts and step durations cover this many seconds
WINDOW_S = 60.0


@dataclass
class _Flow:
    """Rows through one source or output."""

    total: int = 0
    this_step: int = 0
    last_step: int = 0
    recent: deque[tuple[float, int]] = field(default_factory=deque)  # (monotonic time, rows)
    finished: bool = False

    def add(self, rows: int, now: float) -> None:
        self.total += rows
        self.this_step += rows
        self.recent.append((now, rows))

    def last_minute(self, now: float) -> int:
        while self.recent and self.recent[0][0] < now - WINDOW_S:
            self.recent.popleft()
        return sum(rows for _, rows in self.recent)

    def as_json(self, name: str, now: float) -> dict[str, Any]:
        return {"name": name, "last_step": self.last_step, "last_minute": self.last_minute(now),
                "total": self.total, "finished": self.finished}


class RunStats:
    """What a run has done so far.

    >>> stats = RunStats(sources=["CsvFilesystemReader-logs"], outputs=["out.csv"])
    >>> stats.step_started(1, time=1700000000000)
    >>> stats.read("CsvFilesystemReader-logs", 1000)
    >>> stats.wrote("out.csv", 20)
    >>> stats.step_ended()["rows_in"]
    1000
    >>> view = stats.snapshot()
    >>> view["steps"], view["sources"][0]["last_step"], view["outputs"][0]["total"]
    (1, 1000, 20)
    """

    def __init__(self, sources: list[str], outputs: list[str]) -> None:
        self._lock = threading.Lock()
        self.started_at = time.time()
        self._sources = {name: _Flow() for name in sources}
        self._outputs = {name: _Flow() for name in outputs}
        self._steps = 0
        self._running: dict[str, Any] | None = None  # the step under way: number, time, start
        self._last: dict[str, Any] | None = None
        self._durations: deque[tuple[float, float]] = deque()  # (monotonic end, seconds)
        self._stages: Callable[[], list[dict[str, Any]]] = list
        # the input up to this wall-clock time is in the engine, and its output written:
        # the last look for input (that found none, for the output)
        self._input_frontier = self._output_frontier = self.started_at
        self.state = "starting"  # starting, running, finished, stopped, failed
        self.spark: dict[str, Any] = {}  # master, ui

    # -- written by the step loop ----------------------------------------------------------
    def watch_spark(self, master: str, ui: str | None, stages: Callable[[], list[dict[str, Any]]]) -> None:
        """Spark has started: its master, its UI's address, and how to ask for the
        running stages."""
        with self._lock:
            self.spark = {"master": master, "ui": ui}
            self._stages = stages
            self.state = "running"

    def looked(self, found: bool) -> None:
        """The step loop looked for input and ``found`` some (a step follows) or not."""
        with self._lock:
            self._input_frontier = time.time()
            if not found and self._running is None:
                self._output_frontier = self._input_frontier

    def step_started(self, step: int, time: int) -> None:
        with self._lock:
            self._running = {"step": step, "time": time, "began": _now(), "covers": self._input_frontier}

    def read(self, source: str, rows: int) -> None:
        with self._lock:
            self._sources[source].add(rows, _now())

    def wrote(self, output: str, rows: int) -> None:
        with self._lock:
            self._outputs[output].add(rows, _now())

    def finished(self, source: str) -> None:
        with self._lock:
            self._sources[source].finished = True

    def step_ended(self) -> dict[str, Any]:
        """Closes the running step; returns its record (step, time, seconds, rows in and
        out)."""
        with self._lock:
            assert self._running is not None, "no step is running"
            now = _now()
            flows = [*self._sources.values(), *self._outputs.values()]
            last = {"step": self._running["step"], "time": self._running["time"],
                    "seconds": now - self._running["began"], "ended_at": time.time(),
                    "rows_in": sum(f.this_step for f in self._sources.values()),
                    "rows_out": sum(f.this_step for f in self._outputs.values())}
            for flow in flows:
                flow.last_step, flow.this_step = flow.this_step, 0
            self._durations.append((now, last["seconds"]))
            self._output_frontier = max(self._output_frontier, self._running["covers"])
            self._steps += 1
            self._last, self._running = last, None
            return dict(last)

    def ended(self, how: str) -> None:
        """The run is over: ``finished`` (its input ended), ``stopped`` (a signal) or
        ``failed``."""
        with self._lock:
            self.state, self._running = how, None
            self._stages = list

    # -- read by the views --------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """A JSON-able copy of everything, consistent within itself (``/status``)."""
        stages = self._stage_progress()  # asks Spark: outside the lock
        with self._lock:
            now = _now()
            while self._durations and self._durations[0][0] < now - WINDOW_S:
                self._durations.popleft()
            running = None
            if self._running is not None:
                running = {"step": self._running["step"], "time": self._running["time"],
                           "seconds": now - self._running["began"], "stages": stages}
            live = self.state in ("starting", "running")
            wall = time.time()
            return {
                "state": self.state,
                "started_at": self.started_at,
                "uptime_s": time.time() - self.started_at,
                "spark": dict(self.spark),
                "steps": self._steps,
                "running_step": running,
                "last_step": dict(self._last) if self._last else None,
                "step_seconds_p50_last_minute": (
                    statistics.median(s for _, s in self._durations) if self._durations else None
                ),
                # Pathway's gauges: how far behind the wall clock the engine's input and
                # its written output are, in milliseconds; -1 once the run is over
                "input_latency_ms": round((wall - self._input_frontier) * 1000) if live else -1,
                "output_latency_ms": round((wall - self._output_frontier) * 1000) if live else -1,
                "sources": [flow.as_json(name, now) for name, flow in self._sources.items()],
                "outputs": [flow.as_json(name, now) for name, flow in self._outputs.items()],
            }

    def _stage_progress(self) -> list[dict[str, Any]]:
        with self._lock:
            stages, running = self._stages, self._running is not None
        if not running:
            return []
        try:
            return stages()
        except Exception:  # Spark stopping under us: no stages to show
            return []


def _now() -> float:
    return time.monotonic()
