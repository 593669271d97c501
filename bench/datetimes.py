"""Spark's own work on date-times in the two mappings sparkway could use: Spark
timestamps of microseconds (its mapping before) and longs of nanoseconds (its mapping
now, as Pathway keeps date-times).  2M rows, cached; the median of 5 runs per operation.

    .venv/bin/python bench/datetimes.py
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

ROWS = 2_000_000


def _instant(name: str) -> Column:
    """A long of nanoseconds as a Spark timestamp, as sparkway's ``.dt`` methods make it."""
    return F.timestamp_micros(F.expr(f"({name} - pmod({name}, 1000)) div 1000"))


# per operation: how the micros mapping computes it, how the nanos one does
CASES: dict[str, tuple[Callable[[DataFrame], object], Callable[[DataFrame], object]]] = {
    "compare (a < b)": (lambda d: d.filter(F.col("a") < F.col("b")).count(),) * 2,
    "difference (a - b), max": (
        lambda d: d.agg(F.max(F.unix_micros(F.timestamp_micros(F.lit(0)) + (F.col("a") - F.col("b"))))).collect(),
        lambda d: d.agg(F.max(F.try_subtract(F.col("a"), F.col("b")))).collect(),
    ),
    "year()": (
        lambda d: d.agg(F.sum(F.year("a"))).collect(),
        lambda d: d.agg(F.sum(F.year(_instant("a")))).collect(),
    ),
    "group by the date-time": (lambda d: d.groupBy("a").count().count(),) * 2,
    "sort by the date-time": (lambda d: d.orderBy("a").agg(F.sum(F.hash("a"))).collect(),) * 2,
}


def _median_seconds(run: Callable[[DataFrame], object], frame: DataFrame) -> float:
    taken = []
    for _ in range(5):
        start = time.perf_counter()
        run(frame)
        taken.append(time.perf_counter() - start)
    return statistics.median(taken)


def main() -> None:
    spark = (SparkSession.builder.master("local[2]").config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    start, step = 1_700_000_000_000_000_000, 1_234_567_891
    nanos = spark.range(ROWS).select(
        (F.lit(start) + F.col("id") * F.lit(step)).alias("a"),
        (F.lit(start) + (F.lit(ROWS) - F.col("id")) * F.lit(step)).alias("b"),
    ).cache()
    micros = nanos.select(*(F.timestamp_micros(F.expr(f"{c} div 1000")).cast("timestamp_ntz").alias(c)
                            for c in ("a", "b"))).cache()
    nanos.count(), micros.count()
    for name, (old, new) in CASES.items():
        print(f"{name:26s} micros: {_median_seconds(old, micros) * 1000:6.0f} ms   "
              f"nanos: {_median_seconds(new, nanos) * 1000:6.0f} ms")


if __name__ == "__main__":
    main()
