"""The daemon's own process (``sparkway daemon serve``, ``engine.daemon`` says what a
daemon is): a ``sparkway server`` that admits its token only, warmed up by a small program
attached to it, stopped when idle."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from sparkway.engine import spark as sparkway_spark
from sparkway.engine.daemon import Daemon, package_identity, stop_stale, write_private
from sparkway.engine.signals import StopSignals

#: seconds without an attached program after which a daemon stops
IDLE_S = 300.0
#: the JVM heap of a daemon (its Python workers come on top)
MEMORY = "2g"
#: the longest a daemon on its way up waits for programs running with a Spark of their own
YIELD_S = 60.0
#: how long no such program must run before the daemon goes on
QUIET_S = 2.0


def serve(folder: Path, idle_s: float | None = None) -> None:
    """The daemon's process: a ``sparkway server`` on a free port of 127.0.0.1 that
    admits its token only, until idle for ``idle_s`` seconds or SIGTERM."""
    idle_s = float(os.environ.get("SPARKWAY_DAEMON_IDLE", IDLE_S)) if idle_s is None else idle_s
    daemon = Daemon(folder)
    stop_stale(folder)
    token = secrets.token_urlsafe(32)
    # the server reads its token from the environment, which other users cannot see
    # (a Spark setting would be on the JVM's command line)
    os.environ["SPARK_CONNECT_AUTHENTICATE_TOKEN"] = token
    os.environ.setdefault("SPARKWAY_DRIVER_MEMORY", os.environ.get("SPARKWAY_DAEMON_MEMORY", MEMORY))
    port = _free_port()
    stopping = threading.Event()
    signals = StopSignals(lambda name, nth: stopping.set())
    signals.install()
    deadline = time.monotonic() + YIELD_S
    _yield_to_own_runs(daemon, deadline)
    session = sparkway_spark.serve("127.0.0.1", port)
    _yield_to_own_runs(daemon, deadline)  # runs that started while the JVM did
    _warm_up(f"sc://localhost:{port}/;token={token}")
    signals.install()  # again: the SparkContext and the warm-up's run put their own handlers
    record = {"pid": os.getpid(), "port": port, "token": token, "package": package_identity(),
              "started_at": time.time()}
    write_private(folder / "daemon.json", json.dumps(record))
    print(f"sparkway daemon: pid {os.getpid()}, port {port}, stops after {idle_s:.0f} s without a program",
          flush=True)
    idle_since = time.monotonic()
    while not stopping.wait(1.0):
        if daemon.record != record:  # removed by `sparkway daemon stop`, or replaced
            break
        if daemon.clients():
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since >= idle_s and _leave_if_still_idle(daemon):
            break
    if daemon.record == record:
        (folder / "daemon.json").unlink(missing_ok=True)
    signals.restore()
    session.stop()


def _yield_to_own_runs(daemon: Daemon, deadline: float) -> None:
    """Waits, until ``deadline`` at most, while programs run with a Spark of their own
    (the one that left this daemon behind, and those that come before it listens): they
    do not wait for the daemon, and its start would take their cores.  The machine must
    be free of them for ``QUIET_S``: a rerun registers a second or so after it starts."""
    last_seen = time.monotonic()
    while time.monotonic() - last_seen < QUIET_S and time.monotonic() < deadline:
        if daemon.own_runs():
            last_seen = time.monotonic()
        time.sleep(0.2)


def _warm_up(address: str) -> None:
    """Runs a small program attached (``sparkway daemon warm-up``), as a client's would,
    before the first client comes: its first step then finds the server's code compiled
    and the Python workers of Connect sessions started (a first client's run took 7.4 s
    where a warm one took 2.6)."""
    started = time.monotonic()
    # the server's own settings are not a client's to set
    env = {**{k: v for k, v in os.environ.items() if k != "SPARKWAY_SPARK_CONF"}, "SPARKWAY_SPARK_MASTER": address}
    done = subprocess.run([sys.executable, "-m", "sparkway", "daemon", "warm-up"],
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if done.returncode != 0:  # a daemon that did not warm up still serves
        print(f"sparkway daemon: the warm-up failed: {done.stderr[-2000:]}", flush=True)
    print(f"sparkway daemon: warmed up in {time.monotonic() - started:.1f} s", flush=True)


def _leave_if_still_idle(daemon: Daemon) -> bool:
    """Removes the record unless a program attached meanwhile (under the lock that
    programs take to find the daemon)."""
    with daemon.lock():
        if daemon.clients():
            return False
        (daemon.folder / "daemon.json").unlink(missing_ok=True)
        return True


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
