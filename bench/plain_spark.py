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

Spark settings: the same as sparkway's session (``local[2]``, 2 shuffle partitions, AQE
on, no UI, serial GC and C1-only JIT), so that both sides run on the same Spark tuning;
measured side by side on 1M rows, the JVM's defaults made this job slower (39 s against
24 s: parallel GC threads and C2 compilation compete for the 2 cores), so the baseline
gets the faster setting.  The driver gets 4 GB of heap.
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


#: sparkway's JVM options (sparkway/engine/spark.py): on this machine they make this job
#: faster too (1M rows: 24 s instead of 39 s with the JVM's defaults, measured side by side)
JVM_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto"


def plain_session(app: str, jvm_options: str = JVM_OPTIONS, master: str = "local[2]", shuffle_partitions: str = "2",
                  **conf: str) -> SparkSession:
    """The Spark session of the baselines: as a user would start one, with sparkway's
    parallelism and JVM options, 4 GB of driver heap and ``conf`` besides."""
    builder = (
        SparkSession.builder.master(master).appName(app)
        .config("spark.sql.shuffle.partitions", shuffle_partitions)
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.driver.extraJavaOptions", jvm_options)
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--logs", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--pipeline", default="sessions", choices=sorted(PIPELINES))
    parser.add_argument("--probe")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--shuffle-partitions", default="2")
    parser.add_argument("--jvm-options", default=JVM_OPTIONS, help="the driver's extra JVM options")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    t0 = time.time()
    spark = plain_session(f"plain-{args.pipeline}", args.jvm_options, args.master, args.shuffle_partitions)
    t1 = time.time()
    logs = spark.read.csv(args.logs, header=True, schema="user_id STRING, access_time BIGINT")
    PIPELINES[args.pipeline](logs).write.mode("overwrite").option("header", True).csv(args.out)
    t2 = time.time()
    spark.stop()
    if args.probe:
        with open(args.probe, "a", encoding="utf-8") as f:
            f.write(json.dumps({"kind": "plain", "imports": t0 - STARTED, "spark": t1 - t0, "job": t2 - t1}) + "\n")


if __name__ == "__main__":
    main()
