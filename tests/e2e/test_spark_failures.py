"""Spark itself failing under a program: one line saying what happened, no Java stack.

(a) Spark's JVM killed during a streaming run (as the system's out-of-memory killer
    would): a ``SparkError`` naming the JVM's process and the signal, instead of py4j's
    and PySpark's tracebacks; (b) Spark refusing to start (too little driver memory):
    a ``SparkError`` with Spark's reason, and the JVM's log of it without its stack.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .helpers import describe, run_program, write_script

pytestmark = pytest.mark.subprocess

KILLED_JVM = '''
import os
import signal
import threading

import sparkway as pw
from sparkway.engine.spark import jvm_process

first_row = threading.Event()


class Subject(pw.io.python.ConnectorSubject):
    def run(self):
        self.next(a=1)
        first_row.wait(120)
        os.kill(jvm_process().pid, signal.SIGKILL)
        jvm_process().wait()
        self.next(a=2)


class Schema(pw.Schema):
    a: int


table = pw.io.python.read(Subject(), schema=Schema)
pw.io.subscribe(table, lambda key, row, time, is_addition: first_row.set())
pw.run()
'''


def test_a_killed_jvm_ends_the_run_with_one_error(tmp_path: Path, python_env: dict[str, str]) -> None:
    proc = run_program(write_script(tmp_path, "prog.py", KILLED_JVM), tmp_path, python_env)
    assert proc.returncode == 1, describe(proc)
    stderr = proc.stderr
    assert re.search(r"sparkway\.errors\.SparkError: Spark's JVM ended during the run "
                     r"\(process \d+, killed by signal 9", stderr), describe(proc)
    assert stderr.count("Traceback") == 1, describe(proc)  # the error's own, ending at pw.run()
    for noise in ("py4j", "Py4J", "EOFError", "ConnectionRefusedError", "socketserver"):
        assert noise not in stderr, f"{noise!r} in: {describe(proc)}"


STARVED = '''
import sparkway as pw

pw.debug.compute_and_print(pw.debug.table_from_markdown("a\\n1"))
'''


def test_a_spark_that_cannot_start_says_why_without_java_stack(tmp_path: Path, python_env: dict[str, str]) -> None:
    env = {**python_env, "SPARKWAY_DRIVER_MEMORY": "256m"}  # Spark wants at least 450 MB
    proc = run_program(write_script(tmp_path, "prog.py", STARVED), tmp_path, env)
    assert proc.returncode == 1, describe(proc)
    assert re.search(r"sparkway\.errors\.SparkError: Spark could not start: .*Insufficient driver memory",
                     proc.stderr), describe(proc)
    assert "\tat " not in proc.stderr and "Py4JJavaError" not in proc.stderr, describe(proc)
