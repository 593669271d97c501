"""``pw.io.spark``: Spark's own data, for programs that live next to Spark SQL: a DataFrame
or a table of the Spark catalog as a static source, and a table of the catalog that
receives each time's result (sparkway's own module: Pathway has none).

Both use the SparkSession sparkway runs on (``pw.io.spark.session()``): the active one,
or the one sparkway starts.  See docs/parquet-and-spark.md.
"""

from __future__ import annotations

from typing import Any

from sparkway.api import graph
from sparkway.api.schema import Schema
from sparkway.api.session import spark_session
from sparkway.api.table import Table
from sparkway.connectors.base import SNAPSHOT, STREAM_OF_CHANGES
from sparkway.connectors.spark import SparkSource, SparkTableSink, columns_of_frame
from sparkway.errors import PlanError, traced
from sparkway.io._common import persistent_name, refuse_unknown_options

__all__ = ["read", "session", "write"]


def session() -> Any:
    """The SparkSession sparkway runs on: the active one, or the one sparkway starts
    (with its settings); make the DataFrames ``read`` takes with it.

    >>> import sparkway as pw
    >>> pw.io.spark.session().range(3).count()
    3
    """
    return spark_session()


@traced
def read(source: Any, schema: type[Schema] | None = None, *, name: str | None = None,
         persistent_id: str | None = None, **kwargs: Any) -> Table:
    """The rows of a Spark DataFrame, or of the table of the Spark catalog named
    ``source`` (``spark.table(source)``), as a static table.

    Spark computes the DataFrame when the program runs and hands its rows over as Arrow
    batches.  Without ``schema``, the columns and their types are the DataFrame's (a
    nullable column is optional; structs and maps are read as ``pw.Json``, ``TIMESTAMP``
    as ``pw.DateTimeUtc``, ``TIMESTAMP_NTZ`` and ``DATE`` as ``pw.DateTimeNaive``);
    with one, its columns are read by name and converted to its types (an error names
    the column whose type does not fit), and its primary key gives the row ids.  Rows
    without a key get ids made from their values.  With persistence, a restart reads the
    DataFrame again and passes on only what changed since the last run.

    >>> import sparkway as pw
    >>> frame = pw.io.spark.session().createDataFrame([("a", 1), ("b", 2)], "word string, n long")
    >>> table = pw.io.spark.read(frame)
    >>> table.schema.typehints()
    {'word': str | None, 'n': int | None}
    >>> pw.debug.compute_and_print(table, include_id=False)
    word | n
    a    | 1
    b    | 2
    """
    refuse_unknown_options("pw.io.spark.read", kwargs, ("autocommit_duration_ms", "debug_data", "max_backlog_size"))
    if isinstance(source, str):
        spark = spark_session()
        if not spark.catalog.tableExists(source):
            raise PlanError(f"pw.io.spark.read: there is no table {source!r} in the Spark catalog")
        frame = spark.table(source)
    elif hasattr(source, "schema") and hasattr(source, "sparkSession"):  # a classic or a Spark Connect DataFrame
        frame = source
    else:
        raise PlanError("pw.io.spark.read takes a Spark DataFrame or the name of a table of the Spark catalog, "
                        f"not {type(source).__name__}")
    if schema is None:
        columns = columns_of_frame(frame)
    else:
        columns = schema.columns()
        present = set(frame.columns)
        missing = [c.input_name for c in columns.values()
                   if c.input_name not in present and not (c.has_default or c.dtype.optional)]
        if missing:
            raise PlanError(f"pw.io.spark.read: the DataFrame has no column(s) {missing} that the schema requires; "
                            f"its columns: {frame.columns}")
    if not columns:
        raise PlanError("pw.io.spark.read: the DataFrame has no columns")
    spark_source = SparkSource(source if isinstance(source, str) else frame, columns, session=spark_session,
                               name=persistent_name(name, persistent_id))
    return graph.table_from_source(spark_source)


@traced
def write(table: Table, name: str, *, mode: str = STREAM_OF_CHANGES, **kwargs: Any) -> None:
    """Writes ``table`` to the table ``name`` of the Spark catalog (``saveAsTable``), at
    every time, for Spark SQL to read.

    ``mode="stream_of_changes"`` (the default) appends every change as a row with the
    columns, ``time`` and ``diff``; ``mode="snapshot"`` keeps the table equal to the
    current result: a row per row of ``table``, with its id in a ``_id`` column, the
    whole table overwritten at each time that changes it.  A table that exists must have
    the columns written; in ``stream_of_changes`` mode it is appended to, and times it
    already holds are not written again.  Date-times are written as ``TIMESTAMP`` (UTC)
    and ``TIMESTAMP_NTZ`` (naive) in microseconds, durations as microseconds (BIGINT).

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("word | n\\n a | 1")
    >>> pw.io.spark.write(t, "word_counts", mode="snapshot")
    >>> # pw.run() then keeps spark.table("word_counts") equal to t
    """
    refuse_unknown_options("pw.io.spark.write", kwargs)
    if mode not in (SNAPSHOT, STREAM_OF_CHANGES):
        raise PlanError(f"pw.io.spark.write: unknown mode {mode!r}; expected {SNAPSHOT!r} or {STREAM_OF_CHANGES!r}")
    if not isinstance(name, str) or not name:
        raise PlanError("pw.io.spark.write: name must be the name of a Spark table, e.g. 'counts' or 'db.counts'")
    sink = SparkTableSink(name, table.schema._dtypes(), table_type=mode, session=spark_session)
    graph.write_to_sink(table, sink)
