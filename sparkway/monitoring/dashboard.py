"""The live view of a run in the terminal (``pw.run(monitoring_level=...)``): rows per
source and per output, the last steps' durations, the running step's Spark stages.  Log
lines scroll above it; the last picture stays on the screen when the run ends."""

from __future__ import annotations

import logging
import sys
from types import TracebackType
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from sparkway.monitoring.stats import RunStats

#: redraws per second
REFRESH_PER_SECOND = 4


class Dashboard:
    """Shows ``stats`` while the ``with`` block runs; ``stages=True`` (``MonitoringLevel.ALL``)
    lists every running Spark stage, else their tasks are summed.

    >>> stats = RunStats(sources=["CsvFilesystemReader-logs"], outputs=["out.csv"])
    >>> console = Console(width=100, file=open("/dev/null", "w"), record=True)
    >>> with Dashboard(stats, "prog.py", console=console):
    ...     pass
    >>> "CsvFilesystemReader-logs" in console.export_text()  # the last picture
    True
    """

    def __init__(self, stats: RunStats, program: str, *, stages: bool = False, console: Console | None = None) -> None:
        self.stats, self.program, self.stages = stats, program, stages
        self.live = Live(get_renderable=self.render, console=console, refresh_per_second=REFRESH_PER_SECOND,
                         redirect_stdout=True, redirect_stderr=True)
        self._streams: list[tuple[logging.StreamHandler, Any]] = []

    def __enter__(self) -> Dashboard:
        self.live.start()
        self._log_above_the_view()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.live.refresh()
        for handler, stream in self._streams:
            handler.setStream(stream)
        self.live.stop()

    def _log_above_the_view(self) -> None:
        """Log handlers writing to the terminal write through the live view, which prints
        their lines above the picture (they held the real streams, which it replaced)."""
        terminal = {sys.__stdout__: sys.stdout, sys.__stderr__: sys.stderr}
        for logger in (logging.getLogger(), logging.getLogger("sparkway")):
            for handler in logger.handlers:
                if type(handler) is logging.StreamHandler and handler.stream in terminal:
                    self._streams.append((handler, handler.setStream(terminal[handler.stream])))

    def render(self) -> Group:
        view = self.stats.snapshot()
        return Group(_title(view, self.program), _flows("input", view["sources"]), _flows("output", view["outputs"]),
                     _steps(view), _lag(view), *_running(view, self.stages))


def _title(view: dict[str, Any], program: str) -> Text:
    spark = view["spark"]
    parts = [f"sparkway · {program}", view["state"], _clock(view["uptime_s"])]
    if spark.get("master"):
        parts.append(f"Spark {spark['master']}")
    if spark.get("ui"):
        parts.append(f"UI {spark['ui']}")
    return Text("  ·  ".join(parts), style="bold")


def _flows(kind: str, flows: list[dict[str, Any]]) -> Table:
    table = Table(box=box.SIMPLE, expand=False, pad_edge=False)
    table.add_column(kind, justify="left", no_wrap=True)
    for heading in ("last step", "last minute", "since start"):
        table.add_column(heading, justify="right")
    for flow in flows:
        last = "finished" if flow["finished"] else f"{flow['last_step']:,}"
        table.add_row(flow["name"], last, f"{flow['last_minute']:,}", f"{flow['total']:,}")
    return table


def _steps(view: dict[str, Any]) -> Text:
    last = view["last_step"]
    if last is None:
        return Text(f"steps: {view['steps']}")
    typical = view["step_seconds_p50_last_minute"]
    line = (f"steps: {view['steps']}  ·  last: #{last['step']} (time {last['time']}), "
            f"{last['rows_in']:,} rows in, {last['rows_out']:,} out, took {last['seconds']:.2f} s")
    if typical is not None:
        line += f"  ·  median of the last minute {typical:.2f} s"
    return Text(line)


def _lag(view: dict[str, Any]) -> Text:
    """How far the engine's input and its written output are behind the wall clock."""
    if view["input_latency_ms"] < 0:
        return Text("")
    return Text(f"lag: input {view['input_latency_ms'] / 1000:.1f} s, output {view['output_latency_ms'] / 1000:.1f} s")


def _running(view: dict[str, Any], per_stage: bool) -> list[Any]:
    step = view["running_step"]
    if step is None:
        return [Text("waiting for input" if view["state"] == "running" else "", style="dim")]
    stages = step["stages"]
    done, tasks = sum(s["done"] for s in stages), sum(s["tasks"] for s in stages)
    head = Text(f"step #{step['step']} running for {step['seconds']:.1f} s"
                + (f": Spark tasks {done}/{tasks} in {len(stages)} stage(s)" if stages else ""))
    if not per_stage or not stages:
        return [head]
    table = Table(box=box.SIMPLE, pad_edge=False)
    for heading, justify in (("stage", "right"), ("name", "left"), ("tasks done", "right"), ("running", "right")):
        table.add_column(heading, justify=justify)  # type: ignore[arg-type]
    for stage in stages:
        table.add_row(str(stage["stage"]), stage["name"], f"{stage['done']}/{stage['tasks']}", str(stage["running"]))
    return [head, table]


def _clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"
