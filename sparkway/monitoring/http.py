"""``pw.run(with_http_server=True)``: the run's metrics over HTTP for Prometheus, on
``/metrics`` and ``/status`` (as Pathway serves them, on port 20000 or
``$PATHWAY_MONITORING_HTTP_PORT``), and everything the live view shows as JSON on
``/status.json``."""

from __future__ import annotations

import json
import logging
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sparkway.monitoring.stats import RunStats

log = logging.getLogger("sparkway")

DEFAULT_PORT = 20000


def configured_port() -> int:
    """``$PATHWAY_MONITORING_HTTP_PORT``, else 20000."""
    return int(os.environ.get("PATHWAY_MONITORING_HTTP_PORT", DEFAULT_PORT))


class MonitoringServer:
    """Serves ``stats`` while the ``with`` block runs, from a thread of its own.  A port
    that is taken is a warning, not a failure: the run matters more than its metrics.

    >>> import urllib.request
    >>> stats = RunStats(sources=["CsvFilesystemReader-logs"], outputs=["out.csv"])
    >>> with MonitoringServer(stats, port=0) as server:
    ...     reply = urllib.request.urlopen(f"http://127.0.0.1:{server.port}/status.json")
    ...     json.load(reply)["sources"][0]["name"]
    'CsvFilesystemReader-logs'
    """

    def __init__(self, stats: RunStats, port: int | None = None) -> None:
        self.stats = stats
        self.port = configured_port() if port is None else port
        self._server: ThreadingHTTPServer | None = None

    def __enter__(self) -> MonitoringServer:
        class Handler(_Handler):  # a class per server: http.server makes its handlers itself
            stats = self.stats

        try:
            self._server = ThreadingHTTPServer(("", self.port), Handler)
        except OSError as error:
            log.warning("The monitoring HTTP server cannot listen on port %d (%s): set "
                        "PATHWAY_MONITORING_HTTP_PORT to a free port; the run goes on without it",
                        self.port, error.strerror or error)
            return self
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, name="sparkway-http", daemon=True).start()
        log.info("Monitoring: http://localhost:%d/status and /metrics", self.port)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


class _Handler(BaseHTTPRequestHandler):
    stats: RunStats

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        path = self.path.split("?")[0].rstrip("/")
        if path in ("/status", "/metrics"):  # as Pathway: the same metrics on both
            self._reply(200, OPENMETRICS, openmetrics_text(self.stats.snapshot()))
        elif path == "/status.json":
            self._reply(200, "application/json", json.dumps(self.stats.snapshot(), indent=1) + "\n")
        else:
            self._reply(404, "text/plain; charset=utf-8", "sparkway serves /metrics, /status and /status.json\n")

    def _reply(self, code: int, kind: str, body: str) -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # a scraper's every request is not news
        pass


OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def openmetrics_text(view: dict[str, Any]) -> str:
    """The numbers of ``RunStats.snapshot`` in the OpenMetrics text format, which
    Prometheus scrapes: Pathway's ``input_latency_ms`` and ``output_latency_ms``, and
    sparkway's rows and steps.

    >>> stats = RunStats(sources=["reader"], outputs=["out.csv"])
    >>> print(openmetrics_text(stats.snapshot()).splitlines()[8])
    sparkway_input_rows_total{connector="reader"} 0
    """
    lines: list[str] = []

    def family(name: str, kind: str, help: str, samples: list[tuple[dict[str, str], float]]) -> None:
        lines.append(f"# HELP {name} {help}")
        lines.append(f"# TYPE {name} {kind}")
        sample = f"{name}_total" if kind == "counter" else name
        for labels, value in samples:
            tags = ",".join(f'{k}="{_escaped(v)}"' for k, v in labels.items())
            lines.append(f"{sample}{{{tags}}} {_number(value)}" if tags else f"{sample} {_number(value)}")

    family("input_latency_ms", "gauge", "How far the input in the engine is behind the wall clock, in ms (-1: the run is over).",
           [({}, view["input_latency_ms"])])
    family("output_latency_ms", "gauge", "How far the written output is behind the wall clock, in ms (-1: the run is over).",
           [({}, view["output_latency_ms"])])
    family("sparkway_input_rows", "counter", "Rows read by a source since the run started.",
           [({"connector": s["name"]}, s["total"]) for s in view["sources"]])
    family("sparkway_output_rows", "counter", "Changes written to an output since the run started.",
           [({"output": o["name"]}, o["total"]) for o in view["outputs"]])
    family("sparkway_steps", "counter", "Steps done since the run started.", [({}, view["steps"])])
    last = view["last_step"]
    family("sparkway_last_step_seconds", "gauge", "How long the last step took, from its input to its output written.",
           [({}, last["seconds"])] if last else [])
    running = view["running_step"]
    family("sparkway_running_step_seconds", "gauge", "How long the running step has run (0: none runs).",
           [({}, running["seconds"] if running else 0)])
    return "\n".join(lines) + "\n# EOF\n"


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)
