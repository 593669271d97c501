"""The SparkSession sparkway runs on, for what reads or writes Spark's own data
(``pw.io.spark``)."""

from __future__ import annotations

from typing import Any


def spark_session() -> Any:
    """The active SparkSession, or the one sparkway starts (``engine.spark.get_spark``).

    >>> spark_session().range(2).count()   # doctest: +SKIP
    2
    """
    from sparkway.engine.spark import get_spark

    return get_spark()


__all__ = ["spark_session"]
