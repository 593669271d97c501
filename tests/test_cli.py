"""The ``sparkway`` command: --version, cache info / clean, inspect, run."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

import sparkway as pw
from sparkway.api import graph
from sparkway.cli import main


def test_version_names_sparkway_pyspark_and_python(capsys) -> None:
    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"sparkway {version('sparkway')} ") and f"pyspark {version('pyspark')}" in out
    assert f"Python {sys.version.split()[0]}" in out


def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("SPARKWAY_CACHE", str(root))
    monkeypatch.delenv("SPARKWAY_STATE_CACHE", raising=False)
    (root / "state" / "abc").mkdir(parents=True)
    (root / "state" / "abc" / "run.arrow").write_bytes(b"x" * 3 * 2**20)
    (root / "cds").mkdir()
    (root / "cds" / "spark-1.jsa").write_bytes(b"x" * 2**20)
    return root


def test_cache_info_tells_each_part_s_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    root = _cache(tmp_path, monkeypatch)
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"cache: {root}" in out
    assert f"state: {root / 'state'}: 3.0 MB in 1 file(s)" in out
    assert f"cds: {root / 'cds'}: 1.0 MB in 1 file(s)" in out


def test_cache_clean_deletes_the_part_asked_for_or_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    root = _cache(tmp_path, monkeypatch)
    assert main(["cache", "clean", "--cds"]) == 0
    assert not (root / "cds").exists() and (root / "state" / "abc" / "run.arrow").exists()
    assert f"deleted {root / 'cds'} (1.0 MB)" in capsys.readouterr().out
    assert main(["cache", "clean"]) == 0
    assert not (root / "state").exists()


class Words(pw.Schema):
    word: str


@pytest.mark.usefixtures("spark")
def test_inspect_shows_the_last_commit_the_sources_and_the_operators_state(tmp_path: Path, capsys) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("word\nx\ny\nx\n")
    (tmp_path / "in" / "b.csv").write_text("word\nz\n")
    graph.clear()
    words = pw.io.csv.read(tmp_path / "in", schema=Words, mode="static", name="words")
    counts = words.groupby(words.word).reduce(words.word, n=pw.reducers.count())
    pw.io.jsonlines.write(counts, tmp_path / "out.jsonl")
    pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state")))
    capsys.readouterr()

    assert main(["inspect", str(tmp_path / "state")]) == 0
    out = capsys.readouterr().out
    assert f"storage: {tmp_path / 'state'}" in out
    assert "last commit: step 1, time " in out
    assert "words: 4 entries read; 2 file(s) read" in out
    operators = out.split("operators (state in the storage):\n")[1].splitlines()
    assert any("reduce: " in line and "file(s)" in line and ": 0 B" not in line for line in operators), out


def test_inspect_of_a_folder_without_state_says_so(tmp_path: Path, capsys) -> None:
    assert main(["inspect", str(tmp_path)]) == 1
    assert "holds no sparkway program's state" in capsys.readouterr().err


@pytest.mark.subprocess
def test_run_passes_master_conf_and_arguments_to_the_program(tmp_path: Path, python_env: dict[str, str]) -> None:
    program = tmp_path / "prog.py"
    program.write_text(
        "import sys\n"
        "import sparkway as pw\n"
        "from pyspark.sql import SparkSession\n"
        "pw.debug.compute_and_print(pw.debug.table_from_markdown('a\\n1'), include_id=False)\n"
        "spark = SparkSession.getActiveSession()\n"
        "print('partitions', spark.conf.get('spark.sql.shuffle.partitions'))\n"
        "print('master', spark.sparkContext.master)\n"
        "print('args', sys.argv[1:])\n"
    )
    env = {k: v for k, v in python_env.items() if k not in ("SPARKWAY_SPARK_MASTER", "SPARKWAY_SPARK_CONF")}
    proc = subprocess.run(
        [sys.executable, "-m", "sparkway", "run", "--master", "local[1]", "--conf", "spark.sql.shuffle.partitions=7",
         str(program), "first", "--second"],
        env=env, cwd=os.fspath(tmp_path), capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "partitions 7" in proc.stdout and "master local[1]" in proc.stdout, proc.stdout
    assert "args ['first', '--second']" in proc.stdout


def test_server_on_a_spark_without_connect_s_server_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from sparkway.core import spark_releases

    monkeypatch.setattr(spark_releases, "SPARK", (3, 5))
    assert main(["server", "--port", "1"]) == 1
    said = capsys.readouterr().err.strip()
    assert said.startswith("sparkway server: sparkway server (Spark Connect's server") and "\n" not in said
    assert "needs Spark 4.0 or newer; this is Spark" in said
