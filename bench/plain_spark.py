"""The baseline: a plain PySpark batch job recomputing a pipeline's result from scratch.

    python bench/plain_spark.py --logs DIR --out DIR [--pipeline sessions|count] [--probe probe.jsonl]

Reads every CSV file of ``--logs`` with Spark's CSV reader and an explicit schema,
computes what ``bench/sparkway_job.py``'s pipeline of the same name computes, and writes
it as CSV:

- ``sessions``: cuts each user's visits into sessions with window functions (``lag`` of
  the previous visit, a new session where the gap is 300 s or more, a running sum of
  those starts as the session number) and aggregates each session as the seed's program
  does (user_id, session_length, session_start, session_finish, count).  The session
  rule is sparkway's and Pathway's: consecutive visits of a user are in one session when
  they are less than ``max_gap`` = 300 s apart;
- ``count``: log lines per user (user_id, count).

Spark settings: as a user would run the job on this machine: ``local[2]`` and 2 shuffle
partitions (the machine's cores; AQE, Spark's default, is on), no web UI, the same driver
memory as sparkway's (``--driver-memory``, by default ``$SPARKWAY_DRIVER_MEMORY`` or 4g,
sparkway's default), and Spark's default JVM settings.  ``--jvm-options`` gives the driver
extra JVM options: ``bench/run.py --tuned-baseline`` runs the job a second time with
sparkway's (``TUNED_JVM_OPTIONS``), reported beside the default baseline, never instead of
it.  (The baseline used to take sparkway's options: at 10M rows they made it
about twice as slow, 64 s against 33 s with Spark's defaults.)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

STARTED = time.time()

from pyspark.sql import DataFrame, SparkSession, Window  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from machine import own_peak_rss  # noqa: E402

MAX_GAP = 300


def sessions(logs: DataFrame) -> DataFrame:
    by_user = Window.partitionBy("user_id").orderBy("access_time")
    starts = logs.withColumn("_prev", F.lag("access_time").over(by_user)).withColumn(
        "_new", F.when(F.col("_prev").isNull() | (F.col("access_time") - F.col("_prev") >= MAX_GAP), 1).otherwise(0)
    )
    numbered = starts.withColumn(
        "_session", F.sum("_new").over(by_user.rowsBetween(Window.unboundedPreceding, Window.currentRow))
    )
    return numbered.groupBy("user_id", "_session").agg(
        F.min("access_time").alias("session_start"),
        F.max("access_time").alias("session_finish"),
        F.count(F.lit(1)).alias("count"),
    ).select(
        "user_id",
        (F.col("session_finish") - F.col("session_start")).alias("session_length"),
        "session_start",
        "session_finish",
        "count",
    )


def count(logs: DataFrame) -> DataFrame:
    return logs.groupBy("user_id").agg(F.count(F.lit(1)).alias("count"))


PIPELINES = {"sessions": sessions, "count": count}


#: sparkway's JVM options for a static program (sparkway/engine/spark.py: serial GC, the
#: JIT's fast tier only): the optional tuned baseline's, never the default one's
TUNED_JVM_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto"


def default_driver_memory() -> str:
    """sparkway's driver memory: ``$SPARKWAY_DRIVER_MEMORY``, else its default, 4g."""
    return os.environ.get("SPARKWAY_DRIVER_MEMORY") or "4g"


def plain_session(app: str, jvm_options: str = "", master: str = "local[2]", shuffle_partitions: str | None = None,
                  driver_memory: str | None = None, **conf: str) -> SparkSession:
    """The Spark session of the baselines, as a user would start one: ``master``, Spark's
    default JVM settings unless ``jvm_options`` adds some, ``driver_memory`` (sparkway's
    by default), ``shuffle_partitions`` unless None, no web UI, and ``conf`` besides."""
    builder = (
        SparkSession.builder.master(master).appName(app)
        .config("spark.ui.enabled", "false")  # neither side serves a UI: not part of the work
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", driver_memory or default_driver_memory())
    )
    if shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", shuffle_partitions)
    if jvm_options:
        builder = builder.config("spark.driver.extraJavaOptions", jvm_options)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a baseline's Spark session, shared by the plain jobs' command lines."""
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default=None, help="default: $SPARKWAY_DRIVER_MEMORY, else 4g (sparkway's)")
    parser.add_argument("--jvm-options", default="", help="extra JVM options of the driver (default none: Spark's)")
    parser.add_argument("--tuned", dest="jvm_options", action="store_const", const=TUNED_JVM_OPTIONS,
                        help=f"the tuned baseline: sparkway's JVM options, {TUNED_JVM_OPTIONS!r}")


def write_probe(path: str | None, **fields: float) -> None:
    """Appends the job's timings and its own peak RSS (the Python driver alone, without
    its JVM child) as one JSON line to ``path``."""
    if not path:
        return
    peak = own_peak_rss()
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"kind": "plain", **fields, "driver_peak_rss_bytes": peak}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--logs", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--pipeline", default="sessions", choices=sorted(PIPELINES))
    parser.add_argument("--probe")
    # Spark's default (200, which adaptive execution coalesces), as a user runs the job
    parser.add_argument("--shuffle-partitions", default=None)
    add_session_arguments(parser)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    t0 = time.time()
    spark = plain_session(f"plain-{args.pipeline}", args.jvm_options, args.master, args.shuffle_partitions,
                          args.driver_memory)
    t1 = time.time()
    logs = spark.read.csv(args.logs, header=True, schema="user_id STRING, access_time BIGINT")
    PIPELINES[args.pipeline](logs).write.mode("overwrite").option("header", True).csv(args.out)
    t2 = time.time()
    spark.stop()
    write_probe(args.probe, imports=t0 - STARTED, spark=t1 - t0, job=t2 - t1)


if __name__ == "__main__":
    main()
