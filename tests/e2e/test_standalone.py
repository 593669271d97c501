"""A deployment to follow: sparkway programs on a Spark standalone cluster whose master
and two workers run as processes of their own (tests/services/standalone.py), with
sparkway and its dependencies shipped to the executors as a packed environment and the
state on S3, so that no executor reads the driver's disk or its Python.

A program is submitted with ``spark-submit`` and restarted; another is killed at random
moments and restarted: what they output is exactly what a batch computation gives."""

from __future__ import annotations

import collections
import json
import os
import sys
from pathlib import Path

import pytest

from .helpers import (
    changes, check_ok, describe, read_jsonlines_output, run_program, snapshot_diff, word_counts, write_file,
    write_script,
)
from .test_crash import run_crash_test
from .test_s3 import s3_backend

pytestmark = [pytest.mark.subprocess, pytest.mark.cluster]

SUBMITTED = '''
import json
import sys

import sparkway as pw


class Words(pw.Schema):
    word: str


words = pw.io.csv.read("inputs/", schema=Words, mode="static", name="words")
counts = words.groupby(words.word).reduce(words.word, count=pw.reducers.count())
pw.io.jsonlines.write(counts, "counts.jsonlines")
pw.run(persistence_config=pw.persistence.Config({backend}))

# where the executors' Python workers found their interpreter and sparkway
from sparkway.engine.spark import get_spark


def where(_):
    import os
    import sys
    import sparkway
    return sys.executable, os.path.abspath(sparkway.__file__)


context = get_spark().sparkContext
with open("probe.json", "w") as f:
    json.dump({"master": context.master, "workers": sorted(set(context.parallelize(range(4), 4).map(where).collect()))}, f)
'''


def _submit(cluster, archive: Path, script: Path, cwd: Path, env: dict[str, str]):
    import subprocess

    import pyspark

    command = [os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit"), "--master", cluster.url,
               "--archives", f"{archive}#environment",
               "--conf", "spark.pyspark.python=./environment/bin/python",
               "--conf", f"spark.pyspark.driver.python={sys.executable}",
               "--conf", "spark.executor.memory=1g", str(script)]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_spark_submit_with_a_packed_environment_continues_where_it_stopped(
        tmp_path: Path, python_env, standalone_cluster, executor_environment, s3_bucket) -> None:
    env = {k: v for k, v in python_env.items() if k != "PYSPARK_PYTHON"}
    script = write_script(tmp_path, "submitted.py", SUBMITTED)
    script.write_text(script.read_text().replace("{backend}", s3_backend(s3_bucket, "state")))
    before: collections.Counter = collections.Counter()
    for run, (name, text) in enumerate([("a.csv", "word\nx\ny\nx\n"), ("b.csv", "word\ny\nz\n")]):
        write_file(tmp_path / "inputs" / name, text)
        proc = _submit(standalone_cluster, executor_environment, script, tmp_path, env)
        check_ok(proc)
        now = word_counts(tmp_path / "inputs")
        got = changes(read_jsonlines_output(tmp_path / "counts.jsonlines"), ["word", "count"])
        assert got == snapshot_diff(before, now), f"run {run}: {describe(proc)}"
        before = now
    probe = json.loads((tmp_path / "probe.json").read_text())
    assert probe["master"] == standalone_cluster.url
    for python, package in probe["workers"]:
        # the workers' Python and sparkway come from the archive unpacked in an executor's folder
        assert "/environment/" in python and "/worker-" in package and "/environment/" in package, probe
        assert not package.startswith(str(Path(__file__).resolve().parents[2])), probe
    assert standalone_cluster.executor_folders(), "no executor ran on the workers"


def test_sigkills_on_a_standalone_cluster_lose_and_duplicate_nothing(
        tmp_path: Path, python_env, programs, standalone_cluster, executor_environment, s3_bucket) -> None:
    """The crash test's streaming program on the cluster, its state on S3, killed three
    times at random moments (the whole driver, or its Python process alone, while the
    executors go on), then stopped with SIGTERM: nothing lost, nothing counted twice."""
    env = {**python_env, "SPARKWAY_SPARK_MASTER": standalone_cluster.url,
           "PYSPARK_PYTHON": "./environment/bin/python",
           "SPARKWAY_SPARK_CONF": json.dumps({"spark.archives": f"{executor_environment}#environment",
                                              "spark.executor.memory": "1g"})}
    run_crash_test(tmp_path, env, programs, kills=3, budget_s=200, backend=s3_backend(s3_bucket, "state"),
                   runs_with_output=2)


def test_executors_without_sparkway_are_one_error_saying_what_to_do(
        tmp_path: Path, python_env, standalone_cluster) -> None:
    import subprocess

    bare = tmp_path / "bare"  # a Python of the executors that has no sparkway
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    write_file(tmp_path / "inputs" / "a.csv", "word\nx\n")
    script = write_script(tmp_path, "run.py", SUBMITTED.split("# where the executors")[0])
    script.write_text(script.read_text().replace("{backend}", "pw.persistence.Backend.filesystem('state')"))
    env = {**python_env, "SPARKWAY_SPARK_MASTER": standalone_cluster.url, "PYSPARK_PYTHON": str(bare / "bin" / "python")}
    proc = run_program(script, tmp_path, env)
    assert proc.returncode == 1, describe(proc)
    assert (f"Spark's Python workers ({bare / 'bin' / 'python'}) cannot import 'sparkway': install sparkway"
            in proc.stderr), describe(proc)
    assert proc.stderr.count("Traceback") <= 1 and "\tat org.apache" not in proc.stderr, describe(proc)
