"""The Python side of the SparkSession sparkway creates: what its workers import, and
what ``import sparkway`` loads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import sparkway
from sparkway.engine.spark import WARM_UP_JOB_GROUP, start_python_workers, warm_python_workers
from sparkway.engine.worker_daemon import PRELOADED, preload, without_installed_pyspark_archives


def test_workers_import_the_installed_pyspark_not_its_zip(spark) -> None:
    import pyspark

    def where_pyspark_comes_from(rows):  # a closure: pickled by value for the workers
        import pyspark

        import sparkway.engine.stateful  # noqa: F401 - what a kernel imports

        for _ in rows:
            yield pyspark.__file__, "sparkway.public" in sys.modules

    seen = spark.sparkContext.parallelize(range(2), 2).mapPartitions(where_pyspark_comes_from).collect()
    assert {origin for origin, _ in seen} == {pyspark.__file__}
    assert not any(api_loaded for _, api_loaded in seen), "a worker loaded the whole public API"


def test_the_workers_started_ahead_are_those_the_steps_kernels_get(spark) -> None:
    import pyarrow as pa

    def daemon_of_kernel(batches):  # run as a stateful step's kernel is: an Arrow map
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"daemon": [os.getppid()]})

    start_python_workers(spark).join(timeout=120)
    tracker = spark.sparkContext.statusTracker()
    jobs = tracker.getJobIdsForGroup(WARM_UP_JOB_GROUP)
    assert jobs and all(tracker.getJobInfo(job).status == "SUCCEEDED" for job in jobs)
    warmed = warm_python_workers(spark)
    kernels = spark.range(8, numPartitions=2).mapInArrow(daemon_of_kernel, "daemon long").collect()
    assert {row.daemon for row in kernels} <= warmed  # an RDD's tasks would have warmed another daemon


@pytest.mark.subprocess
def test_a_program_that_ends_before_the_warm_up_waits_for_it_at_exit(tmp_path: Path, python_env: dict[str, str]) -> None:
    """A program ended while the warm-up's job ran: Spark's shutdown then reported that
    task with a page of Java stack (``Error in TaskCompletionListener``)."""
    marker = tmp_path / "warmed"
    code = (
        "import time; import sparkway.engine.spark as s\n"
        "original = s.warm_python_workers\n"
        "def late(spark):\n"
        "    time.sleep(2); daemons = original(spark)\n"
        f"    open({str(marker)!r}, 'w').write(str(len(daemons)))\n"
        "s.warm_python_workers = late\n"
        "s.get_spark()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=python_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert marker.read_text() == "1" and "ERROR" not in done.stderr and "Exception" not in done.stderr


def test_a_session_of_the_user_s_own_runs_workers_on_this_python(tmp_path: Path, python_env: dict[str, str]) -> None:
    """A session the program made itself, without PYSPARK_PYTHON: its workers would run
    the PATH's ``python3`` (here one that cannot run anything)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text("#!/bin/sh\necho 'not this python' >&2\nexit 3\n")
    (bin_dir / "python3").chmod(0o755)
    env = {k: v for k, v in python_env.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    code = (
        "from pyspark.sql import SparkSession\n"
        "SparkSession.builder.master('local[1]').getOrCreate()\n"
        "import sparkway as pw\n"
        "t = pw.debug.table_from_markdown('w\\na\\nb\\na')\n"
        "pw.debug.compute_and_print(t.groupby(t.w).reduce(t.w, n=pw.reducers.count()), include_id=False)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["w", "|", "n", "a", "|", "2", "b", "|", "1"]


def test_only_archives_inside_an_installed_pyspark_leave_the_path(tmp_path: Path) -> None:
    package = tmp_path / "site-packages" / "pyspark"
    (package / "python" / "lib").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    own = [str(package / "python" / "lib" / name) for name in ("pyspark.zip", "py4j-0.10.9.9-src.zip")]
    own.append(str(package / "jars" / "spark-core_2.13-4.3.0.jar"))
    cluster = ["/opt/spark/python/lib/pyspark.zip", "/opt/spark/jars/spark-core_2.13-4.3.0.jar"]
    path = [*own, "/work/project", str(tmp_path / "site-packages")]

    assert without_installed_pyspark_archives(path) == ["/work/project", str(tmp_path / "site-packages")]
    assert without_installed_pyspark_archives([*cluster, *path[3:]]) == [*cluster, *path[3:]]
    # an interpreter that cannot import that pyspark (an executor's packed environment,
    # given the archives of the Spark that started it) keeps them
    assert without_installed_pyspark_archives(path[:4]) == path[:4]


def test_a_task_does_not_read_the_path_s_archives_again(spark) -> None:
    def zip_importers(rows):  # what importlib.invalidate_caches, run before each task, reads again
        import zipimport

        for _ in rows:
            yield [entry for entry, finder in sys.path_importer_cache.items() if isinstance(finder, zipimport.zipimporter)]

    seen = spark.sparkContext.parallelize(range(2), 2).mapPartitions(zip_importers).collect()
    assert not any("site-packages" in entry for found in seen for entry in found), seen


def test_the_daemon_preloads_the_engine_and_lets_workers_import_what_it_could_not(python_env: dict[str, str]) -> None:
    code = (
        "import sys; from sparkway.engine.worker_daemon import PRELOADED, preload; "
        "failed = preload((*PRELOADED, 'no_such_module_here')); "
        "print(failed, all(name in sys.modules for name in PRELOADED))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=python_env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["['no_such_module_here']", "True"]
    assert "sparkway.engine.stateful" in PRELOADED and preload(()) == []


def test_import_sparkway_loads_neither_spark_nor_pandas(python_env: dict[str, str]) -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, sparkway; print(sorted({m.split('.')[0] for m in sys.modules}))"],
        env=python_env, capture_output=True, text=True, check=True,
    ).stdout
    for heavy in ("pyspark", "pandas", "pyarrow", "psycopg"):
        assert f"'{heavy}'" not in loaded


def test_the_version_is_the_project_s_and_asking_for_it_loads_no_api(python_env: dict[str, str]) -> None:
    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    out = subprocess.run(
        [sys.executable, "-c", "import sys, sparkway as pw; print(pw.__version__, 'pyspark' in sys.modules)"],
        env=python_env, capture_output=True, text=True, check=True,
    ).stdout
    assert out.split() == [project["version"], "False"]
    assert (Path(sparkway.__file__).parent / "py.typed").exists()  # PEP 561: type checkers read the annotations


def test_the_api_loads_the_postgres_driver_only_when_pw_io_postgres_is_used(python_env: dict[str, str]) -> None:
    code = (
        "import sys, sparkway as pw; pw.Schema; before = 'psycopg' in sys.modules; "
        "write = pw.io.postgres.write; print(before, 'psycopg' in sys.modules, write.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], env=python_env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True", "sparkway.io.postgres"]


def test_the_api_loads_on_first_use_of_a_name() -> None:
    from sparkway.api.table import Table

    assert sparkway.Table is Table
    assert {"Table", "run", "io", "reducers"} <= set(dir(sparkway))
    with pytest.raises(AttributeError, match="no attribute 'Tabel'"):
        sparkway.Tabel  # noqa: B018


def test_the_class_data_cache_keeps_the_archives_used_last(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sparkway.engine import spark as session

    monkeypatch.setenv("SPARKWAY_CACHE", str(tmp_path))
    folder = tmp_path / "cds"
    folder.mkdir()
    for age, name in enumerate(["newest", "older", "oldest", "older_still"]):
        archive = folder / f"spark-{name}.jsa"
        archive.write_bytes(b"")
        os.utime(archive, (1_000_000 - age, 1_000_000 - age))
    (folder / "notes.txt").write_text("not an archive")

    options = session.class_data_sharing_options()  # this pyspark has no archive yet: it writes one
    assert "-XX:ArchiveClassesAtExit=" in options
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt", "spark-newest.jsa", "spark-older.jsa"]
    written = options.split("-XX:ArchiveClassesAtExit=")[1].split()[0]
    Path(written).write_bytes(b"")
    os.utime(written, (1, 1))  # written long ago: using it again marks it used
    assert "-XX:SharedArchiveFile=" in session.class_data_sharing_options()
    assert session.prune_archives(str(folder), 1) == [str(folder / "spark-newest.jsa"), str(folder / "spark-older.jsa")]


def test_attaching_where_nothing_listens_fails_at_once_naming_the_address() -> None:
    import socket
    import time

    from sparkway.engine.spark import _attach
    from sparkway.errors import SparkError

    with socket.socket() as s:  # a port that was free a moment ago
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(SparkError, match=f"could not attach to the Spark Connect server at sc://127.0.0.1:{port}/;x=1"):
        _attach(f"sc://127.0.0.1:{port}/;x=1")
    assert time.monotonic() - started < 5  # Spark Connect's client alone retries for minutes


def test_the_session_the_tests_share_is_not_a_spark_connect_one(spark) -> None:
    from sparkway.engine.spark import default_parallelism, is_remote

    assert not is_remote(spark)
    assert default_parallelism(spark) == spark.sparkContext.defaultParallelism


def test_attaching_without_the_spark_connect_client_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from pyspark.sql import SparkSession

    from sparkway.engine.spark import _attach
    from sparkway.errors import SparkError

    class NoClient:
        def remote(self, address: str):
            raise ImportError("grpcio >= 1.76.0 must be installed")

    monkeypatch.setattr(SparkSession, "builder", NoClient())
    with socket.socket() as listening:  # something listens: the client is what is missing
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        address = f"sc://127.0.0.1:{listening.getsockname()[1]}"
        with pytest.raises(SparkError, match=r"grpcio >= 1.76.0 must be installed \(install the Spark Connect client: "
                                             r"pip install 'pyspark\[connect\]'\)"):
            _attach(address)


def test_a_users_session_runs_with_the_settings_results_depend_on_then_gets_its_own_back(spark) -> None:
    """A session of the user's (a notebook's) may compare column names without case: a
    run still tells ``x`` from ``X``, and the session has the user's settings after it."""
    import sparkway as pw

    users = {"spark.sql.caseSensitive": "false", "spark.sql.session.timeZone": "America/New_York"}
    ours = {key: spark.conf.get(key) for key in users}
    for key, value in users.items():
        spark.conf.set(key, value)
    try:
        t = pw.debug.table_from_markdown("a\n1\n2")
        result = pw.debug.table_to_pandas(t.select(x=pw.this.a, X=pw.this.a + 10))
        assert sorted(zip(result["x"], result["X"])) == [(1, 11), (2, 12)]
        assert {key: spark.conf.get(key) for key in users} == users
    finally:
        for key, value in ours.items():
            spark.conf.set(key, value)
