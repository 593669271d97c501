"""A real PostgreSQL server for the tests, started once per session on loopback.

``postgres_server`` runs ``initdb`` into a temporary folder and starts the server on
127.0.0.1 on a free port (trust authentication, fsync off: test data need not survive
a power cut).  ``postgres`` gives each test a database of its own and yields its
connection settings in the dict form ``pw.io.postgres`` takes.

The server binaries are looked up on PATH, then in /usr/lib/postgresql/*/bin.  When
they are missing the fixture fails (it does not skip): ``scripts/setup.sh
--test-services`` installs them.  As root, the server runs as the ``postgres`` user,
because PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services import free_port

SERVER_USER = "postgres"
_database_numbers = itertools.count()


def find_bin_dir() -> Path | None:
    """The folder holding initdb and pg_ctl, or None."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(os.path.realpath(on_path)).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version_key, reverse=True)
    return Path(candidates[0]).parent if candidates else None


def _version_key(path: str) -> int:
    version = Path(path).parent.parent.name
    return int(version) if version.isdigit() else 0


class PostgresServer:
    """One PostgreSQL cluster in a temporary folder, reachable on 127.0.0.1:``port``."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="sparkway-pg-"))
        self.root.chmod(0o755)  # the server user must reach its data folder
        self.data = self.root / "data"
        self.sockets = self.root / "socket"
        self.log = self.root / "server.log"
        self.port = free_port()
        self.as_root = os.geteuid() == 0
        self.user = SERVER_USER if self.as_root else pwd.getpwuid(os.geteuid()).pw_name

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bin_dir / tool), *args]
        if self.as_root:
            command = ["runuser", "-u", SERVER_USER, "--", *command]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise RuntimeError(f"{tool} failed ({proc.returncode}): {proc.stderr}{proc.stdout}\n{log}")

    def start(self) -> None:
        self.data.mkdir()
        self.sockets.mkdir()
        self.log.touch()
        if self.as_root:
            for path in (self.data, self.sockets, self.log):
                shutil.chown(path, SERVER_USER, SERVER_USER)
        self._run("initdb", "-D", str(self.data), "--auth=trust", "--no-sync", f"--username={self.user}",
                  "--encoding=UTF8", "--locale=C")
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.sockets} "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
        self._run("pg_ctl", "start", "-w", "-D", str(self.data), "-l", str(self.log), "-o", options)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate", "-w")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def settings(self, dbname: str = "postgres") -> dict[str, Any]:
        """Connection settings as ``pw.io.postgres`` takes them."""
        return {"host": "127.0.0.1", "port": self.port, "dbname": dbname, "user": self.user,
                "password": "unused"}

    def create_database(self) -> str:
        import psycopg

        name = f"test_{os.getpid()}_{next(_database_numbers)}"
        with psycopg.connect(**self.settings(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        pytest.fail("PostgreSQL server binaries (initdb, pg_ctl) not found: run scripts/setup.sh "
                    "--test-services (it installs the apt package postgresql)")
    server = PostgresServer(bin_dir)
    try:
        server.start()
    except BaseException:
        shutil.rmtree(server.root, ignore_errors=True)
        raise
    yield server
    server.stop()


@pytest.fixture
def postgres(postgres_server: PostgresServer) -> dict[str, Any]:
    """Settings of a new, empty database for this test."""
    return postgres_server.settings(postgres_server.create_database())
