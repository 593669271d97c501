"""The streaming groupby-count of the latency benchmark (``bench/latency.py``) as a user
would write it with Spark Structured Streaming: a file stream of the CSV files of
``--input``, ``groupBy(user_id).count()`` in update mode, the state in Spark's RocksDB
state store, 2 shuffle partitions, micro-batches as soon as files arrive; each batch's
updated counts are appended to ``--out`` as CSV lines ``user_id,count`` (the driver
writes them with pyarrow, ``foreachBatch``).  Runs until it is stopped (SIGTERM).

    python bench/streaming_spark.py --input DIR --out out.csv --checkpoint DIR
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from pyspark.sql import DataFrame, SparkSession


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--input", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--checkpoint", required=True)
    # the plain PySpark job's JVM options (bench/plain_spark.py), which are sparkway's
    parser.add_argument("--jvm-options", default="-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("structured-streaming-count")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.stateStore.providerClass",
                "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.driver.extraJavaOptions", args.jvm_options)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    import pyarrow.csv as pacsv

    def append(batch: DataFrame, batch_id: int) -> None:
        table = batch.toArrow()
        with open(args.out, "ab") as out:
            pacsv.write_csv(table, out, pacsv.WriteOptions(include_header=False, quoting_style="none"))

    logs = spark.readStream.schema("user_id STRING, access_time BIGINT").option("header", True).csv(args.input)
    query = (
        logs.groupBy("user_id").count()
        .writeStream.outputMode("update").foreachBatch(append)
        .option("checkpointLocation", args.checkpoint)
        .start()
    )
    signal.signal(signal.SIGTERM, lambda *_: query.stop())
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
