"""The streaming groupby-count of the latency benchmark (``bench/latency.py``) as a user
would write it with Spark Structured Streaming: a file stream of the CSV files of
``--input``, ``groupBy(user_id).count()`` in update mode, the state in Spark's RocksDB
state store, in the plain job's session (``plain_spark.plain_session``: 2 shuffle
partitions, sparkway's driver memory, Spark's default JVM settings as a user runs it;
before issue 35 it took sparkway's JVM options), micro-batches as soon as files arrive;
each batch's updated counts are appended to ``--out`` as CSV lines ``user_id,count``
(the driver writes them with pyarrow, ``foreachBatch``).  Runs until it is stopped
(SIGTERM).

    python bench/streaming_spark.py --input DIR --out out.csv --checkpoint DIR
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

import pyarrow.csv as pacsv
from plain_spark import plain_session
from pyspark.sql import DataFrame


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--input", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--checkpoint", required=True)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = plain_session(
        "structured-streaming-count",
        **{"spark.sql.streaming.stateStore.providerClass":
           "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"},
    )

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
