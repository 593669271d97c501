"""Shared fixtures: one SparkSession for every in-process test, a clean program per test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from services.kafka import kafka_broker  # noqa: F401
from services.postgres import postgres, postgres_server  # noqa: F401
from services.s3 import s3_bucket, s3_endpoint  # noqa: F401
from services.spark_connect import spark_connect_server  # noqa: F401
from services.standalone import executor_environment, standalone_cluster  # noqa: F401

from e2e.helpers import EXECUTOR_KILLS, KILLS, program_kills

ROOT = Path(__file__).resolve().parents[1]
# the programs the tests run start a Spark of their own, as in CI: only tests/e2e/test_daemon.py
# lets them leave a daemon behind (in a cache folder of its own)
os.environ["SPARKWAY_DAEMON"] = "0"

# corpus programs import pathway (tests/test_corpus.py runs them with sparkway in its place)
collect_ignore_glob = ["corpus/programs/*.py", "corpus/record.py", "corpus/run_attached.py"]


@pytest.fixture(scope="session", autouse=True)
def _state_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Working copies of operator state go to a temporary folder, not ~/.cache."""
    os.environ["SPARKWAY_STATE_CACHE"] = str(tmp_path_factory.mktemp("state-cache"))


@pytest.fixture(params=["small", "large"])
def step_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The two ways a step runs: small steps (input read here, stateful operators work
    through all their rows at once), or large steps (files parsed on the executors, a
    piece each, and stateful operators working through sorted chunks of whole groups).
    Here every step is large, with pieces of about 40 bytes and chunks of 3 rows, so that
    pieces end inside files and chunks inside and between partitions."""
    if request.param == "large":
        monkeypatch.setattr("sparkway.engine.runner.LARGE_STEP_ROWS", 0)
        monkeypatch.setattr("sparkway.engine.stateful.CHUNK_ROWS", 3)
        monkeypatch.setattr("sparkway.connectors.files.EXECUTOR_READ_BYTES", 0)
        monkeypatch.setattr("sparkway.connectors.files.PIECE_BYTES", 40)
    return request.param


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession the in-process tests share (sparkway reuses the active one)."""
    from sparkway.engine.spark import get_spark

    session = get_spark()
    yield session
    session.stop()


@pytest.fixture
def python_env() -> dict[str, str]:
    """Environment for subprocess tests: this interpreter, this source tree."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    env["PYSPARK_PYTHON"] = sys.executable
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 2 MB tmpfs, a disk that fills up (root can mount one; else the test is skipped,
    saying why)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip() or mounted.returncode}): no full disk to try")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A test process of pytest-xdist sends its kills to the controlling one."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["kills"] = dict(KILLS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    KILLS.update(getattr(node, "workeroutput", {}).get("kills", {}))


def pytest_terminal_summary(terminalreporter) -> None:
    """How many programs the session's tests killed (the end-to-end tests that count
    them); here, not in tests/e2e, since pytest-xdist's controlling process collects
    nothing and loads only this conftest."""
    programs = program_kills(KILLS)
    if programs:
        detail = ", ".join(f"{count} {kind}" for kind, count in sorted(programs.items()))
        terminalreporter.write_line(f"programs killed: {sum(programs.values())} ({detail})")
    if KILLS[EXECUTOR_KILLS]:  # a program that lost an executor went on: not a program killed
        executors = KILLS[EXECUTOR_KILLS]
        terminalreporter.write_line(f"executors killed under running programs: {executors} ({EXECUTOR_KILLS})")
