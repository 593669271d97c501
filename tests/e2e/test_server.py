"""Programs attached to a warm ``sparkway server`` (Spark Connect): the same results and
persistence as programs that start their own Spark, a graceful stop, one-line errors."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from services import free_port

from .helpers import check_ok, describe, run_program, snapshot_diff, word_counts, write_file, write_script
from .test_crash import ONE_SOURCE, count_changes

pytestmark = pytest.mark.subprocess


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A ``sparkway server`` on a free port, stopped by SIGINT at the end (which must
    end it with exit code 0)."""
    from tests.conftest import ROOT

    folder = tmp_path_factory.mktemp("server")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    port = free_port()
    log = open(folder / "server.log", "w+")
    proc = subprocess.Popen([sys.executable, "-m", "sparkway", "server", "--port", str(port)], cwd=folder, env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    address = f"sc://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while f"SPARKWAY_SPARK_MASTER={address}" not in (folder / "server.log").read_text():
        assert proc.poll() is None and time.monotonic() < deadline, (folder / "server.log").read_text()
        time.sleep(0.2)
    yield address
    proc.send_signal(signal.SIGINT)
    try:
        code = proc.wait(60)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # its JVM, if it outlived the server
        except ProcessLookupError:
            pass
        log.close()
    assert code == 0, f"Ctrl-C did not stop the server cleanly (exit code {code}): {(folder / 'server.log').read_text()}"


def _attached(env: dict[str, str], address: str) -> dict[str, str]:
    return {**env, "SPARKWAY_SPARK_MASTER": address}


def counted_changes(path: Path) -> collections.Counter:
    return collections.Counter(row + (diff,) for row, _, diff in count_changes(path, allow_torn=False))


def test_attached_runs_continue_where_they_stopped_as_local_runs_do(tmp_path: Path, python_env, server) -> None:
    """A persistent program run twice attached to the server, then once with its own
    Spark, on one storage: each run outputs exactly what its new file changed."""
    inputs = tmp_path / "inputs"
    expected_before: collections.Counter = collections.Counter()
    for run, (name, text, env) in enumerate([
        ("a.csv", "word\nx\ny\nx\n", _attached(python_env, server)),
        ("b.csv", "word\ny\nz\n", _attached(python_env, server)),
        ("c.csv", "word\nz\nw\n", python_env),
    ]):
        write_file(inputs / name, text)
        script = write_script(tmp_path, f"run{run}.py", ONE_SOURCE, mode="static", output=f"out{run}.jsonlines")
        proc = run_program(script, tmp_path, env)
        check_ok(proc)
        attached = "Attached to the Spark Connect server at " + server in proc.stderr
        assert attached == (env is not python_env), describe(proc)
        expected = word_counts(inputs)
        assert counted_changes(tmp_path / f"out{run}.jsonlines") == snapshot_diff(expected_before, expected), run
        expected_before = expected


def test_an_attached_streaming_program_stops_on_sigterm(tmp_path: Path, python_env, programs, server) -> None:
    streaming_until_sigterm(tmp_path, _attached(python_env, server), programs)


def streaming_until_sigterm(tmp_path: Path, env: dict[str, str], programs) -> Path:
    """A streaming word count is given two files, one at a time, then SIGTERM: it exits
    with 0, having output the changes of each file.  Returns its script."""
    write_file(tmp_path / "inputs" / "a.csv", "word\nx\ny\nx\n")
    script = write_script(tmp_path, "streaming.py", ONE_SOURCE, mode="streaming", output="out.jsonlines")
    output = tmp_path / "out.jsonlines"
    program = programs(script, tmp_path, env)
    program.wait_until(lambda: len(count_changes(output, allow_torn=True)) == 2, 120, "the counts of a.csv")
    before = word_counts(tmp_path / "inputs")
    write_file(tmp_path / "inputs" / "b.csv", "word\ny\nz\n")
    program.wait_until(lambda: len(count_changes(output, allow_torn=True)) == 5, 120, "the counts of b.csv")
    assert program.terminate() == 0, describe(program)
    assert counted_changes(output) == snapshot_diff(collections.Counter(), before) + snapshot_diff(
        before, word_counts(tmp_path / "inputs"))
    return script


def test_no_server_at_the_address_is_one_line_error(tmp_path: Path, python_env) -> None:
    write_file(tmp_path / "inputs" / "a.csv", "word\nx\n")
    script = write_script(tmp_path, "run.py", ONE_SOURCE, mode="static", output="out.jsonlines")
    address = f"sc://127.0.0.1:{free_port()}"
    proc = run_program(script, tmp_path, _attached(python_env, address), timeout=120)
    assert proc.returncode == 1, describe(proc)
    assert f"could not attach to the Spark Connect server at {address}" in proc.stderr, describe(proc)
    assert "sparkway server" in proc.stderr and proc.stderr.count("Traceback") <= 1, describe(proc)
