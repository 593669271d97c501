"""Sources read by Spark's tasks (``connectors.base.ExecutorRead``): a task per piece.

The driver needs back only how many rows each piece gave and skipped (the run's counts,
and the warnings of rows that did not parse), counted once per piece however often
Spark runs its task: a retry, a speculative copy, a stage computed again after an
executor was lost.  A classic session adds them to an accumulator keyed by piece.
Spark Connect has no accumulators: there each task also emits a marker row per piece,
which an observation (``DataFrame.observe``, metrics the server sends back with the
job's result) gathers as a set of texts, so that a piece read twice counts once; the
plan drops the markers right after.

Attached to a Connect server, the program cannot know whether the server's executors
see its input (a path of this machine, a broker its network reaches): before a
source's first read on the executors, one task looks (``ExecutorRead.reachable``), and
where it cannot, this process reads the input, as for small steps.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyspark
from pyspark.accumulators import AccumulatorParam
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkway.connectors.base import ExecutorRead
from sparkway.core import spark_releases
from sparkway.core.changes import DIFF, ID
from sparkway.engine.spark import is_remote

log = logging.getLogger("sparkway")

#: the column of the marker rows, through Spark Connect
_MARKER = "_sparkway_piece"


class PieceCounts:
    """The rows each piece of an ``ExecutorRead`` gave and skipped in one step."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._observation = spark_releases.observation() if is_remote(spark) else None
        self._accumulator = None if self._observation is not None else spark.sparkContext.accumulator({}, _ByPiece())

    def frame(self, read: ExecutorRead, schema: T.StructType) -> DataFrame:
        """The changes of ``read``, of ``schema``, a task per piece; reading them counts."""
        pieces, reader, accumulator = read.pieces, read.read, self._accumulator
        if accumulator is None:
            return self._observed(read, schema)

        def read_pieces(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                for index in batch.column(0).to_pylist():
                    table, skipped = reader(pieces[index])
                    accumulator.add({index: (table.num_rows, skipped)})
                    yield from table.to_batches()

        return self._piece_numbers(len(pieces)).mapInArrow(read_pieces, schema)

    def _observed(self, read: ExecutorRead, schema: T.StructType) -> DataFrame:
        pieces, reader = read.pieces, read.read
        marked = schema.add(_MARKER, T.StringType())

        def read_pieces(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                for index in batch.column(0).to_pylist():
                    table, skipped = reader(pieces[index])
                    table = table.append_column(_MARKER, pa.nulls(table.num_rows, pa.string()))
                    yield from table.to_batches()
                    yield _marker(table.schema, json.dumps([index, table.num_rows, skipped], sort_keys=True))

        frame = self._piece_numbers(len(pieces)).mapInArrow(read_pieces, marked)
        # one text, not the set itself: Spark 4.0's server cannot send an array back
        frame = frame.observe(self._observation, F.array_join(F.collect_set(_MARKER), "\n").alias("pieces"))
        return frame.where(F.col(_MARKER).isNull()).drop(_MARKER)

    def _piece_numbers(self, count: int) -> DataFrame:
        return self.spark.range(count, numPartitions=count)

    def totals(self) -> tuple[int, dict[str, int]]:
        """The rows read, and the rows skipped by file (the pieces of frames Spark ran)."""
        rows, skipped_by_file = 0, {}
        for count, skipped in self._by_piece().values():
            rows += count
            for where, n in skipped.items():
                skipped_by_file[where] = skipped_by_file.get(where, 0) + n
        return rows, skipped_by_file

    def _by_piece(self) -> dict[int, tuple[int, dict[str, int]]]:
        if self._accumulator is not None:
            return self._accumulator.value
        markers = (self._observation.get or {}).get("pieces") or ""
        return {index: (count, skipped) for index, count, skipped in map(json.loads, markers.splitlines())}


def _marker(schema: pa.Schema, text: str) -> pa.RecordBatch:
    """A row of ``schema`` (the piece's, that a task's batches all share) with only the
    marker set (the id and diff, which Spark's schema says are never null, are 0; the
    plan drops the row before anything reads them)."""
    columns = [pa.array([text]) if f.name == _MARKER else pa.array([0], f.type) if f.name in (ID, DIFF)
               else pa.nulls(1, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


class _ByPiece(AccumulatorParam):
    """Per piece, its (rows, skipped by file): a piece read twice counts once."""

    def zero(self, value: dict) -> dict:
        return {}

    def addInPlace(self, counts: dict, more: dict) -> dict:
        counts.update(more)
        return counts


def read_by_attached_executors(spark: SparkSession, read: ExecutorRead, label: str) -> bool:
    """Whether the tasks of the Spark Connect server ``spark`` is attached to read
    ``read``: they see its input, and their counts reach this program."""
    if spark_releases.observation() is None:
        log.info("%s: read by this program: pyspark %s's Connect client does not report a job's observed metrics",
                 label, pyspark.__version__)
        return False
    return executors_see(spark, read, label)


def executors_see(spark: SparkSession, read: ExecutorRead, label: str) -> bool:
    """Whether Spark's tasks see ``read``'s input (one task looks); said in the log when
    not."""
    if read.reachable is None:
        return False
    look = read.reachable

    def answer(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _ in batches:
            yield pa.RecordBatch.from_pydict({"seen": [bool(look())]})

    try:
        seen = bool(spark.range(1, numPartitions=1).mapInArrow(answer, "seen boolean").collect()[0].seen)
    except Exception as exc:  # a server without the source's libraries, say: read here
        log.info("%s: Spark's executors cannot read this input (%s); this program reads it",
                 label, _first_line(exc))
        return False
    if not seen:
        log.info("%s: Spark's executors do not see this input; this program reads it", label)
    return seen


def _first_line(error: Any) -> str:
    text = str(error)
    return text.splitlines()[0] if text else type(error).__name__
