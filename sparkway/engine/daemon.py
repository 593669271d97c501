"""The daemon: a warm local Spark that one user's programs share, so that a rerun skips
Spark's start (as Gradle's and Bazel's daemons do for builds).

A short batch program that would start a local Spark of its own (no master, server or
Spark settings given) attaches to the daemon of its installation when one is ready;
otherwise it runs with a Spark of its own, and leaves a daemon behind as it exits (unless
one is on its way up), for the next runs: no run waits for a daemon, and a daemon on its
way up waits while such runs go on (``daemon_server``).  A daemon is a ``sparkway
server`` on a free port of 127.0.0.1, which admits only clients that present its token.

Each daemon has a folder ``<cache>/daemon/<key>/`` that only its user may enter, where
``key`` names the installation (sparkway's version, folder and sources, pyspark, the
Python of the workers, ``PYTHONPATH``): a program of another installation, or after
sparkway's code changed, gets a daemon of its own, and the daemon of the stale one is
stopped.  In the folder:

* ``daemon.json``: the daemon's pid while it starts, and its port and token once it
  listens;
* ``clients/<pid>``: one file per program attached (a crashed program's pid is dead);
* ``own/<pid>``: one file per program running with a Spark of its own meanwhile, which
  a daemon on its way up lets finish first (on 2 cores, a daemon starting beside such a
  run made it a third slower);
* ``start.lock``: held by a program while it looks for or starts the daemon, and by
  the daemon when it decides to stop, so that no program attaches to a daemon on its
  way out;
* ``daemon.log``: the daemon's output (why it did not start, say);
* ``schemas/``: the schemas of plans that attached programs had the daemon analyse,
  which their reruns read instead (``engine/schema_cache.py``).

A daemon stops after ``SPARKWAY_DAEMON_IDLE`` seconds (default 300) without a program
attached, on ``sparkway daemon stop`` or SIGTERM.  ``SPARKWAY_DAEMON=0`` turns it off, as
does a CI environment (``CI`` and the like), where it would outlive the job.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkway.engine.cache import cache_root

log = logging.getLogger("sparkway")

#: variables that mark a CI job, which a daemon would outlive
CI_VARIABLES = ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "JENKINS_URL", "TF_BUILD", "TEAMCITY_VERSION",
                "CIRCLECI", "TRAVIS")
#: settings of a Spark of the program's own, which a shared daemon would not have
OWN_SPARK_VARIABLES = ("SPARKWAY_SPARK_MASTER", "SPARK_REMOTE", "SPARKWAY_SPARK_CONF", "SPARKWAY_DRIVER_MEMORY",
                       "SPARKWAY_SPARK_UI", "PYSPARK_GATEWAY_PORT")


def wanted() -> bool:
    """Whether this program attaches to a daemon rather than start a Spark of its own."""
    if os.environ.get("SPARKWAY_DAEMON", "1") == "0":
        return False
    if any(os.environ.get(name) for name in CI_VARIABLES + OWN_SPARK_VARIABLES):
        return False
    from sparkway.core.spark_releases import SPARK

    return SPARK >= (4, 0)  # the Connect server's package


@dataclass(frozen=True)
class Daemon:
    """A daemon's folder, and what its ``daemon.json`` says once it listens."""

    folder: Path

    @property
    def record(self) -> dict[str, Any] | None:
        try:
            return json.loads((self.folder / "daemon.json").read_text())
        except (OSError, ValueError):
            return None

    def address(self) -> str | None:
        """The Connect address of the daemon, if it runs and listens."""
        record = self.record
        if record is None or "port" not in record or not alive(record["pid"]) or not _listening(record["port"]):
            return None
        return f"sc://localhost:{record['port']}/;token={record['token']}"

    @property
    def schemas(self) -> Path:
        """The schemas of the plans that programs attached asked for (``engine/schema_cache.py``)."""
        return self.folder / "schemas"

    def starting(self) -> bool:
        """Whether a daemon process runs that does not listen yet."""
        record = self.record
        return record is not None and "port" not in record and alive(record["pid"])

    def clients(self) -> list[int]:
        """The pids of the programs attached, alive."""
        return _live_pids(self.folder / "clients")

    def own_runs(self) -> list[int]:
        """The pids of the programs running with a Spark of their own, alive."""
        return _live_pids(self.folder / "own")

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        with open(self.folder / "start.lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield


def attach() -> tuple[str, Daemon] | None:
    """The address of this installation's daemon and the daemon, with this program
    registered as its client; None when it does not run (then one is started as this
    program exits) or is still on its way up (starting and warming up take longer than a
    Spark of our own)."""
    daemon = Daemon(_folder(installation_key()))
    with daemon.lock():
        address = daemon.address()
        if address is not None:
            _register(daemon, "clients")
            return address, daemon
    _register(daemon, "own")
    atexit.register(_leave_behind, daemon)  # runs before the unregistering (atexit's order)
    return None


def installation_key() -> str:
    """What a daemon's workers must share with the program, as ``<installation>-<sources>``:
    sparkway's version and folder, pyspark, the workers' Python and ``PYTHONPATH``; then
    the state of sparkway's sources (an edited checkout)."""
    import pyspark

    root = Path(__file__).resolve().parents[1]
    sources = sorted((str(p), stat.st_mtime_ns, stat.st_size) for p in root.rglob("*.py") for stat in [p.stat()])

    installation = [package_identity(), pyspark.__version__, os.environ.get("PYSPARK_PYTHON", sys.executable),
                    os.environ.get("PYTHONPATH", ""), sys.version]
    return f"{_digest(installation)}-{_digest(sources)}"


def package_identity() -> str:
    """What identifies this sparkway to a server: its version and folder."""
    from importlib import metadata

    try:
        version = metadata.version("sparkway")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return f"{version} at {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}"


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()[:12]


def _folder(key: str) -> Path:
    folder = daemons_folder() / key
    (folder / "clients").mkdir(parents=True, exist_ok=True)
    os.chmod(daemons_folder(), 0o700)  # the tokens are the user's only
    return folder


def daemons_folder() -> Path:
    return Path(cache_root()) / "daemon"


def _leave_behind(daemon: Daemon) -> None:
    """Starts the daemon in a session of its own (the terminal's Ctrl-C does not reach
    it), unless another program did meanwhile."""
    with daemon.lock():
        if daemon.address() is not None or daemon.starting():
            return
        with open(daemon.folder / "daemon.log", "wb") as output:  # the last daemon's only
            process = subprocess.Popen(
                [sys.executable, "-m", "sparkway", "daemon", "serve", str(daemon.folder)],
                stdin=subprocess.DEVNULL, stdout=output, stderr=output, start_new_session=True,
            )
        write_private(daemon.folder / "daemon.json", json.dumps({"pid": process.pid}))
    log.info("Left sparkway's daemon starting, a warm Spark for the next runs (`sparkway daemon stop` stops it; "
             "SPARKWAY_DAEMON=0: none)")


def _register(daemon: Daemon, kind: str) -> None:
    """Marks this program as attached (``clients``) or running with a Spark of its own
    (``own``) until it exits (a killed one's pid is found dead)."""
    entry = daemon.folder / kind / str(os.getpid())
    entry.parent.mkdir(exist_ok=True)
    entry.touch()
    atexit.register(entry.unlink, missing_ok=True)


def _live_pids(folder: Path) -> list[int]:
    """The pids named by the files of ``folder`` that are alive (the others' files are
    removed)."""
    found = []
    for entry in files_in(folder):
        if entry.name.isdigit() and alive(int(entry.name)):
            found.append(int(entry.name))
        else:
            entry.unlink(missing_ok=True)
    return found


def stop_stale(folder: Path) -> None:
    """Stops the daemons of this installation's earlier sources: their workers run code
    that is no longer there."""
    installation = folder.name.split("-")[0]
    for other in files_in(daemons_folder()):
        if other != folder and other.name.split("-")[0] == installation:
            stop(Daemon(other))
            shutil.rmtree(other, ignore_errors=True)  # its schemas were of the stale sources


def stop(daemon: Daemon, wait_s: float = 30.0) -> bool:
    """Stops a daemon (SIGTERM, then SIGKILL to its session); whether it ran."""
    record = daemon.record
    if record is None or not alive(record["pid"]):
        (daemon.folder / "daemon.json").unlink(missing_ok=True)
        return False
    os.kill(record["pid"], signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while alive(record["pid"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(record["pid"]):
        log.warning("sparkway's daemon (pid %d) did not stop in %.0f s: killed", record["pid"], wait_s)
        os.killpg(record["pid"], signal.SIGKILL)  # its JVM and Python workers too
    return True


def all_daemons() -> list[Daemon]:
    return [Daemon(folder) for folder in files_in(daemons_folder()) if folder.is_dir()]


# ------------------------------------------------------------------------ helpers


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process took the pid
        return False
    return True


def _listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1.0):
        return True
    return False


def files_in(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def write_private(path: Path, text: str) -> None:
    """Writes ``text`` readable by this user only, replacing ``path`` at once."""
    temporary = path.with_suffix(".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
    os.replace(temporary, path)
