"""The SparkSession sparkway runs on: the active one, or one it creates.

Settings follow what was measured on small machines: few shuffle partitions, AQE on,
Arrow transfers, C1-only JIT for fast start-up (full JIT for long-running programs), no UI.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import functools
import gc
import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import py4j
import pyspark
from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from sparkway.core import spark_releases
from sparkway.engine import daemon, schema_cache
from sparkway.engine.cache import cds_folder
from sparkway.engine.failures import spark_not_started
from sparkway.errors import SparkError
from sparkway.persistence.scratch import ScratchFolder

DEFAULT_MASTER = "local[2]"
log = logging.getLogger("sparkway")


def ensure_python_env() -> None:
    """Spark's Python workers run this interpreter unless ``PYSPARK_PYTHON`` names another."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def this_machine(master: str) -> bool:
    """Whether ``master``'s executors run on this machine (local mode, local-cluster).

    >>> this_machine("local[2]"), this_machine("local-cluster[2,1,1024]"), this_machine("spark://host:7077")
    (True, True, False)
    """
    return master.startswith("local")


def _importable_here() -> str:
    """The ``PYTHONPATH`` of executors on this machine: this sparkway's folder first, since
    their workers start in other folders (a cluster's import their own installation)."""
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != package_root]
    return os.pathsep.join([package_root, *paths])


def _submitted_master() -> str | None:
    """The master of ``spark-submit``, when this program runs under it (its JVM is up, with
    the ``--master`` and ``--conf`` settings), connecting to that JVM."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    SparkContext._ensure_initialized()
    return SparkConf().get("spark.master", None)


#: class-data archives kept in the cache, the most recently used (each about 160 MB)
CDS_ARCHIVES_KEPT = 3


def class_data_sharing_options() -> str:
    """JVM options that map Spark's classes from a class-data archive, which halves JVM
    start-up; the first run with a pyspark installation writes its archive when its JVM
    exits, in ``<cache>/cds``, which keeps the ``CDS_ARCHIVES_KEPT`` archives used last.
    ``SPARKWAY_CDS=0`` turns this off."""
    if os.environ.get("SPARKWAY_CDS", "1") == "0":
        return ""
    key = hashlib.sha1(f"{pyspark.__file__}|{pyspark.__version__}|{os.environ.get('JAVA_HOME', '')}".encode())
    path = os.path.join(cds_folder(), f"spark-{key.hexdigest()[:16]}.jsa")
    quiet = "-Xlog:cds=off -Xlog:cds+dynamic=off"
    if os.path.exists(path):
        with contextlib.suppress(OSError):  # used now: pruning keeps it (not when another user owns it)
            os.utime(path)
        return f"-XX:SharedArchiveFile={path} -Xshare:auto {quiet}"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    prune_archives(os.path.dirname(path), CDS_ARCHIVES_KEPT - 1)
    return f"-XX:ArchiveClassesAtExit={path} {quiet}"


def prune_archives(folder: str, keep: int) -> list[str]:
    """Deletes all but the ``keep`` most recently used archives of ``folder`` (each
    pyspark installation, a virtual environment or a clone, writes its own); returns the
    deleted paths.  A JVM that maps a deleted archive keeps it until it exits."""
    archives = sorted((entry for entry in os.scandir(folder) if entry.name.endswith(".jsa")),
                      key=lambda entry: entry.stat().st_mtime, reverse=True)
    deleted = []
    for entry in archives[keep:]:
        try:
            os.remove(entry.path)
            deleted.append(entry.path)
        except OSError:  # another process pruned it first
            pass
    return deleted


#: the settings of every query sparkway runs, also on a Spark Connect server (which takes
#: them per session)
SQL_SETTINGS = {
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    # a step's input above 4 MB becomes a parallelized RDD rather than a local relation,
    # whose projections the optimizer would evaluate row by row on the driver (9 s of
    # planning for a first step of 1M rows)
    "spark.sql.execution.arrow.localRelationThreshold": str(4 << 20),
    "spark.sql.execution.pythonUDF.arrow.enabled": "true",
    # batches to Python workers are bounded by rows (maxRecordsPerBatch) only: a bound in
    # bytes makes Spark measure the batch after every row (a tenth of a large step's time)
    "spark.sql.execution.arrow.maxBytesPerBatch": str(2**31 - 1),
    "spark.sql.session.timeZone": "UTC",
    # `&`, `|` and if_else evaluate their right side only where needed (a // b under
    # b != 0 must not fail); common subexpressions would be computed for every row first
    "spark.sql.subexpressionElimination.enabled": "false",
    "spark.sql.caseSensitive": "true",  # columns "a" and "A" are two columns, as in Pathway
    # Spark 4's default, which 3.5 lacks: an overflow or a value that does not cast is an
    # error rather than a null, on every release
    "spark.sql.ansi.enabled": "true",
}


#: the settings of ``SQL_SETTINGS`` that results depend on (the others are for speed): a
#: session of the user's has them for each run, and its own values back after it
RESULT_SETTINGS = ("spark.sql.session.timeZone", "spark.sql.caseSensitive", "spark.sql.ansi.enabled",
                   "spark.sql.subexpressionElimination.enabled")


def take_result_settings(spark: SparkSession) -> dict[str, str | None]:
    """Sets the ``RESULT_SETTINGS`` that ``spark`` has otherwise (a session of the user's:
    a notebook's, one made before ``pw.run``); returns the values they had, for
    ``give_back_settings``."""
    before = {key: value for key, value in spark_releases.settings_of(spark, RESULT_SETTINGS).items()
              if value != SQL_SETTINGS[key]}
    if before:
        spark_releases.set_settings(spark, {key: SQL_SETTINGS[key] for key in before})
        log.info("For this run, the Spark session's %s", ", ".join(f"{k}={SQL_SETTINGS[k]} (was {v})"
                                                                  for k, v in before.items()))
    return before


def give_back_settings(spark: SparkSession, before: dict[str, str | None]) -> None:
    for key, value in before.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


#: settings of PySpark's own conversions, which a Spark Connect client does not have
CLASSIC_ONLY_SETTINGS = ("spark.sql.execution.arrow.pyspark.fallback.enabled",)


def get_spark(master: str | None = None, ui: bool = False, optimizing_jit: bool = False) -> SparkSession:
    """The active SparkSession, or a new one on ``master``, with Spark's web UI when
    ``ui`` or ``$SPARKWAY_SPARK_UI`` is set (off otherwise: it costs start-up time).
    A new JVM compiles only with the JIT's fast tier (C1), which starts sooner, unless
    ``optimizing_jit`` (a streaming run or a server, whose every step then plans faster
    once warm; a batch over a large input, whose tasks run longer than the JIT's warm-up):
    then with the optimizing tier (C2) too.

    ``master`` defaults to ``$SPARKWAY_SPARK_MASTER``, then to ``$SPARK_REMOTE``, then to
    ``spark-submit``'s master (a program it started), then to this user's warm local
    Spark (``engine.daemon``) for a short batch, then to embedded ``local[2]``.  A
    Spark Connect address (``sc://host:port``, of a ``sparkway server`` or Spark's own
    Connect server) attaches to that server, whose JVM and Python workers are already
    warm, instead of starting a JVM.
    """
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        if not is_remote(active):
            _workers_run_this_python(active)
        return active
    _exit_without_collecting()
    # a short batch attaches to the warm daemon; a stream or a large batch, which Spark's
    # start does not hold up for long, gets a Spark of its own and all its memory
    if master is None and not ui and not optimizing_jit and daemon.wanted():
        attached = daemon.attach()
        if attached is not None:
            address, found = attached
            spark = _attach(address)
            schema_cache.keep_schemas(spark, found.schemas, json.dumps(SQL_SETTINGS, sort_keys=True))
            return spark
    master = (master or os.environ.get("SPARKWAY_SPARK_MASTER") or os.environ.get("SPARK_REMOTE")
              or _submitted_master() or DEFAULT_MASTER)
    if master.startswith("sc://"):
        return _attach(master)
    ensure_python_env()
    # spark-submit's --conf settings, which sparkway's own must not override
    submitted = dict(SparkConf().getAll()) if "PYSPARK_GATEWAY_PORT" in os.environ else {}
    # the serial collector gives the heap it freed back to the system once more than 20%
    # of it is free (Java's default: 70%): at 10M rows of sessions the JVM peaked at
    # 2.2 GB instead of 2.6, as fast (bench/README.md)
    jit = "" if optimizing_jit else "-XX:TieredStopAtLevel=1"
    jvm = f"-XX:+UseSerialGC {jit} -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=20"
    # the driver's young generation (in local mode, the executor's too) is at most 64 MB,
    # not a third of the heap: its eden, which allocation sweeps whole between two
    # collections, was resident in full; at 10M rows of sessions the JVM peaked at 1.84 GB
    # instead of 2.12, as fast (bench/README.md)
    young = "-Xmn64m"
    log_config = f"-Dlog4j2.configurationFile={os.path.join(os.path.dirname(__file__), 'log4j2.properties')}"
    conf = (
        SparkConf().setMaster(master)
        .setAppName("sparkway")
        .setAll(SQL_SETTINGS.items())
        .set("spark.default.parallelism", "2")
        # PySpark sends the Python call site of every Column it builds to the JVM (14 py4j
        # calls for an F.col, 30 for a cast): the call site would be sparkway's code, and
        # it was a quarter of a streaming step of 1,000 rows
        .set("spark.python.sql.dataFrameDebugging.enabled", "false")
        .set("spark.ui.enabled", str(ui or os.environ.get("SPARKWAY_SPARK_UI", "0") not in ("", "0")).lower())
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.speculation", "false")
        .set("spark.driver.extraJavaOptions", f"{jvm} {young} {log_config} {class_data_sharing_options()}")
        .set("spark.executor.extraJavaOptions", jvm)
        .set("spark.executorEnv.PYSPARK_PYTHON", os.environ["PYSPARK_PYTHON"])
        .set("spark.python.worker.reuse", "true")
        .set("spark.python.daemon.module", "sparkway.engine.worker_daemon")
        # a first step over a large history collects its whole output on the driver: the
        # driver's memory bounds it, not Spark's 1 GB default (100M rows of history give
        # sessions of about 2 GB)
        .set("spark.driver.memory", os.environ.get("SPARKWAY_DRIVER_MEMORY", "4g"))
        .set("spark.driver.maxResultSize", "0")
        # Spark's sorts and aggregations get 30% of the heap instead of 60%, and spill to
        # disk beyond it: sparkway's own work is in Python processes outside the JVM, and
        # a first run over 10M rows holds two sorts at once (a session window's and its
        # reduce's): the JVM grew to all the heap it may use, 4 GB (2.3 GB with this, as fast)
        .set("spark.memory.fraction", "0.3")
    )
    if this_machine(master):
        conf = conf.set("spark.executorEnv.PYTHONPATH", _importable_here())
    if master.startswith("local-cluster"):
        conf = conf.set("spark.executor.memory", "768m")
    conf = conf.setAll(submitted.items()).setAll(user_conf().items())  # the user's settings win
    if SparkContext._active_spark_context is None:  # pyspark's record of its running context
        temporary = _jvm_temporary_folder(conf)
        try:
            gateway = SparkContext._gateway or _launch_jvm(conf)  # spark-submit's, or a JVM of our own
            context = SparkContext(conf=conf, gateway=gateway)
        except Exception as error:
            raise spark_not_started(error) from None
        _quiet_accumulator_server(context)
        if temporary is not None:
            _delete_as_the_jvm_exits(context, temporary.path)
    spark = SparkSession.builder.config(conf=conf).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    _quiet_task_failures(spark)
    _quiet_lost_connections()
    if os.environ.get("SPARKWAY_WARM_WORKERS", "1") != "0":
        start_python_workers(spark)
    log.debug("Spark session on %s", master)
    return spark


#: the Spark setting by which a ``sparkway server`` says which sparkway its workers run
SERVER_SETTING = "spark.sparkway.package"


def serve(address: str = "127.0.0.1", port: int = 15002) -> SparkSession:
    """Starts the Spark session of a ``sparkway server``: this machine's sparkway session
    with a Spark Connect endpoint on ``address:port``, to which programs attach
    (``SPARKWAY_SPARK_MASTER=sc://address:port``) and run without starting a JVM of
    their own.  Its Python workers run this installation's sparkway."""
    spark_releases.require("sparkway server (Spark Connect's server, which pyspark's package ships from 4.0 on)",
                           (4, 0))
    os.environ["SPARKWAY_SPARK_CONF"] = json.dumps({
        **user_conf(),
        "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
        "spark.connect.grpc.binding.address": address,
        "spark.connect.grpc.binding.port": str(port),
        SERVER_SETTING: daemon.package_identity(),
    })
    return get_spark(os.environ.get("SPARKWAY_SPARK_MASTER") or DEFAULT_MASTER, optimizing_jit=True)


def _attach(address: str) -> SparkSession:
    """A Spark Connect session on the server at ``address``, with sparkway's settings.
    The server's Python workers unpickle this program's operators: they must run the
    same sparkway, which a ``sparkway server`` names."""
    try:
        _check_listening(address)  # the client itself retries for minutes
        spark = SparkSession.builder.remote(address).getOrCreate()
        served = spark.conf.get(SERVER_SETTING, None)
    except Exception as error:
        log.debug("no Spark Connect session at %s", address, exc_info=True)
        said = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        todo = ("install the Spark Connect client: pip install 'pyspark[connect]'" if isinstance(error, ImportError)
                else "start one with `sparkway server`, or unset SPARKWAY_SPARK_MASTER")
        raise SparkError(f"could not attach to the Spark Connect server at {shown(address)}: {said} ({todo})") from None
    if served is not None and served != daemon.package_identity():
        raise SparkError(f"the sparkway server at {shown(address)} runs sparkway {served}, this program sparkway "
                         f"{daemon.package_identity()}: start a server from this installation (sparkway server)")
    settings = {**SQL_SETTINGS, **user_conf()}
    spark_releases.set_settings(spark, {k: v for k, v in settings.items() if k not in CLASSIC_ONLY_SETTINGS})
    log.info("Attached to the Spark Connect server at %s", shown(address))
    return spark


@functools.cache
def _exit_without_collecting() -> None:
    """At exit, the objects that exist then are left out of Python's last garbage
    collection, which would otherwise walk every object of pandas, pyarrow and pyspark
    (0.2 s of a 1.3 s program attached to the daemon).  Objects not in reference cycles
    are still freed and finalized (files closed) as modules are cleared, and Python does
    not promise finalizers of the objects left at exit anyway; handlers registered after
    this one (the program's own) run before it."""
    atexit.register(gc.freeze)


def shown(address: str) -> str:
    """``address`` as logs and errors print it: without the value of its token, which
    gives whoever reads it the server (the daemon's is private to the user).

    >>> shown("sc://localhost:15002/;token=s3cret;user_id=ann")
    'sc://localhost:15002/;token=***;user_id=ann'
    """
    return re.sub(r"(;token=)[^;]*", r"\1***", address)


def _check_listening(address: str, timeout_s: float = 5.0) -> None:
    """Raises ``ConnectionRefusedError`` (or a timeout) if nothing listens at the
    ``sc://host[:port][/;params]`` address."""
    hostport = address[len("sc://"):].split("/", 1)[0]
    host, _, port = hostport.rpartition(":") if ":" in hostport else (hostport, "", "15002")
    with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
        pass


def is_remote(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (attached to a server)."""
    return not hasattr(spark, "_jsparkSession")


#: the local property of a step's Spark jobs that tells their tasks the step's number
#: and time (``computing_step``)
STEP_PROPERTY = "sparkway.step"


@contextlib.contextmanager
def computing_step(spark: SparkSession, step: int, time: int) -> Iterator[None]:
    """The Spark jobs started in the block compute step ``step`` at ``time``: stateful
    tasks read it (``task_step``), so that their Python functions stay the same from
    step to step (``map_in_arrow``).  Nested blocks (the rounds of ``pw.iterate``)
    restore the outer step at their end."""
    if is_remote(spark):  # a Spark Connect client has no local properties
        yield
        return
    context = spark.sparkContext
    outer = context.getLocalProperty(STEP_PROPERTY)
    context.setLocalProperty(STEP_PROPERTY, f"{step} {time}")
    try:
        yield
    finally:
        context.setLocalProperty(STEP_PROPERTY, outer)  # None removes it


def task_step() -> tuple[int, int]:
    """In a Spark task: the step (number, time) its job computes (``computing_step``)."""
    from pyspark import TaskContext

    value = TaskContext.get().getLocalProperty(STEP_PROPERTY)
    if value is None:
        raise RuntimeError("a stateful task ran in a Spark job started outside of computing_step()")
    step, time = value.split()
    return int(step), int(time)


def map_in_arrow(frame: DataFrame, function: Callable[..., Any], schema: T.StructType,
                 step: tuple[int, int]) -> DataFrame:
    """``frame.mapInArrow(functools.partial(function, step=step), schema)``.

    On a classic Spark, the Python function given to the JVM is made once per
    ``function`` and ``schema`` (pickled, then registered through some 50 py4j calls: a
    tenth of a streaming step of 1,000 rows), and later steps reuse it: ``function``
    gets ``step=None`` and its tasks read their step from the job (``task_step``)."""
    spark = frame.sparkSession
    if is_remote(spark):
        return frame.mapInArrow(functools.partial(function, step=step), schema)
    udf = _arrow_function(spark.sparkContext, functools.partial(function, step=None), schema)
    return spark_releases.map_in_arrow(frame, udf)


#: per SparkContext, the Python functions of ``map_in_arrow`` by their pickled bytes
_ARROW_FUNCTIONS: "weakref.WeakKeyDictionary[SparkContext, collections.OrderedDict[bytes, Any]]" = (
    weakref.WeakKeyDictionary()
)
ARROW_FUNCTIONS_KEPT = 256


def _arrow_function(context: SparkContext, function: Callable[..., Any], schema: T.StructType) -> Any:
    from pyspark import cloudpickle

    made = _ARROW_FUNCTIONS.setdefault(context, collections.OrderedDict())
    key = cloudpickle.dumps(function) + schema.json().encode()  # equal bytes: the same function
    if key in made:
        made.move_to_end(key)
        return made[key]
    made[key] = spark_releases.map_function(function, schema)
    if len(made) > ARROW_FUNCTIONS_KEPT:
        made.popitem(last=False)
    return made[key]


def default_parallelism(spark: SparkSession) -> int:
    """How many tasks the session runs at once by default."""
    if is_remote(spark):
        return int(spark.conf.get("spark.default.parallelism", "2") or 2)
    return spark.sparkContext.defaultParallelism


def spark_ui_url(spark: SparkSession) -> str | None:
    """The address of the session's web UI; None when it has none (or it is a server's)."""
    return None if is_remote(spark) else spark.sparkContext.uiWebUrl


def running_stages(context: SparkContext) -> Callable[[], list[dict[str, Any]]]:
    """A function giving the Spark stages running now, each with its tasks done (for the
    live view; it may be called from any thread)."""
    tracker = context.statusTracker()

    def stages() -> list[dict[str, Any]]:
        running = []
        for stage in sorted(tracker.getActiveStageIds()):
            info = tracker.getStageInfo(stage)
            if info is not None:
                running.append({"stage": stage, "name": info.name, "tasks": info.numTasks,
                                "done": info.numCompletedTasks, "running": info.numActiveTasks})
        return running

    return stages


def _workers_run_this_python(spark: SparkSession) -> None:
    """A session of the user's own runs Spark's Python workers with ``PYSPARK_PYTHON`` as
    it was when the session started, by default the ``python3`` of the PATH, which may
    not have sparkway (the workers then fail: "No module named 'sparkway'").  In local
    mode the workers run on this machine: they run this program's interpreter instead
    (Python functions made later carry it; a cluster keeps its own setting)."""
    context = spark.sparkContext
    workers = os.path.abspath(shutil.which(context.pythonExec) or context.pythonExec)
    if context.master.startswith("local") and workers != os.path.abspath(sys.executable):
        log.info("Spark's Python workers run %s, this program's interpreter, instead of %s",
                 sys.executable, context.pythonExec)
        context.pythonExec = sys.executable


def user_conf() -> dict[str, str]:
    """``$SPARKWAY_SPARK_CONF``: Spark settings for the session sparkway starts, as a JSON
    object (``sparkway run --conf KEY=VALUE`` sets it).

    >>> os.environ["SPARKWAY_SPARK_CONF"] = '{"spark.sql.shuffle.partitions": 8}'
    >>> user_conf()
    {'spark.sql.shuffle.partitions': '8'}
    >>> del os.environ["SPARKWAY_SPARK_CONF"]
    """
    text = os.environ.get("SPARKWAY_SPARK_CONF", "")
    try:
        settings = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        settings = None
    if not isinstance(settings, dict):
        raise ValueError(f"SPARKWAY_SPARK_CONF must be a JSON object of Spark settings, "
                         f'like {{"spark.sql.shuffle.partitions": "8"}}; it is {text!r}')
    return {str(key): str(value) for key, value in settings.items()}


#: what the JVM prints to stderr at every start that no user can act on: Spark's launcher
#: adds the module, for vectorized code on Java versions that have it
JVM_NOTICES = (b"WARNING: Using incubator modules: jdk.incubator.vector",)


#: the scratch folders of the JVMs this process started (open: their lock is held)
_JVM_TEMPORARY_FOLDERS: list[ScratchFolder] = []


def _jvm_temporary_folder(conf: SparkConf) -> ScratchFolder | None:
    """A scratch folder for the temporary files of the JVM about to start (Spark's local
    directories: shuffle and spill files, a run's files and artifacts), as its
    ``java.io.tmpdir``, unless the user's options name one: a JVM killed with its
    program leaves them behind, and a later sparkway process deletes them."""
    options = conf.get("spark.driver.extraJavaOptions", "") or ""
    if "-Djava.io.tmpdir=" in options:
        return None
    folder = ScratchFolder("spark")
    _JVM_TEMPORARY_FOLDERS.append(folder)
    conf.set("spark.driver.extraJavaOptions", f"{options} -Djava.io.tmpdir={shlex.quote(folder.path)}".strip())
    return folder


def _delete_as_the_jvm_exits(context: SparkContext, path: str) -> None:
    """The JVM deletes folder ``path`` and all in it as it exits, after Spark's own
    clean-up, which leaves some of its files (Spark Connect's model cache).  Where this
    Spark lacks that hook, the folder stays until a later process deletes it."""
    jvm = context._jvm
    try:
        jvm.org.apache.spark.util.ShutdownHookManager.registerShutdownDeleteDir(jvm.java.io.File(path))
    except Exception as error:  # noqa: BLE001 - an internal API of Spark's
        log.debug("The JVM will not delete its temporary folder %s: %s", path, error)


def _launch_jvm(conf: SparkConf) -> Any:
    """Spark's JVM (pyspark's gateway to it), its stderr passed on to ours without the
    ``JVM_NOTICES``.  The pipe is read from before the JVM starts, so that the JVM can
    never block on a full pipe, even while pyspark waits for it to come up."""
    read_end, write_end = os.pipe()
    threading.Thread(target=_pass_on_stderr, args=(read_end,), name="sparkway-jvm-stderr", daemon=True).start()
    try:
        return launch_gateway(conf, popen_kwargs={"stderr": write_end})
    finally:
        os.close(write_end)  # the JVM holds its own copy: the reader ends when the JVM does


def _pass_on_stderr(read_end: int) -> None:
    """Passes the JVM's stderr on, without its notices, and without the lines of Java
    stack under an error it logs unless the ``sparkway`` logger is at DEBUG level
    (sparkway reports the error itself, in one line)."""
    with os.fdopen(read_end, "rb") as lines:
        for line in lines:  # to the end: a pipe not read would stop the JVM when full
            if line.rstrip(b"\r\n") in JVM_NOTICES:
                continue
            if line.startswith(JAVA_STACK_LINES) and not log.isEnabledFor(logging.DEBUG):
                continue
            with contextlib.suppress(OSError):  # no stderr (a closed descriptor)
                os.write(2, line)


#: how the lines of a Java stack start ("\tat org.apache...", "\t... 12 more")
JAVA_STACK_LINES = (b"\tat ", b"\t... ")


def jvm_process() -> subprocess.Popen | None:
    """The process of the JVM sparkway started (None: the session is not sparkway's)."""
    return getattr(SparkContext._gateway, "proc", None)


def _quiet_accumulator_server(context: SparkContext) -> None:
    """PySpark's accumulator server prints a traceback when the JVM's connection to it
    breaks (the JVM ended): sparkway reports that in one line; the traceback goes to the
    debug log."""
    server = getattr(context, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda request, address: log.debug(
            "PySpark's accumulator server lost the JVM", exc_info=True)


class _LostConnectionReport(logging.Filter):
    """py4j reports a connection the JVM broke (reset: the JVM ended) on Python's root
    logger, as a traceback at ERROR level, before it raises the error to the caller: the
    step then reports it as one ``SparkError``, and a finalizer deleting a Java object
    ignores it.  The report goes to sparkway's debug log instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.pathname.startswith(_PY4J_FOLDER):
            return True
        log.debug("py4j: %s", record.getMessage(), exc_info=record.exc_info)
        return False


_PY4J_FOLDER = os.path.dirname(py4j.__file__) + os.sep


def _quiet_lost_connections() -> None:
    root = logging.getLogger()
    if not any(isinstance(f, _LostConnectionReport) for f in root.filters):
        root.addFilter(_LostConnectionReport())


def _quiet_task_failures(spark: SparkSession) -> None:
    """A failed task is reported to the user once, as a sparkway error naming the
    operator (``engine.failures``); Spark's own log of it, a page of Java stack per
    task, is turned off (the whole error is still logged by sparkway at DEBUG level)."""
    jvm = spark.sparkContext._jvm
    level = jvm.org.apache.logging.log4j.Level.OFF
    for logger in ("org.apache.spark.executor.Executor", "org.apache.spark.scheduler.TaskSetManager"):
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(logger, level)
    # PySpark's own report of a failed DataFrame query (JSON with the Java stack, on stderr)
    logging.getLogger("DataFrameQueryContextLogger").disabled = True


WARM_UP_JOB_GROUP = "sparkway-start-python-workers"
#: how long an exiting program waits for the warm-up to end
WARM_UP_EXIT_WAIT_S = 10.0


def start_python_workers(spark: SparkSession) -> threading.Thread:
    """Starts Spark's Python workers in the background (``warm_python_workers``) while the
    driver restores metadata, reads the input and plans the first step, which would
    otherwise wait for them inside its first Python tasks.  Returns the thread, started.
    ``get_spark`` calls it unless ``SPARKWAY_WARM_WORKERS=0``."""

    def run() -> None:
        spark.sparkContext.setJobGroup(WARM_UP_JOB_GROUP, "sparkway: starting Python workers")
        try:
            warm_python_workers(spark)
        except Exception as error:  # the session stopped meanwhile: nothing to warm
            log.debug("Python workers were not started ahead: %s", error)

    thread = threading.Thread(target=run, name=WARM_UP_JOB_GROUP, daemon=True)
    thread.start()
    # a program shorter than the warm-up (its job waits behind the step's, under load)
    # would exit with the warm-up's task still running, which Spark's shutdown reports
    # with a page of Java stack; atexit runs this before pyspark's own exit handlers
    atexit.register(thread.join, WARM_UP_EXIT_WAIT_S)
    return thread


def warm_python_workers(spark: SparkSession) -> set[int]:
    """Runs one Python task per task slot, so that Spark starts its Python daemon, which
    imports the engine (``worker_daemon``, half a second), and forks a worker per slot.
    Returns the process ids of the daemons seen.

    The tasks are an RDD's: its job starts at once, where a query's would wait for the
    cold JVM to plan it (a fresh rerun's step ends 0.3-0.6 s sooner).  Spark keys its
    Python daemons by the workers' environment, to which SQL's Python tasks add
    SPARK_SIMPLIFIED_TRACEBACK (on by default): the tasks' function gets it too, so that
    their workers are those of the steps' kernels.  (A query's Python function made
    meanwhile in another thread may get it as well: SQL adds it anyway.)"""
    context = spark.sparkContext
    slots = context.defaultParallelism
    tasks = context.parallelize(range(slots), slots).map(_daemon_of_worker)
    environment = context.environment
    context.environment = {**environment, "SPARK_SIMPLIFIED_TRACEBACK": "1"}
    try:
        tasks._jrdd  # makes the tasks' Python function, with that environment
    finally:
        context.environment = environment
    return set(tasks.collect())


def _daemon_of_worker(_: int) -> int:
    return os.getppid()
