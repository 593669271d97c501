"""The benchmarks still run: ``bench/run.py``'s throughput section end to end at a tiny
size (both pipelines, each next to its plain PySpark job and the tuned variant), its W3
section (sparkway and the plain job alternating), and its output comparison can tell
outputs apart.  Nothing else exercises ``bench/``, and it broke silently before."""

from __future__ import annotations

import glob
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROWS = 2_000  # 40 users; 2 new rows (0.1%) for the rerun


@pytest.mark.subprocess
def test_throughput_runs_end_to_end(tmp_path: Path, python_env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--only", "throughput", "--sizes", str(ROWS),
         "--no-noop", "--no-cold", "--attached", "--tuned-baseline", "--quiet-wait", "0",
         "--work", str(tmp_path / "data"), "--results", str(tmp_path / "results")],
        env=python_env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [raw] = glob.glob(str(tmp_path / "results" / "*.json"))
    results = json.loads(Path(raw).read_text())
    assert [(r["pipeline"], r["rows"]) for r in results["throughput"]] == [("sessions", ROWS), ("count", ROWS)]
    for r in results["throughput"]:
        for run in ("first_run", "rerun", "plain", "plain_tuned", "attached_first", "attached"):
            assert r[run]["status"] == "ok", (r["pipeline"], run, r[run])
            assert r[run]["seconds"] > 0 and r[run]["peak_rss_bytes"] > 0 and "others_cores" in r[run]
        assert r["new_rows"] == 2 and r["input_bytes"] > 0 and r["state_bytes"] > 0
        assert r["outputs_agree"] is True, r["pipeline"]
        assert all(value is not None for value in r["ratios"].values()), r["ratios"]
        # the plain job's output covers every row read: 2,000 of history + 2 new ones
        plain = tmp_path / "data" / f"throughput-{ROWS}" / r["pipeline"] / "plain_out"
        counts = [int(line.split(",")[-1]) for part in plain.glob("*.csv") for line in part.read_text().splitlines()[1:]]
        assert sum(counts) == ROWS + 2
    # one size: no rerun growth; no hot key, no huge run
    assert sorted((t["pipeline"], t["target"]) for t in results["targets"]) == sorted(
        (pipeline, target) for pipeline in ("sessions", "count") for target in (
            "first run / PySpark job (wall time)", "peak memory / PySpark job's (process tree RSS)",
            "rerun / PySpark full recompute", "persisted operator state / input bytes",
            "rerun, own Spark: seconds over Spark's start (issue 11)",
            "rerun, attached to a server: seconds over Spark's start (issue 11)"))
    assert r["plain"]["driver_peak_rss_bytes"] > 0
    markdown = (tmp_path / "results" / "latest.md").read_text()
    assert "## Targets (issues 10, 11, 35)" in markdown and "### count" in markdown and "### sessions" in markdown
    assert "PySpark tuned (s)" in markdown and "-XX:+UseSerialGC" in markdown


W3_SIZES = (2_000, 4_000)


@pytest.mark.subprocess
def test_w3_runs_end_to_end(tmp_path: Path, python_env: dict[str, str]) -> None:
    """W3 at two tiny sizes, one run of each system per size: every run writes exactly the
    rows the filter keeps, and the report has the section and its targets."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--only", "w3", "--w3-sizes", ",".join(map(str, W3_SIZES)),
         "--w3-runs", "1", "--quiet-wait", "0", "--work", str(tmp_path / "data"),
         "--results", str(tmp_path / "results")],
        env=python_env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [raw] = glob.glob(str(tmp_path / "results" / "*.json"))
    results = json.loads(Path(raw).read_text())
    assert [r["rows"] for r in results["w3"]] == list(W3_SIZES)
    for r in results["w3"]:
        assert 0.4 * r["rows"] < r["kept"] < 0.6 * r["rows"], r["kept"]  # the filter keeps about half
        assert r["rows_agree"] is True
        assert set(r["runs"]) == {"sparkway", "plain"}
        for system, [run] in r["runs"].items():
            assert run["status"] == "ok", (system, run)
            assert run["rows_written"] == r["kept"] and run["output_bytes"] > 0
            assert 0 < run["driver_peak_rss_bytes"] < run["peak_rss_bytes"], (system, run)
        assert all(r["ratios"][key] is not None for key in ("time_over_plain", "memory_over_plain"))
    assert [t["target"] for t in results["targets"]] == [
        "W3 wall time / plain PySpark job's (medians; issue 35)",
        "W3 peak memory / plain job's (process tree RSS; issue 35)",
        "W3 driver's own peak RSS: largest / smallest size (issue 35)",
        "W3 rows written: sparkway's / the plain job's (issue 35)",
        "W3 rows written: sparkway's / the plain job's (issue 35)"]
    assert all(t["met"] for t in results["targets"] if t["target"].startswith("W3 rows written"))
    assert "## 5. W3: output-heavy, stateless (issue 35)" in (tmp_path / "results" / "latest.md").read_text()


@pytest.mark.subprocess
def test_latency_runs_end_to_end(tmp_path: Path, python_env: dict[str, str]) -> None:
    """``bench/latency.py`` with sparkway and Structured Streaming (Pathway would need its
    own environment), both pipelines: every step's probe key is found in each output."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "latency.py"), "--keys", "300", "--steps", "2", "--warmup", "1",
         "--systems", "sparkway,spark", "--quiet-wait", "0", "--work", str(tmp_path / "data"),
         "--results", str(tmp_path / "results")],
        env=python_env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [raw] = glob.glob(str(tmp_path / "results" / "latency-*.json"))
    results = json.loads(Path(raw).read_text())
    assert [(r["pipeline"], r["system"], r["keys"], r["status"]) for r in results["results"]] == [
        ("count", "sparkway", 300, "ok"), ("count", "spark", 300, "ok"), ("sessions", "sparkway", 300, "ok")]
    for r in results["results"]:
        assert len(r["latencies_s"]) == 3 and 0 < r["p50_s"] <= r["p99_s"] and r["ready_s"] > 0 and r["peak_rss_bytes"] > 0
    assert {t["target"] for t in results["targets"]} >= {"p50 latency (s)", "peak RSS / Structured Streaming's"}
    assert "## Targets (issue 11)" in (tmp_path / "results" / "latency-latest.md").read_text()


def test_outputs_comparison_sees_a_difference(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
    bench_run = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(bench_run)
    finally:  # run.py puts bench/ on the path for its own modules
        while str(ROOT / "bench") in sys.path:
            sys.path.remove(str(ROOT / "bench"))
    outputs_agree = bench_run.outputs_agree
    # sparkway's update stream: alice counted 1, then 2 (the 1 retracted); bob 1
    (tmp_path / "updates.csv").write_text(
        "user_id,count,time,diff\nalice,1,2,1\nbob,1,2,1\nalice,1,4,-1\nalice,2,4,1\n")
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "part-0.csv").write_text("user_id,count\nbob,1\nalice,2\n")
    assert outputs_agree([str(tmp_path / "updates.csv")], str(plain), ["user_id", "count"])
    (plain / "part-0.csv").write_text("user_id,count\nbob,1\nalice,1\n")
    assert not outputs_agree([str(tmp_path / "updates.csv")], str(plain), ["user_id", "count"])
    (plain / "part-0.csv").write_text("user_id,count\nbob,1\n")
    assert not outputs_agree([str(tmp_path / "updates.csv")], str(plain), ["user_id", "count"])


@pytest.mark.subprocess
def test_commit_bytes_runs_end_to_end(python_env: dict[str, str]) -> None:
    """``bench/commit_bytes.py`` at a tiny size: a row per count of files, and a step
    that adds a file writes far less than the first commit of every file."""
    command = [sys.executable, str(ROOT / "bench" / "commit_bytes.py"), "--files", "40", "400", "--steps", "3"]
    done = subprocess.run(command, env=python_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [line.replace(",", "").split() for line in done.stdout.splitlines()[1:]]
    assert [row[0] for row in rows] == ["40", "400"]
    assert float(rows[1][2]) < float(rows[1][1]) / 20, done.stdout


@pytest.mark.subprocess
def test_spark_floor_runs_end_to_end(python_env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "spark_floor.py"), "--runs", "1", "--quiet-wait", "0"],
                          env=python_env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = {cells[1].strip(): float(cells[3]) for line in done.stdout.splitlines()
            if line.startswith("| ") and (cells := line.split("|"))[3].strip().replace(".", "").isdigit()}
    figures = {"api", "spark start", "first python job", "first sql job"}
    assert figures <= rows.keys() and all(rows[name] > 0 for name in figures), done.stdout
