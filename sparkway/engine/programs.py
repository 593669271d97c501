"""Step programs: the Spark plan of a small step, built once and run again by the later
steps of the same shape.

A streaming step of 1,000 rows spent a third of its time building its DataFrames (some
300 py4j calls) and Spark another tenth analysing and planning them, for a plan that is
the same at every step: only the input rows change, and stateful tasks read their step
from the job (``computing_step``).  So, where a step's plan holds nothing of the step
itself, its input is not handed to Spark as rows (a ``LocalRelation``, which Spark folds
into the plan) but written to a file that a task reads (``StepInputs``), and the
collected union of the sinks (``Collection``) is kept by shape and run again.

A plan is kept only when running it again computes the next step's changes:

* on a local Spark (the driver's files are the executors' files) and a classic session;
* a step of input (not the end of the input, not a forgetting step) of few rows, whose
  stateful operators work in the task that reads them (``StepContext.one_task``);
* every node of a kind whose compiled frame holds nothing of the step (``REUSABLE``);
  no expression reads the step's time (the processing time of ``inactivity_detection``);
* nothing persisted or logged for the step (error logs, frames read twice);
* no exchange in the physical plan: Spark keeps a shuffle's output with the plan, and
  would serve the first step's.
"""

from __future__ import annotations

import collections
import functools
import os
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import ipc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkway.core.changes import DIFF, ID
from sparkway.core.spark_releases import arrow_schema
from sparkway.engine.expressions import col
from sparkway.engine.spark import is_remote, map_in_arrow, task_step
from sparkway.persistence.scratch import ScratchFolder
from sparkway.plan import nodes as n

#: the kinds of nodes whose compiled frames are the same at every step of input (given
#: the shape): a time gate's differs only at the end of the input and in a forgetting
#: step, neither of which runs a kept plan
REUSABLE = (
    n.Input, n.Select, n.Filter, n.Flatten, n.Reindex, n.Concat, n.Reduce, n.Join, n.SessionWindow,
    n.Deduplicate, n.KeyedMerge, n.StreamToTable, n.TimeGate, n.Output,
)
#: plans kept per run (a program's shapes: which of its sources had input)
PROGRAMS_KEPT = 16


def reusable_plan(plan: n.Plan, keep_errors: bool) -> bool:
    """Whether ``plan``'s steps may be kept at all (see the module's conditions): every
    node of a reusable kind, no error kept or logged, no stateful node read twice."""
    consumers = plan.consumers()
    return not keep_errors and all(
        isinstance(node, REUSABLE) and not (node.is_stateful and consumers.get(id(node), 0) > 1)
        for node in plan.nodes
    )


def can_keep(spark: SparkSession) -> bool:
    """A classic Spark session with a local master: tasks read the driver's files."""
    return not is_remote(spark) and spark.sparkContext.master.startswith("local")


class Collection:
    """The changes of several frames (the sinks' and the error log's), collected in one
    Spark job (``union``); made once per plan, run by every step of its shape.
    ``consolidated``: each sink's changes have distinct ids, so that pieces of them need
    not be spread by id before they are consolidated."""

    def __init__(self, frames: list[DataFrame | None], consolidated: bool = False) -> None:
        self.frames = frames
        self.consolidated = consolidated
        # a frame read by several sinks is collected once, at its first position (in a
        # union twice, Spark would compute it twice)
        first: dict[int, int] = {}
        names: dict[int, list[str]] = {}  # per tag, the frame's data columns
        tagged = []
        for k, frame in enumerate(frames):
            if frame is not None and first.setdefault(id(frame), k) == k:
                names[k] = [c for c in frame.columns if c not in (ID, DIFF)]
                data = [col(c).alias(f"_{k}_{c}") for c in names[k]]
                tagged.append(frame.select(F.lit(k).alias(TAG), col(ID), col(DIFF), *data))
        tags = tuple(None if frame is None else first[id(frame)] for frame in frames)
        self.layout = Layout(tags, names, len(tagged) == 1)
        self.union = functools.reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), tagged) if tagged else None

    def exchanges_nothing(self) -> bool:
        """Whether the physical plan has no shuffle or cached relation (whose output Spark
        keeps with the plan): one that can run again for another step's input."""
        if self.union is None:
            return True
        plan = self.union._jdf.queryExecution().executedPlan().toString()
        return not any(word in plan for word in ("Exchange", "AdaptiveSparkPlan", "InMemory", "Subquery"))


#: the column of a collected union that says which frame a row belongs to
TAG = "_sink"


class Layout:
    """Where each frame's rows are in a piece of a collected union (picklable: Spark's
    tasks split their pieces too).

    >>> layout = Layout((0, None, 0), {0: ["w"]}, True)
    >>> piece = pa.table({TAG: [0], ID: [5], "_0_w": ["a"], DIFF: [1]})
    >>> [None if t is None else t.column_names for t in layout.split(piece)]
    [['_id', 'w', '_diff'], None, ['_id', 'w', '_diff']]
    """

    def __init__(self, tags: tuple[int | None, ...], names: dict[int, list[str]], single: bool) -> None:
        self.tags = tags  # per frame, the tag of its rows (None: no frame)
        self.names = names  # per tag, the frame's data columns
        self.single = single  # one frame only: no row has to be filtered out

    def rows(self, piece: pa.Table, position: int) -> pa.Table | None:
        """The changes of the frame at ``position`` in ``piece`` (None: no frame)."""
        tag = self.tags[position]
        if tag is None:
            return None
        rows = piece if self.single else piece.filter(pc.equal(piece.column(TAG), tag))
        names = self.names[tag]
        return rows.select([ID, *[f"_{tag}_{c}" for c in names], DIFF]).rename_columns([ID, *names, DIFF])

    def split(self, piece: pa.Table) -> list[pa.Table | None]:
        """A collected piece, as a table per frame (None: no frame)."""
        return [self.rows(piece, k) for k in range(len(self.tags))]


class StepInputs:
    """Kept plans and their inputs: a step writes each source's rows to a file of the
    step, which the plan's input task reads (``frame``), and the files of a step are
    deleted when it ends.  Plans are kept by shape, the most recent ``PROGRAMS_KEPT``."""

    def __init__(self) -> None:
        self.scratch = ScratchFolder("inputs")
        self.kept: collections.OrderedDict[tuple, Collection] = collections.OrderedDict()

    def write(self, step: int, tables: dict[str, pa.Table]) -> None:
        """Written in place: the step's job starts after, and no other run reads the folder."""
        for name, table in tables.items():
            with ipc.new_file(_input_path(self.scratch.path, name, step), table.schema) as writer:
                writer.write_table(table)

    def frame(self, spark: SparkSession, name: str, schema: T.StructType) -> DataFrame:
        """The rows of source ``name`` in the step that runs it (one task)."""
        read = functools.partial(_read_input, self.scratch.path, name, arrow_schema(schema))
        return map_in_arrow(spark.range(1, numPartitions=1), read, schema, (0, 0))  # never remote: no step

    def delete(self, step: int, names: list[str]) -> None:
        for name in names:
            try:
                os.remove(_input_path(self.scratch.path, name, step))
            except FileNotFoundError:
                pass

    def get(self, shape: tuple) -> Collection | None:
        if shape in self.kept:
            self.kept.move_to_end(shape)
        return self.kept.get(shape)

    def keep(self, shape: tuple, collection: Collection) -> None:
        self.kept[shape] = collection
        if len(self.kept) > PROGRAMS_KEPT:
            self.kept.popitem(last=False)

    def close(self) -> None:
        self.kept.clear()
        self.scratch.remove()


def shape_of(tables: dict[str, pa.Table]) -> tuple:
    """What a kept plan depends on in a step's input: which sources have rows, and
    their columns (a source may add error columns in some steps)."""
    return tuple(sorted((name, tuple(t.schema.names)) for name, t in tables.items() if t.num_rows))


def _input_path(folder: str, name: str, step: int) -> str:
    return os.path.join(folder, f"{name.replace(os.sep, '_')}-{step}.arrow")


def _read_input(
    folder: str, name: str, schema: pa.Schema, batches: Iterator[pa.RecordBatch], step: tuple[int, int] | None,
) -> Iterator[pa.RecordBatch]:
    for _ in batches:  # the one row of spark.range(1)
        pass
    number, _ = task_step()
    with pa.OSFile(_input_path(folder, name, number)) as source:
        table = ipc.open_file(source).read_all()
    yield from table.cast(schema).to_batches()  # as createDataFrame casts a table to its schema
