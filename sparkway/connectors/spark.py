"""Spark's own data as a source and a sink: a DataFrame or a table of the Spark catalog
(``SparkSource``), and a table of the catalog that receives each time's result
(``SparkTableSink``).

Source
------
A static source: one segment, ``{"kind": "snapshot", "generation": g}``, reads the whole
DataFrame.  Spark evaluates it (a catalog table is refreshed first, so that files added
since are seen), computes the row ids, and hands the rows to this process as Arrow
batches (``DataFrame.toArrow``, no Python object per row); the values are converted as
``formats.arrow`` says.  A row's id comes from the schema's primary key, else from its
values (a hash of the source's name and the row, and of the row's occurrence among equal
rows), so that reading the same data again gives the same ids.

With persistence, the rows read are kept in the storage (``snapshot/<g>.arrow``) and the
position is the generation read.  A restart reads the DataFrame again as generation
g + 1: the kept rows are retracted and the new ones inserted, so downstream sees only
what changed in between (rows whose values did not change cancel out).

Sink
----
``stream_of_changes``: every change is appended as a row ``<columns>, time, diff``.  A
table that exists is appended to; times not above the largest ``time`` it holds are
skipped (a step replayed after a crash is not written twice).
``snapshot``: the table holds the current result, a row per row id (a ``_id`` column,
``^`` and 16 hex digits): each time, the rows whose ids changed are replaced, and the
table is overwritten with the result.  Writing a time again gives the same table.
Spark's Parquet tables have no transactions: a reader that reads while a time is being
written may see a partial write, and a crash in the middle of an overwrite can leave
the table empty (it is then written again from the next changes only).
"""

from __future__ import annotations

import logging
import time as _time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkway.connectors.base import ID_COLUMN, SNAPSHOT, STREAM_OF_CHANGES, OutputBatch, Segment, Sink, Source
from sparkway.connectors.formats.arrow import output_table, stored_column
from sparkway.connectors.formats.values import MAX_ROW_WARNINGS, stored_default
from sparkway.core import changes, dtypes, spark_releases
from sparkway.core.changes import DIFF, ID
from sparkway.core.columns import Column
from sparkway.core.dtypes import DType
from sparkway.core.text import pointer_text
from sparkway.errors import ConnectorError, PlanError, PlanTypeError
from sparkway.persistence.storage import BlobStorage

log = logging.getLogger("sparkway")

Session = Callable[[], Any]  # gives the SparkSession sparkway runs on


class SparkTableError(ConnectorError):
    """A Spark table cannot be read or written as asked."""


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def dtype_of_spark(kind: Any, nullable: bool, column: str) -> DType:
    """The column type of a Spark column's values (``pw.io.spark.read`` without a schema).

    >>> from pyspark.sql import types as T
    >>> str(dtype_of_spark(T.ArrayType(T.LongType(), containsNull=False), True, "x"))
    'Optional[list[int]]'

    """
    from pyspark.sql import types as T

    simple = [((T.ByteType, T.ShortType, T.IntegerType, T.LongType), dtypes.INT),
              ((T.FloatType, T.DoubleType), dtypes.FLOAT),
              ((T.StringType, T.CharType, T.VarcharType), dtypes.STR),
              ((T.BooleanType,), dtypes.BOOL), ((T.BinaryType,), dtypes.BYTES),
              ((T.TimestampNTZType, T.DateType), dtypes.DATE_TIME_NAIVE),
              ((T.TimestampType,), dtypes.DATE_TIME_UTC), ((T.DayTimeIntervalType,), dtypes.DURATION),
              ((T.StructType, T.MapType), dtypes.JSON)]
    found: DType | None = None
    if isinstance(kind, T.DecimalType):
        found = dtypes.INT if kind.scale == 0 and kind.precision <= 18 else dtypes.FLOAT
    elif isinstance(kind, T.ArrayType):
        found = DType("list", (dtype_of_spark(kind.elementType, kind.containsNull, column),))
    else:
        found = next((dtype for kinds, dtype in simple if isinstance(kind, kinds)), None)
    if found is None:
        raise PlanTypeError(f"column {column!r} of the Spark DataFrame is of type {kind.simpleString()}, which "
                            "sparkway cannot read: cast it (e.g. to a string) or give a schema")
    return found.with_optional(nullable)


def columns_of_frame(frame: Any) -> dict[str, Column]:
    """The columns of a DataFrame, typed from its Spark schema."""
    return {f.name: Column(f.name, dtype_of_spark(f.dataType, f.nullable, f.name)) for f in frame.schema.fields}


class SparkSource(Source):
    """The rows of a Spark DataFrame, or of a table of the Spark catalog, read once.

    >>> from sparkway.core.dtypes import INT
    >>> source = SparkSource("sales", {"n": Column("n", INT)}, session=lambda: None, name="sales")
    >>> source.discover()
    [{'kind': 'snapshot', 'generation': 0}]
    """

    mode = "static"  # a table or DataFrame as it is when the run starts
    connector_label = "SparkReader"

    def __init__(self, source: Any, columns: dict[str, Column], *, session: Session, name: str | None = None) -> None:
        self.frame = None if isinstance(source, str) else source
        self.table_name = source if isinstance(source, str) else None
        self.schema = dict(columns)
        self.columns = {n: c.dtype for n, c in self.schema.items()}
        self.key_columns = [n for n, c in self.schema.items() if c.primary_key]
        self.session = session
        self.name = name
        self.open(None)

    @property
    def what(self) -> str:
        return f"Spark table {self.table_name!r}" if self.table_name is not None else "the Spark DataFrame"

    # ------------------------------------------------------------------ life cycle

    def open(self, storage: BlobStorage | None) -> None:
        self._storage = storage
        self._generation: int | None = None  # the generation read and committed
        self._finished = False

    def position(self) -> dict[str, Any]:
        return {"version": 1} if self._generation is None else {"version": 1, "generation": self._generation}

    def restore(self, position: dict[str, Any]) -> None:
        self._generation = position.get("generation")
        self._finished = False

    def discover(self) -> list[Segment]:
        if self._finished:
            return []
        generation = 0 if self._generation is None else self._generation + 1
        return [{"kind": "snapshot", "generation": generation}]

    def advance(self, segments: list[Segment]) -> None:
        for segment in segments:
            previous, self._generation = self._generation, segment["generation"]
            if self._storage is not None and previous is not None and previous != self._generation:
                self._storage.delete(_blob(previous))
        if segments:
            self._finished = True
            log.warning("%s: Closing the data source", self.label)

    # ------------------------------------------------------------------------ read

    @property
    def output_schema(self) -> pa.Schema:
        schema = changes.arrow_schema(self.columns)
        return pa.schema([*schema, *changes.error_fields()]) if self.keep_errors else schema

    def read(self, segments: list[Segment]) -> pa.Table:
        parts = []
        for segment in segments:
            generation = segment["generation"]
            if generation > 0 and self._storage is not None:
                previous = _blob(generation - 1)
                if self._storage.exists(previous):
                    parts.append(_with_diff(self._storage.read_arrow(previous), -1))
                else:
                    log.warning("%s: the rows read by the previous run are not in the storage; they cannot be "
                                "retracted", self.label)
            rows = self._snapshot()
            if self._storage is not None:
                self._storage.write_arrow(_blob(generation), rows, compression="zstd")
            parts.append(_with_diff(rows, 1))
        if not parts:
            return self.output_schema.empty_table()
        return pa.concat_tables([changes.conform(p, self.output_schema) for p in parts])

    def _frame(self) -> Any:
        if self.table_name is None:
            return self.frame
        spark = self.session()
        try:
            spark.catalog.refreshTable(self.table_name)  # files written since the table was last read
            return spark.table(self.table_name)
        except Exception as error:  # AnalysisException: no such table
            raise SparkTableError(f"cannot read the Spark table {self.table_name!r}: {error}") from None

    def _snapshot(self) -> pa.Table:
        """Every row of the DataFrame now, with its id: ``_id, <columns>``."""
        from pyspark.sql import functions as F
        from pyspark.sql import types as T
        from pyspark.sql.window import Window

        frame = self._frame()
        present = {f.name: f.dataType for f in frame.schema.fields}
        selected, missing = [], []
        for name, column in self.schema.items():
            source = column.input_name
            if source not in present:
                if not (column.has_default or column.dtype.optional):
                    raise SparkTableError(f"{self.what} has no column {source!r}, which the schema requires; "
                                          f"its columns: {', '.join(present)}")
                missing.append(name)
                continue
            value = F.col(_quoted(source))
            if column.dtype.with_optional(False).name == "Json" and isinstance(
                    present[source], (T.StructType, T.MapType, T.ArrayType)):
                value = F.to_json(value)
            selected.append(value.alias(name))
        if not self.key_columns:
            content = F.xxhash64(F.lit(self.name or ""), *selected) if selected else F.lit(0)
            rows = frame.select(*selected).withColumn("_pw_hash", content)
            occurrence = F.row_number().over(Window.partitionBy("_pw_hash").orderBy("_pw_hash"))
            rows = rows.withColumn(ID, F.xxhash64(F.col("_pw_hash"), occurrence)).drop("_pw_hash")
        else:
            rows = frame.select(*selected, F.lit(0).cast("long").alias(ID))
        arrow = spark_releases.collect_arrow(rows)
        columns: dict[str, pa.Array] = {ID: arrow.column(ID).combine_chunks().cast(pa.int64())}
        for name, column in self.schema.items():
            if name in missing:
                columns[name] = pa.array([stored_default(column)] * arrow.num_rows, column.dtype.arrow_type())
            else:
                columns[name] = stored_column(arrow.column(name), column.dtype, where=self.what,
                                              column=column.input_name)
        keep = np.ones(arrow.num_rows, dtype=bool)
        for name, column in self.schema.items():
            if not column.dtype.optional and columns[name].null_count:
                nulls = np.asarray(columns[name].is_null())
                if nulls.any():
                    log.warning("%s: %d row(s) with a null in column %r, which its type %s does not allow; "
                                "skipped", self.what, int(nulls.sum()), column.input_name, column.dtype)
                keep &= ~nulls
        table = pa.table(columns)
        if not keep.all():
            table = table.filter(pa.array(keep))
        return table


def _blob(generation: int) -> str:
    return f"snapshot/{generation}.arrow"


def _with_diff(rows: pa.Table, diff: int) -> pa.Table:
    return rows.append_column(DIFF, pa.array(np.full(rows.num_rows, diff, dtype=np.int64)))


# --------------------------------------------------------------------------- sink


class SparkTableSink(Sink):
    """Writes each time's result to a table of the Spark catalog (``saveAsTable``).

    >>> from sparkway.core.dtypes import INT, STR
    >>> sink = SparkTableSink("counts", {"word": STR, "n": INT}, table_type="snapshot", session=lambda: None)
    >>> sink.schema.names
    ['word', 'n', '_id']
    """

    def __init__(self, table_name: str, columns: dict[str, DType], *, table_type: str = STREAM_OF_CHANGES,
                 session: Session, name: str | None = None) -> None:
        if table_type not in (STREAM_OF_CHANGES, SNAPSHOT):
            raise PlanError(f"unknown mode {table_type!r}; expected {SNAPSHOT!r} or {STREAM_OF_CHANGES!r}")
        own = ("time", "diff") if table_type == STREAM_OF_CHANGES else (ID_COLUMN,)
        clash = [c for c in columns if c in own]
        if clash:
            raise PlanError(f"cannot write column(s) {clash} to a Spark table in {table_type} mode: the table has "
                            f"columns {', '.join(own)} of its own; rename them first (table.rename(...))")
        self.table_name = table_name
        self.columns = dict(columns)
        self.table_type = table_type
        self.session = session
        self.name = name or "spark"
        empty = output_table(pa.table({c: pa.array([], t.arrow_type()) for c, t in self.columns.items()}),
                             self.columns)
        extra = ([pa.field("time", pa.int64()), pa.field("diff", pa.int64())] if table_type == STREAM_OF_CHANGES
                 else [pa.field(ID_COLUMN, pa.string())])
        self.schema = pa.schema([*empty.schema, *extra])
        self._spark: Any = None
        self._done: int | None = None

    @property
    def label(self) -> str:
        return f"Spark table {self.table_name}"

    def open(self) -> None:
        self._spark = self.session()
        if not self._spark.catalog.tableExists(self.table_name):
            return
        existing = self._spark.table(self.table_name)
        wanted = self.schema.names
        if existing.columns != wanted:
            raise SparkTableError(f"the Spark table {self.table_name!r} has columns {existing.columns}, and the table "
                                  f"written ({self.table_type}) has {wanted}: write to another table, or drop it")
        if self.table_type == STREAM_OF_CHANGES:
            from pyspark.sql import functions as F

            done = existing.agg(F.max("time")).collect()[0][0]
            self._done = None if done is None else int(done)
            if self._done is not None:
                log.info("SparkTableWriter-%s: %r holds the times up to %d", self.name, self.table_name, self._done)

    def _rows(self, batch: OutputBatch) -> pa.Table:
        return output_table(batch.table, self.columns)

    def write(self, batch: OutputBatch) -> None:
        rows = batch.table.num_rows
        if rows == 0:
            return
        stamp = batch.time if batch.time < 2**63 else batch.time - 2**64  # the end of input: its bit pattern
        if self._done is not None and stamp <= self._done:
            log.info("SparkTableWriter-%s: time %d is already in %r: skipped", self.name, batch.time, self.table_name)
            return
        started = _time.monotonic()
        spark = self._spark
        if self.table_type == STREAM_OF_CHANGES:
            table = self._rows(batch)
            table = table.append_column("time", pa.array(np.full(rows, stamp, dtype=np.int64)))
            table = table.append_column("diff", batch.diffs.cast(pa.int64()))
            frame = spark_releases.frame_from_arrow(spark, table.cast(self.schema))
            frame.write.mode("append").saveAsTable(self.table_name)
        else:
            self._write_snapshot(batch)
        log.info("SparkTableWriter-%s: Done writing %d entries, time %d, to %r in %d ms", self.name, rows,
                 batch.time, self.table_name, (_time.monotonic() - started) * 1000)

    def _write_snapshot(self, batch: OutputBatch) -> None:
        spark = self._spark
        if batch.ids is None:
            raise SparkTableError("a snapshot needs the row ids of the changes")
        ids = pa.array([pointer_text(v) for v in batch.ids.to_pylist()], pa.string())
        inserted = pc.greater(batch.diffs, 0)
        table = self._rows(batch).append_column(ID_COLUMN, ids).filter(inserted).cast(self.schema)
        fresh = spark_releases.frame_from_arrow(spark, table)
        if spark.catalog.tableExists(self.table_name):
            changed = spark_releases.frame_from_arrow(spark, pa.table({ID_COLUMN: pc.unique(ids)}))
            kept = spark.table(self.table_name).join(changed, ID_COLUMN, "left_anti").select(
                *(_quoted(c) for c in self.schema.names))
            # a copy of the result, cut from the table it was read from, which is overwritten
            fresh = kept.unionByName(fresh).localCheckpoint(eager=True)
        fresh.write.mode("overwrite").saveAsTable(self.table_name)


__all__ = ["SNAPSHOT", "STREAM_OF_CHANGES", "SparkSource", "SparkTableError", "SparkTableSink",
           "columns_of_frame", "dtype_of_spark"]
