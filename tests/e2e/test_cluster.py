"""The restart and crash scenarios on ``local-cluster[2,1,1024]``: a standalone master
and two worker JVMs on this machine, each running one executor, so that operator state is
written and read by executors in processes other than the driver.

local-cluster needs Spark's launch scripts (bin/spark-class, bin/load-spark-env.sh); the
pyspark wheel ships them in its package folder, and pyspark finds that folder as
SPARK_HOME by itself (pyspark/find_spark_home.py), so nothing has to be set.  The test
``test_local_cluster_really_has_two_executors`` checks that the master really starts
separate executor processes rather than falling back to local mode.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import check_ok, run_program, write_file, write_script
from .test_crash import run_crash_test
from .test_seed_sessions import sessions_scenario

pytestmark = [pytest.mark.subprocess, pytest.mark.cluster, pytest.mark.releases]

MASTER = "local-cluster[2,1,1024]"


@pytest.fixture
def cluster_env(python_env: dict[str, str]) -> dict[str, str]:
    env = dict(python_env)
    env["SPARKWAY_SPARK_MASTER"] = MASTER
    return env


PROBE = '''
import json
import sparkway as pw
from sparkway.engine.spark import get_spark

class S(pw.Schema):
    word: str

t = pw.io.csv.read("inputs/", schema=S, mode="static")
pw.io.jsonlines.write(t.groupby(t.word).reduce(t.word, n=pw.reducers.count()), "out.jsonlines")
pw.run()
spark = get_spark()
sc = spark.sparkContext
executors = sc._jsc.sc().getExecutorMemoryStatus().size() - 1  # minus the driver
with open("probe.json", "w") as f:
    json.dump({"master": sc.master, "executors": executors}, f)
'''


def test_local_cluster_really_has_two_executors(tmp_path: Path, cluster_env: dict[str, str]) -> None:
    import json

    write_file(tmp_path / "inputs" / "a.csv", "word\nx\ny\nx\n")
    proc = run_program(write_script(tmp_path, "probe.py", PROBE), tmp_path, cluster_env)
    check_ok(proc)
    info = json.loads((tmp_path / "probe.json").read_text())
    assert info["master"] == MASTER
    assert info["executors"] == 2, info
    rows = [json.loads(line) for line in (tmp_path / "out.jsonlines").read_text().splitlines()]
    assert sorted((r["word"], r["n"], r["diff"]) for r in rows) == [("x", 2, 1), ("y", 1, 1)]


def test_sessions_restarts_on_local_cluster(tmp_path: Path, cluster_env: dict[str, str]) -> None:
    sessions_scenario(tmp_path, cluster_env, runs=3)


def test_sessions_state_moves_between_masters(tmp_path: Path, python_env: dict[str, str]) -> None:
    """One persistence storage, continued on other masters: local[1], then the cluster's
    executors, then local[3] (state written by one executor set is read by another)."""
    envs = [dict(python_env, SPARKWAY_SPARK_MASTER=m) for m in ("local[1]", MASTER, "local[3]")]
    sessions_scenario(tmp_path, envs, runs=3)


def test_crash_on_local_cluster(tmp_path: Path, cluster_env: dict[str, str], programs) -> None:
    run_crash_test(tmp_path, cluster_env, programs, kills=3, budget_s=240)
