"""Spark's own Spark Connect server, as a team runs it, for the tests that attach to it.

The server is started from the installed pyspark's scripts, not by ``sparkway server``:
``sbin/start-connect-server.sh --wait`` where the package has it (Spark 4.1 on), else the
``spark-submit`` of the server's class that the script runs.  Its Python workers run this
interpreter with this source tree on their path, which is what a server needs to run
sparkway's programs (docs/spark-releases.md).  pyspark 3.5's package has no Connect
server (its jar is a separate download from Maven): the fixture then skips, saying so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from services import free_port, listening

ROOT = Path(__file__).resolve().parents[2]
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT_S = 180


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def server_command(home: Path, port: int) -> list[str]:
    """The command that starts the server in the foreground on loopback port ``port``."""
    script = home / "sbin" / "start-connect-server.sh"
    start = ([str(script), "--wait"] if script.exists()
             else [str(home / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--name", "Spark Connect server"])
    return [*start, "--master", "local[2]",
            "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf", f"spark.connect.grpc.binding.port={port}",
            "--conf", "spark.ui.enabled=false"]


class ConnectServer:
    """A running server: its ``address`` (``sc://127.0.0.1:PORT``) and its log."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.address = f"sc://127.0.0.1:{self.port}"
        self.log_path = folder / "server.log"
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
               "PYTHONPATH": os.pathsep.join(p for p in [str(ROOT), os.environ.get("PYTHONPATH", "")] if p),
               # spark-daemon.sh's pid and log files, away from the pyspark package
               "SPARK_PID_DIR": str(folder), "SPARK_LOG_DIR": str(folder)}
        self._log = open(self.log_path, "w+")
        self.process = subprocess.Popen(server_command(spark_home(), self.port), cwd=folder, env=env,
                                        stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_listening()

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"Spark's Connect server did not start:\n{self.log_path.read_text()[-4000:]}")
            if listening(self.port):
                return
            time.sleep(0.3)

    def stop(self) -> None:
        import signal

        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._log.close()


def has_connect_server(home: Path) -> bool:
    return any((home / "jars").glob("spark-connect_*.jar"))


@pytest.fixture(scope="session")
def spark_connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """Spark's own Connect server, one per test process, stopped at the end."""
    import pyspark

    if not has_connect_server(spark_home()):
        pytest.skip(f"pyspark {pyspark.__version__}'s package has no Spark Connect server (no spark-connect jar); "
                    "Spark ships it in its own distribution or through --packages")
    server = ConnectServer(tmp_path_factory.mktemp("spark-connect"))
    yield server
    server.stop()
