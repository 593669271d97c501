"""What ``pw.run`` shows of a run: ``/status`` and ``/metrics`` scraped over HTTP while it
runs, the live view's last picture, a log line per step.  (The live view in a real
terminal, Spark's UI and Ctrl-C: tests/e2e/test_terminal.py.)"""

from __future__ import annotations

import json
import logging
import re
import socket
import urllib.error
import urllib.request

import pytest

import sparkway as pw

pytestmark = pytest.mark.usefixtures("spark")

#: two times, three rows then two: two steps
WORDS = """
   word | __time__
   x    | 2
   y    | 2
   x    | 2
   z    | 4
   x    | 4
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(port: int, path: str) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as reply:
        return reply.read().decode()


def _sample(metrics: str, name: str, **labels: str) -> float:
    """The value of one sample in Prometheus' text format."""
    tags = ",".join(f'{k}="{v}"' for k, v in labels.items())
    wanted = f"{name}{{{tags}}}" if tags else name
    for line in metrics.splitlines():
        if not line.startswith("#") and line.rsplit(" ", 1)[0] == wanted:
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no sample {wanted} in:\n{metrics}")


def _counts() -> pw.Table:
    words = pw.debug.table_from_markdown(WORDS)
    return words.groupby(pw.this.word).reduce(pw.this.word, n=pw.reducers.count())


def test_status_and_metrics_are_served_while_the_program_runs(monkeypatch) -> None:
    port = _free_port()
    monkeypatch.setenv("PATHWAY_MONITORING_HTTP_PORT", str(port))
    scraped: list[tuple[dict, str]] = []  # at the end of each time, from inside the run
    pw.io.subscribe(_counts(), on_change=lambda **kw: None,
                    on_time_end=lambda time: scraped.append((json.loads(_get(port, "/status.json")), _get(port, "/metrics"))))
    pw.run(with_http_server=True, monitoring_level=pw.MonitoringLevel.NONE)

    assert len(scraped) == 2
    (first, first_metrics), (second, second_metrics) = scraped
    assert first["state"] == "running" and first["running_step"]["step"] == 1
    assert [s["name"] for s in first["sources"]] == ["MemoryReader-0"] and first["outputs"][0]["name"] == "subscribe"
    assert first["sources"][0]["total"] == 3 and first["steps"] == 0
    # the second step: all five rows read; the first step's two changes (x: 2, y: 1) written
    assert second["sources"][0]["total"] == 5 and second["outputs"][0]["total"] == 2
    assert second["last_step"]["step"] == 1 and second["last_step"]["rows_in"] == 3
    assert _sample(second_metrics, "sparkway_input_rows_total", connector="MemoryReader-0") == 5
    assert _sample(second_metrics, "sparkway_output_rows_total", output="subscribe") == 2
    assert _sample(second_metrics, "sparkway_steps_total") == 1
    assert _sample(first_metrics, "sparkway_steps_total") == 0
    assert 0 <= _sample(second_metrics, "input_latency_ms") <= _sample(second_metrics, "output_latency_ms")
    assert second_metrics.endswith("# EOF\n")

    with pytest.raises(urllib.error.URLError):  # the server ends with the run
        _get(port, "/metrics")


def test_status_serves_the_metrics_as_pathway_does_and_other_paths_are_not_found(monkeypatch) -> None:
    port = _free_port()
    monkeypatch.setenv("PATHWAY_MONITORING_HTTP_PORT", str(port))
    seen: list[tuple[str, str, int]] = []

    def look(time: int) -> None:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=30) as reply:
            body = reply.read().decode()
            seen.append((reply.headers["Content-Type"], body.splitlines()[-1], _sample(body, "sparkway_steps_total")))
        with pytest.raises(urllib.error.HTTPError, match="404"):
            _get(port, "/nothing")

    pw.io.subscribe(_counts(), on_change=lambda **kw: None, on_time_end=look)
    pw.run(with_http_server=True, monitoring_level=pw.MonitoringLevel.NONE)
    assert [(kind.split(";")[0], last, steps) for kind, last, steps in seen] == [
        ("application/openmetrics-text", "# EOF", 0), ("application/openmetrics-text", "# EOF", 1)
    ]


def test_a_taken_port_is_a_warning_and_the_run_goes_on(monkeypatch, caplog) -> None:
    with socket.socket() as taken:
        taken.bind(("", 0))
        taken.listen()
        monkeypatch.setenv("PATHWAY_MONITORING_HTTP_PORT", str(taken.getsockname()[1]))
        rows: list[dict] = []
        pw.io.subscribe(_counts(), on_change=lambda key, row, time, is_addition: rows.append(row))
        with caplog.at_level(logging.WARNING, logger="sparkway"):
            pw.run(with_http_server=True, monitoring_level=pw.MonitoringLevel.NONE)
    assert any("PATHWAY_MONITORING_HTTP_PORT" in r.getMessage() for r in caplog.records)
    assert rows, "the run computed its output"


def test_the_live_view_leaves_its_last_picture(capsys) -> None:
    pw.io.subscribe(_counts(), on_change=lambda **kw: None)
    pw.run(monitoring_level=pw.MonitoringLevel.IN_OUT)  # stdout is not a terminal: the last picture only
    picture = capsys.readouterr().out
    source = re.search(r"MemoryReader-0 +(\S+) +(\S+) +(\S+)", picture)
    output = re.search(r"subscribe +(\S+) +(\S+) +(\S+)", picture)
    assert source is not None and output is not None, picture
    assert source.group(1) == "finished" and source.group(3) == "5"
    # the second step: z new, x: 2 -> 3 (a retraction and an insertion); 5 changes in all
    assert output.groups() == ("3", "5", "5")
    assert "finished" in picture.splitlines()[0] and "steps: 2" in picture


def test_no_view_at_level_none_and_by_default_off_a_terminal(capsys) -> None:
    pw.io.subscribe(_counts(), on_change=lambda **kw: None)
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)
    pw.io.subscribe(_counts(), on_change=lambda **kw: None)
    pw.run()  # AUTO: stdout is captured, not a terminal
    assert "MemoryReader" not in capsys.readouterr().out


def test_each_step_is_logged_with_its_rows_and_time(caplog) -> None:
    pw.io.subscribe(_counts(), on_change=lambda **kw: None)
    with caplog.at_level(logging.INFO, logger="sparkway"):
        pw.run(monitoring_level=pw.MonitoringLevel.NONE)
    steps = [m.groups() for r in caplog.records
             if (m := re.fullmatch(r"Step (\d+) \(time (\d+)\): (\d+) rows in, (\d+) changes out, [\d.]+ s", r.getMessage()))]
    assert steps == [("1", "2", "3", "2"), ("2", "4", "2", "3")]
