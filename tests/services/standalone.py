"""A Spark standalone cluster on this machine, started as an administrator starts one, and
the packed Python environment its executors run.

The master and each worker are JVMs of their own, started from the pyspark installation's
``bin/spark-class``, each worker with its own work folder and an environment that has
neither sparkway nor this source tree: executors import sparkway only from the packed
environment a program ships them (``spark.archives`` / ``spark-submit --archives``).

The packed environment is a virtual environment with sparkway's wheel (built from this
checkout) and its dependencies, pyspark excepted (executors import the pyspark of the
Spark that runs them), packed by ``venv-pack``.  The environment without sparkway is kept
in the machine's cache between runs; the wheel is built and installed anew each time.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from services import free_port, listening
from services.spark_connect import spark_home

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 120


def cluster_env() -> dict[str, str]:
    """What the cluster's daemons start with: this machine's basics, no Python settings."""
    keep = ("PATH", "HOME", "JAVA_HOME", "LANG", "TMPDIR")
    return {**{k: os.environ[k] for k in keep if k in os.environ}, "SPARK_LOCAL_IP": "127.0.0.1"}


class StandaloneCluster:
    """A master on a free loopback port and ``workers`` workers of one core each, on
    loopback address ``hosts[i]`` (127.0.0.1 by default: Linux routes all of 127/8 to
    the loopback device, so that workers on 127.0.0.1 and 127.0.0.2 are two hosts to
    Spark, as on two machines: its scheduler, e.g. its speculation, tells hosts apart)."""

    def __init__(self, folder: Path, workers: int = 2, hosts: tuple[str, ...] = ("127.0.0.1",)) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen] = []
        self._start("master", "org.apache.spark.deploy.master.Master",
                    "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(free_port()))
        self._wait(lambda: listening(self.port), "the master")
        for i in range(workers):
            work = folder / f"worker-{i}"
            work.mkdir()
            host = hosts[i % len(hosts)]
            self._start(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", "--host", host,
                        "--webui-port", str(free_port()), "--cores", "1", "--memory", "2g",
                        "--work-dir", str(work), self.url, local_ip=host)
        self._wait(lambda: self.log("master").count("Registering worker") >= workers, f"{workers} workers")

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")

    def _start(self, name: str, main_class: str, *args: str, local_ip: str = "127.0.0.1") -> None:
        with open(self.folder / f"{name}.log", "w") as log:
            self.processes.append(subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), main_class, *args], cwd=self.folder,
                env={**cluster_env(), "SPARK_LOCAL_IP": local_ip}, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True))

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready():
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.processes):
                logs = "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in self.folder.glob("*.log"))
                self.stop()
                raise RuntimeError(f"the standalone cluster did not start ({what}):\n{logs}")
            time.sleep(0.3)

    def executor_folders(self) -> list[Path]:
        """The work folders of the executors the workers launched (app/executor)."""
        return sorted(p for p in self.folder.glob("worker-*/app-*/*") if p.is_dir())

    def stop(self) -> None:
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def _requirements() -> list[str]:
    """sparkway's requirements but pyspark."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [r for r in project["dependencies"] if not r.startswith("pyspark")]


def packed_environment(folder: Path) -> Path:
    """``folder/environment.tar.gz``: the executors' environment with this checkout's sparkway."""
    cache = Path(os.environ.get("SPARKWAY_CACHE") or Path.home() / ".cache" / "sparkway") / "venvs"
    cache.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha1("\n".join(_requirements()).encode()).hexdigest()[:12]
    venv = cache / f"executors-{key}"
    archive = folder / "environment.tar.gz"
    with open(cache / f"executors-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one test process at a time builds or packs it
        if not (venv / ".complete").exists():
            subprocess.run(["rm", "-rf", str(venv)], check=True)
            _run([sys.executable, "-m", "venv", str(venv)])
            _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *_requirements()])
            (venv / ".complete").touch()
            for old in cache.glob("executors-*"):
                if old.is_dir() and old != venv:
                    subprocess.run(["rm", "-rf", str(old)], check=True)
        wheels = folder / "wheel"
        _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(ROOT)])
        wheel = next(wheels.glob("sparkway-*.whl"))
        _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall",
              str(wheel)])
        _run([str(Path(sys.executable).parent / "venv-pack"), "--quiet", "--prefix", str(venv), "--output",
              str(archive)])
    return archive


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        said = "\n".join(line for line in done.stderr.splitlines() if not re.match(r"WARNING: Location", line))
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{said[-4000:]}")


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    cluster = StandaloneCluster(tmp_path_factory.mktemp("standalone"))
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def executor_environment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return packed_environment(tmp_path_factory.mktemp("packed"))
