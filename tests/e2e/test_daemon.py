"""The daemon (``engine/daemon.py``): a first short run leaves a warm Spark behind, later
runs attach to it with the same outputs, persistence and errors; it is private to its
user, stops when idle or told to, and never starts in CI or with SPARKWAY_DAEMON=0."""

from __future__ import annotations

import collections
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkway.engine import daemon

from .helpers import check_ok, describe, run_program, snapshot_diff, word_counts, write_file, write_script
from .test_crash import ONE_SOURCE
from .test_server import counted_changes

pytestmark = pytest.mark.subprocess

LEFT = "Left sparkway's daemon starting"
ATTACHED = "Attached to the Spark Connect server at sc://localhost:"

FAILING = '''
import sparkway as pw

t = pw.debug.table_from_markdown("a\\n1\\n0")
t = t.select(b=pw.apply(lambda a: 10 // a, t.a))
pw.debug.compute_and_print(t)
'''


JOINED = '''
import sparkway as pw

orders = pw.debug.table_from_markdown("""
oid | cid | amount
1   | 1   | 10
2   | 2   | 5
3   | 1   | 7
""")
names = pw.debug.table_from_markdown("""
cid | name
1   | ann
2   | bob
""")
named = orders.join(names, orders.cid == names.cid).select(names.name, orders.amount)
totals = named.groupby(named.name).reduce(named.name, total=pw.reducers.sum(named.amount))
pw.debug.compute_and_print(totals.select(totals.name, shout=pw.apply(str.upper, totals.name), total=totals.total),
                           include_id=False)
'''


@pytest.fixture(scope="module")
def daemon_cache(tmp_path_factory) -> Iterator[Path]:
    """The cache folder of this module's daemons; every daemon stopped at the end."""
    cache = tmp_path_factory.mktemp("daemon-cache")
    yield cache
    for found in _daemons(cache):
        daemon.stop(found)


@pytest.fixture
def daemon_env(python_env, daemon_cache) -> dict[str, str]:
    env = {k: v for k, v in python_env.items() if k not in daemon.CI_VARIABLES + daemon.OWN_SPARK_VARIABLES}
    return {**env, "SPARKWAY_DAEMON": "1", "SPARKWAY_CACHE": str(daemon_cache), "SPARKWAY_DAEMON_IDLE": "300"}


def _daemons(cache: Path) -> list[daemon.Daemon]:
    folder = cache / "daemon"
    return [daemon.Daemon(f) for f in sorted(folder.iterdir())] if folder.is_dir() else []


def _ready(cache: Path, timeout_s: float = 180) -> daemon.Daemon:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready = [d for d in _daemons(cache) if d.address() is not None]
        if ready:
            return ready[0]
        time.sleep(0.5)
    logs = {str(d.folder): (d.folder / "daemon.log").read_text() for d in _daemons(cache)}
    raise AssertionError(f"no daemon came up: {logs}")


def _sparkway(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "sparkway", *args], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_later_runs_attach_to_the_daemon_a_first_run_left_and_continue_its_work(
    tmp_path: Path, daemon_env, daemon_cache,
) -> None:
    """Three runs of a persistent word count on one storage, each with a new file: the
    first with its own Spark (it leaves the daemon), the second attached, the third with
    SPARKWAY_DAEMON=0; each outputs exactly what its file changed."""
    inputs = tmp_path / "inputs"
    expected_before: collections.Counter = collections.Counter()
    for run, (name, text, env) in enumerate([
        ("a.csv", "word\nx\ny\nx\n", daemon_env),
        ("b.csv", "word\ny\nz\n", daemon_env),
        ("c.csv", "word\nz\nw\n", {**daemon_env, "SPARKWAY_DAEMON": "0"}),
    ]):
        write_file(inputs / name, text)
        script = write_script(tmp_path, f"run{run}.py", ONE_SOURCE, mode="static", output=f"out{run}.jsonlines")
        proc = run_program(script, tmp_path, env)
        check_ok(proc)
        assert (LEFT in proc.stderr, ATTACHED in proc.stderr) == (run == 0, run == 1), describe(proc)
        if run == 1:  # the log names the server, not its token
            assert _ready(daemon_cache).record["token"] not in proc.stderr + proc.stdout, describe(proc)
        expected = word_counts(inputs)
        assert counted_changes(tmp_path / f"out{run}.jsonlines") == snapshot_diff(expected_before, expected), run
        expected_before = expected
        if run == 0:
            _ready(daemon_cache)
    status = _sparkway(daemon_env, "daemon", "status")
    assert "1 program(s) attached" not in status and "0 program(s) attached" in status, status


def test_an_error_reads_the_same_attached_and_with_a_spark_of_its_own(tmp_path: Path, daemon_env, daemon_cache) -> None:
    script = write_script(tmp_path, "failing.py", FAILING)
    own = run_program(script, tmp_path, {**daemon_env, "SPARKWAY_DAEMON": "0"})
    _ready(daemon_cache)
    attached = run_program(script, tmp_path, daemon_env)
    assert ATTACHED in attached.stderr, describe(attached)
    assert own.returncode == attached.returncode == 1, describe(attached)

    def error_lines(proc: subprocess.CompletedProcess) -> list[str]:
        return [line for line in proc.stderr.splitlines() if "ZeroDivisionError" in line]

    assert error_lines(own) and error_lines(own) == error_lines(attached), (own.stderr[-3000:], attached.stderr[-3000:])


def test_a_rerun_attached_takes_the_schemas_of_its_plans_from_the_daemon_s_folder(
    tmp_path: Path, daemon_env, daemon_cache,
) -> None:
    """The second attached run has the daemon analyse no plan that the first one did (no
    new entry; entries read), and prints what a run with a Spark of its own prints."""
    script = write_script(tmp_path, "joined.py", JOINED)
    own = run_program(script, tmp_path, {**daemon_env, "SPARKWAY_DAEMON": "0"})
    schemas = _ready(daemon_cache).schemas
    first = run_program(script, tmp_path, daemon_env)
    entries = {p.name: p.stat().st_mtime_ns for p in schemas.iterdir()}
    second = run_program(script, tmp_path, daemon_env)
    after = {p.name: p.stat().st_mtime_ns for p in schemas.iterdir()}
    for proc in (own, first, second):
        check_ok(proc)
    assert ATTACHED in first.stderr and ATTACHED in second.stderr, describe(second)
    assert own.stdout == first.stdout == second.stdout and "BOB" in own.stdout, (own.stdout, second.stdout)
    assert entries and after.keys() == entries.keys(), sorted(after.keys() - entries.keys())
    assert any(after[name] > entries[name] for name in entries)


def test_the_daemon_is_private_to_its_user(daemon_env, daemon_cache) -> None:
    """Its folder and record are the user's only, and a client without its token is
    refused."""
    found = _ready(daemon_cache)
    assert stat.S_IMODE(os.stat(daemon_cache / "daemon").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(found.folder / "daemon.json").st_mode) == 0o600
    port = found.record["port"]
    probe = ("from pyspark.sql import SparkSession\n"
             f"SparkSession.builder.remote('sc://localhost:{port}').getOrCreate().range(1).collect()\n")
    env = {k: v for k, v in daemon_env.items() if k != "SPARK_CONNECT_AUTHENTICATE_TOKEN"}
    refused = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "UNAUTHENTICATED" in refused.stderr.upper(), refused.stderr[-2000:]


def test_stop_and_idle_end_the_daemon(tmp_path: Path, daemon_env, daemon_cache) -> None:
    found = _ready(daemon_cache)
    pid = found.record["pid"]
    assert "stopped the daemon" in _sparkway(daemon_env, "daemon", "stop")
    assert not daemon.alive(pid) and found.address() is None
    assert "no sparkway daemon runs" in _sparkway(daemon_env, "daemon", "status")
    # a daemon left with an idle time of 2 s ends by itself
    write_file(tmp_path / "inputs" / "a.csv", "word\nx\n")
    script = write_script(tmp_path, "run.py", ONE_SOURCE, mode="static", output="out.jsonlines")
    check_ok(run_program(script, tmp_path, {**daemon_env, "SPARKWAY_DAEMON_IDLE": "2"}))
    found = _ready(daemon_cache)
    pid = found.record["pid"]
    deadline = time.monotonic() + 60
    while daemon.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not daemon.alive(pid) and found.record is None, (found.folder / "daemon.log").read_text()


@pytest.mark.parametrize("setting", [{"CI": "true"}, {"SPARKWAY_DAEMON": "0"}, {"SPARKWAY_SPARK_CONF": "{}"}])
def test_no_daemon_in_ci_when_turned_off_or_with_spark_settings(tmp_path: Path, daemon_env, setting) -> None:
    cache = tmp_path / "cache"
    write_file(tmp_path / "inputs" / "a.csv", "word\nx\n")
    script = write_script(tmp_path, "run.py", ONE_SOURCE, mode="static", output="out.jsonlines")
    proc = run_program(script, tmp_path, {**daemon_env, "SPARKWAY_CACHE": str(cache), **setting})
    check_ok(proc)
    assert LEFT not in proc.stderr and not (cache / "daemon").exists(), describe(proc)


def test_edited_sources_name_another_daemon_of_the_same_installation() -> None:
    before = daemon.installation_key()
    source = Path(daemon.__file__)
    stats = source.stat()
    try:
        os.utime(source, ns=(stats.st_atime_ns, stats.st_mtime_ns + 1))
        after = daemon.installation_key()
    finally:
        os.utime(source, ns=(stats.st_atime_ns, stats.st_mtime_ns))
    assert before != after and before.split("-")[0] == after.split("-")[0]
    assert daemon.installation_key() == before


def test_a_daemon_on_its_way_up_lets_programs_with_a_spark_of_their_own_finish(tmp_path: Path, monkeypatch) -> None:
    from sparkway.engine import daemon_server

    monkeypatch.setattr(daemon_server, "QUIET_S", 0.3)
    folder = tmp_path / "daemon"
    (folder / "own").mkdir(parents=True)

    def own_run(seconds: float) -> subprocess.Popen:
        """A program running with a Spark of its own, as ``attach`` registers it."""
        process = subprocess.Popen(["sleep", str(seconds)])
        threading.Thread(target=process.wait, daemon=True).start()  # reaped: its pid dies
        (folder / "own" / str(process.pid)).touch()
        return process

    short = own_run(1.5)
    daemon_server._yield_to_own_runs(daemon.Daemon(folder), time.monotonic() + 60)
    assert short.poll() is not None, "the daemon went on while the program ran"
    assert not list((folder / "own").iterdir()), "the ended program's entry is left"

    endless = own_run(60)
    started = time.monotonic()
    daemon_server._yield_to_own_runs(daemon.Daemon(folder), started + 1.0)
    assert endless.poll() is None and time.monotonic() - started < 5, "the wait outlived its deadline"
    endless.kill()
