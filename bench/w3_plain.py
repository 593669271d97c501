"""W3's baseline: the job of ``bench/w3_job.py`` as a user would write it in plain PySpark.

    python bench/w3_plain.py --logs DIR --out DIR [--probe probe.jsonl] [--jvm-options ...]

Reads the access logs of ``--logs`` with Spark's CSV reader and an explicit schema, keeps
the rows with a status under 400, adds the same three columns (``page``: the path in
lower case, ``kb``: ``bytes / 1024``, ``hour``: the hour in the session's time zone,
Spark's default: the machine's, UTC here) and writes them with ``df.write.csv`` to the
directory ``--out`` (a part file per task), with Spark's default settings: no header, no
compression.  The session is ``plain_spark.plain_session``'s (``local[2]``, sparkway's
driver memory, Spark's default JVM settings unless ``--jvm-options``); the job has no
shuffle, so the shuffle partitions are left as Spark sets them.  ``--probe`` gets the
job's timings and the driver's own peak RSS (this Python process alone, without its JVM
child).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

STARTED = time.time()

from plain_spark import add_session_arguments, plain_session, write_probe  # noqa: E402
from pyspark.sql import DataFrame  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

SCHEMA = ("ip STRING, user_id STRING, access_time BIGINT, method STRING, path STRING, status BIGINT, "
          "bytes BIGINT, user_agent STRING")


def transform(logs: DataFrame) -> DataFrame:
    """W3's rows: the requests under status 400, with three computed columns."""
    return logs.where(F.col("status") < 400).select(
        "*",
        F.lower("path").alias("page"),
        (F.col("bytes") / 1024).alias("kb"),
        F.hour(F.timestamp_seconds("access_time")).alias("hour"),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--logs", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--probe")
    add_session_arguments(parser)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    t0 = time.time()
    spark = plain_session("plain-w3", args.jvm_options, args.master, None, args.driver_memory)
    t1 = time.time()
    transform(spark.read.csv(args.logs, header=True, schema=SCHEMA)).write.csv(args.out)
    t2 = time.time()
    spark.stop()
    write_probe(args.probe, imports=t0 - STARTED, spark=t1 - t0, job=t2 - t1)


if __name__ == "__main__":
    main()
