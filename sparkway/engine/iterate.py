"""``pw.iterate`` on Spark: a body of nodes applied to its own output until nothing changes.

A step in which an input of the iteration changed recomputes the fixpoint from the
inputs' whole current contents (kept in a persistent collection, ``collection_step``):
in general (row-wise bodies, below, run otherwise), the body is compiled like the
program, once per round, with its own fresh state, and each round feeds the body only
what changed in the iterated tables.  Round 1 feeds the inputs; its output is the first
value of each iterated table, so round 2 feeds that value minus the input; later rounds
feed the body's own output changes, until a round changes nothing (or ``limit`` rounds
ran).  The result's changes are the difference between the new fixpoint and the last
one (a second collection, replaced at every such step).

This is not incremental in the inputs (a step costs as much as the whole fixpoint), unlike
Pathway's nested-timestamp iteration; in general every round is a few Spark jobs (three,
with AQE's stages).

A *row-wise* body (``row_wise``: selects and filters that keep each row's id and read that
row only, each result reading only the input it replaces) moves every row on its own: a
row that a round leaves as it was stays so, whatever the other rows do.  Its rounds run
``ROUNDS_PER_JOB`` at a time, over values rather than changes: the body is applied that
many times on top of itself to the rows still moving (compiled once, then its calls
replayed: ``_RowWiseBody``; each round's rows checkpointed lazily, in the job), and one
Spark job (three, with AQE's stages) computes the rows after the block's last round, each
marked with whether that round changed the rows of its id.  The unmarked rows are settled; the marked ones go
through the next block, until none is marked or ``limit`` rounds ran (a block never runs
past it).  A round past a row's fixpoint leaves it as it is, so the values are those of
one round per job.
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import uuid
from typing import Any, Callable

from pyspark.sql import DataFrame
from pyspark.sql import Window
from pyspark.sql import functions as F

from sparkway.core.changes import DIFF, ERRORS, ID
from sparkway.core.expression import Apply, Expr, walk
from sparkway.engine.expressions import col
from sparkway.engine.operators import StepContext, compile_node, register, typed
from sparkway.engine.spark import computing_step
from sparkway.engine.stateful import collection_step
from sparkway.plan import nodes as n
from sparkway.state.store import StateLocation


def fixpoint(node: n.Iterate, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    """The changes of the iteration's results in this step."""
    operator = ctx.operator_names[id(node)]
    held = collection_step(
        [typed(table, f) for table, f in zip(node.tables, frames)], operator=f"{operator}-input", step=ctx.step,
        time=ctx.time, location=ctx.location,
        partitions=ctx.partitions, replace=False,
    ).localCheckpoint()
    held_columns = set(held.columns)  # asked once: an analysis of the plan (through Connect, a request)
    contents = [_part_of(held, held_columns, k, table.columns) for k, table in enumerate(node.tables)]
    results = _rounds(node, contents, ctx, operator)
    return collection_step(
        results, operator=f"{operator}-result", step=ctx.step, time=ctx.time, location=ctx.location,
        partitions=ctx.partitions, replace=True,
    )


def _rounds(node: n.Iterate, contents: list[DataFrame], ctx: StepContext, operator: str) -> list[DataFrame]:
    """The results' whole contents at the fixpoint."""
    if row_wise(node):
        return _row_wise_rounds(node, contents, ctx)
    return _rounds_one_by_one(node, contents, ctx, operator)


def _rounds_one_by_one(node: n.Iterate, contents: list[DataFrame], ctx: StepContext, operator: str) -> list[DataFrame]:
    """The results' whole contents at the fixpoint, a job (at least) per round."""
    attempt = uuid.uuid4().hex[:12]  # a replayed step never meets a stale working copy
    scratch = StateLocation(
        ctx.location.checkpoint.child(f"{operator}-rounds/{attempt}"),
        os.path.join(ctx.location.local_root, f"{operator}-rounds", attempt),
        10**12,
    )
    body = node.body
    names = {id(x): f"{j:03d}-{x.kind.lower()}" for j, x in enumerate(body) if x.is_stateful}
    feed: dict[int, DataFrame] = dict(enumerate(contents))
    # per result: change frames adding up to its current value
    values = [[contents[k]] for k in node.iterated]
    try:
        for round_number in itertools.count(1):
            round_ctx = StepContext(ctx.spark, round_number, ctx.time, scratch, ctx.partitions, names,
                                    keep_errors=ctx.keep_errors, udf_cache_root=ctx.udf_cache_root)
            outputs = _run_body(body, node.results, feed, round_ctx)
            if round_number == 1:  # the first output is a value: what changed is its difference from the input
                outputs = [out.unionByName(_negated(contents[k])) for out, k in zip(outputs, node.iterated)]
            with computing_step(ctx.spark, round_number, ctx.time):
                changes = [_materialized(out) for out in outputs]
            for frame in round_ctx.persisted:
                frame.unpersist()
            feed = {k: frame for k, (frame, count) in zip(node.iterated, changes) if count}
            for value, (frame, count) in zip(values, changes):
                if count:
                    value.append(frame)
                _compacted(value)
            if not feed or round_number == node.limit:
                break
    finally:
        scratch.checkpoint.delete("")
        shutil.rmtree(scratch.local_root, ignore_errors=True)
    return [_consolidated(functools.reduce(DataFrame.unionByName, value)) for value in values]


def _compacted(frames: list[DataFrame]) -> None:
    """Many frames of one result become one, so that the plans Spark analyses stay small."""
    if len(frames) >= 16:
        frames[:] = [_materialized(functools.reduce(DataFrame.unionByName, frames))[0]]


#: rounds of a row-wise body in one Spark job.  A job costs about as much as 8 rounds (0.4 s:
#: the comparison of the last round's rows, their checkpoint, the count; a round, 0.05 s
#: to replay and plan), and a block runs up to ROUNDS_PER_JOB - 1 rounds past the
#: fixpoint.  The Collatz steps of 2..11 (20 rounds; in process, warm, medians of 5):
#: 5.6 s one round per job, 2.9 s with 4 rounds per job, 2.7 s with 8, 2.3 s with 12
#: (2 jobs), 2.6 s with 16
ROUNDS_PER_JOB = 8
#: the column marking the rows that a block's last round changed (per id)
MOVING = "_pw_moving"


def row_wise(node: n.Iterate) -> bool:
    """Whether every row of the iterated tables goes through the rounds on its own, so
    that rounds may run several at a time (``_row_wise_rounds``): the body maps each row
    to at most one row under its id, reading that row only and calling no function whose
    result may change between calls, and each result reads only the input it replaces."""
    if not all(_maps_rows(x) for x in node.body):
        return False
    return all(_iterated_from(result) == k for result, k in zip(node.results, node.iterated))


def _maps_rows(node: n.Node) -> bool:
    """Whether the node computes each output row from the input row of its id alone,
    the same way at every round (a stored select keeps state: it is not one)."""
    if type(node) in (n.IterationInput, n.RemoveErrors):
        return True
    if type(node) is n.Select:
        return not node.is_stateful and all(_deterministic(e) for _, e in node.exprs)
    if type(node) is n.Filter:
        return _deterministic(node.predicate)
    return False


def _deterministic(expr: Expr) -> bool:
    return not any(isinstance(x, Apply) and not x.deterministic for x in walk(expr))


def _iterated_from(node: n.Node) -> int:
    """The input whose rows a chain of row-wise nodes reads."""
    while not isinstance(node, n.IterationInput):
        node = node.inputs[0]  # row-wise nodes have one input
    return node.index


def _row_wise_rounds(node: n.Iterate, contents: list[DataFrame], ctx: StepContext) -> list[DataFrame]:
    """The results' whole contents at the fixpoint of a row-wise body, ``ROUNDS_PER_JOB``
    rounds per job.  Rows that a block's last round left as they were are settled; the
    others go through the next block."""
    moving = {k: contents[index] for k, index in enumerate(node.iterated)}  # rows that may still change
    values: list[list[DataFrame]] = [[] for _ in node.iterated]  # per result: frames of its rows
    body = _RowWiseBody(node)
    done = 0
    while moving and done != node.limit:
        rounds = ROUNDS_PER_JOB if node.limit is None else min(ROUNDS_PER_JOB, node.limit - done)
        block_ctx = StepContext(ctx.spark, done + 1, ctx.time, ctx.location, ctx.partitions, {},
                                keep_errors=ctx.keep_errors, udf_cache_root=ctx.udf_cache_root)
        flagged = {k: _flagged(*pair) for k, pair in _unrolled(body, moving, rounds, block_ctx).items()}
        done += rounds
        with computing_step(ctx.spark, done, ctx.time):
            rows, counts = _materialized_parts(flagged)
        for frame in block_ctx.persisted:
            frame.unpersist()
        for k, frame in rows.items():
            values[k].append(frame.filter(~col(MOVING)).drop(MOVING))
            moving[k] = frame.filter(col(MOVING)).drop(MOVING)
            if not counts.get(k):
                del moving[k]
        for value in values:
            _compacted(value)
    for k, frame in moving.items():  # the limit stopped them
        values[k].append(frame)
    return [_consolidated(functools.reduce(DataFrame.unionByName, value)) for value in values]


def _unrolled(body: _RowWiseBody, moving: dict[int, DataFrame], rounds: int,
              ctx: StepContext) -> dict[int, tuple[DataFrame, DataFrame]]:
    """Per result still moving: its rows after ``rounds`` more rounds, and before the last
    of them (lazy frames).  Rounds are not consolidated: a select or a filter treats each
    row alone, and a row's values are all it needs."""
    current = {k: (frame, tuple(frame.columns)) for k, frame in moving.items()}
    for round_number in range(rounds):
        if round_number:
            # each round under a plan of its own, computed in the job: Spark's optimizer
            # would push a round's filter down through the selects of the rounds before,
            # copying their expressions into it at each one (exponentially), and the last
            # round's input is read twice (by the round and by the comparison with it)
            current = {k: (frame.localCheckpoint(eager=False), names) for k, (frame, names) in current.items()}
        before, current = current, body.round(current, ctx)
    return {k: (frame, before[k][0]) for k, (frame, _) in current.items()}


def _flagged(after: DataFrame, before: DataFrame) -> DataFrame:
    """``after``'s rows, consolidated, each with ``MOVING``: whether the rows of its id
    differ from ``before``'s.  Those of an id whose rows are the same are at their
    fixpoint (the body reads the row alone)."""
    now = "_pw_now"  # True: a row of after; False: a change from before to after
    both = after.withColumn(now, F.explode(F.array(F.lit(True), F.lit(False))))
    union = both.unionByName(_negated(before).withColumn(now, F.lit(False)))
    # one shuffle by id: the consolidation's groups and the window's partitions are within it
    changes = _consolidated(union.repartition(col(ID)))
    changed = F.max(~col(now)).over(Window.partitionBy(col(ID)))
    return changes.withColumn(MOVING, changed).filter(col(now)).drop(now)


def _materialized_parts(parts: dict[int, DataFrame]) -> tuple[dict[int, DataFrame], dict[int, int]]:
    """The frames, computed once, in one job that also counts each one's ``MOVING`` rows."""

    def named(k: int, name: str) -> str:  # the frames' columns differ: each has names of its own
        return name if name in (ID, DIFF, MOVING) else f"_{k}_{name}"

    tagged = [frame.select(F.lit(k).alias("_part"), *[col(c).alias(named(k, c)) for c in frame.columns])
              for k, frame in parts.items()]
    union = functools.reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), tagged)
    kept = union.localCheckpoint(eager=False)
    moving = kept.groupBy("_part").agg(F.sum(col(MOVING).cast("long"))).collect()
    rows = {k: kept.filter(col("_part") == k).select(*[col(named(k, c)).alias(c) for c in frame.columns])
            for k, frame in parts.items()}
    return rows, {k: count for k, count in moving}


class _NotReplayable(Exception):
    """Compiling the body did something to its input frame that a replay cannot repeat."""


#: DataFrame methods whose result depends on the frame and the arguments only (the
#: Columns they take name columns, whatever frame holds them): those the compilers of
#: row-wise nodes call
_REPLAYABLE = frozenset({"select", "filter", "where", "withColumn", "withColumns", "drop", "persist"})


class _Recorder:
    """A round's input frame while the body compiles: it does what is asked of the frame
    and records it, so that later rounds repeat the calls instead of compiling the body
    again (about 600 py4j calls for the Collatz body, most of a round's cost).  Anything
    but a recorded transformation or the column names raises ``_NotReplayable``."""

    def __init__(self, frame: DataFrame, calls: tuple = ()) -> None:
        self.frame, self.calls = frame, calls

    @property
    def columns(self) -> list[str]:
        return self.frame.columns  # a replay's input has the same ones

    def __getattr__(self, name: str) -> Callable[..., _Recorder]:
        if name not in _REPLAYABLE:
            raise _NotReplayable(name)
        method = getattr(self.frame, name)

        def recorded(*args: Any, **kwargs: Any) -> _Recorder:
            if any(isinstance(a, (_Recorder, DataFrame)) for a in [*args, *kwargs.values()]):
                raise _NotReplayable(name)  # another frame: a replay would read this one again
            return _Recorder(method(*args, **kwargs), (*self.calls, (name, args, kwargs)))
        return recorded

    def __getitem__(self, item: Any) -> None:
        raise _NotReplayable("[]")  # a Column bound to this very frame


#: a frame and the names of its columns (asking Spark for them analyses the frame's whole
#: plan: through Spark Connect, a request that grows with every round)
_Named = tuple[DataFrame, tuple[str, ...]]


class _RowWiseBody:
    """The body of a row-wise ``Iterate``, applied round after round: compiled once per
    result and columns of its input, and then its calls replayed."""

    def __init__(self, node: n.Iterate) -> None:
        self.node = node
        # (result, input columns) -> the calls and the output's columns
        self.calls: dict[tuple[int, tuple[str, ...]], tuple[tuple, tuple[str, ...]]] = {}
        self.replayable = True

    def round(self, inputs: dict[int, _Named], ctx: StepContext) -> dict[int, _Named]:
        """Per result: its rows after one more round, from ``inputs`` (its rows before)."""
        if not self.replayable:
            compiled = self._compiled({k: frame for k, (frame, _) in inputs.items()}, ctx)
            return {k: (frame, tuple(frame.columns)) for k, frame in compiled.items()}
        new = {k: _Recorder(frame) for k, (frame, names) in inputs.items() if (k, names) not in self.calls}
        try:
            recorded = self._compiled(new, ctx)
        except Exception:  # noqa: BLE001 - compiled again without recording: a real error shows there
            self.replayable, recorded = False, None
        finally:  # StepContext.logging keeps what it persists: the frames, not their recorders
            ctx.persisted[:] = [p.frame if isinstance(p, _Recorder) else p for p in ctx.persisted]
        if recorded is None:
            return self.round(inputs, ctx)
        self.calls |= {(k, inputs[k][1]): (out.calls, tuple(out.frame.columns)) for k, out in recorded.items()}
        outputs = {}
        for k, (frame, names) in inputs.items():
            calls, out_names = self.calls[k, names]
            outputs[k] = (recorded[k].frame if k in recorded else _replayed(frame, calls, ctx), out_names)
        return outputs

    def _compiled(self, inputs: dict[int, Any], ctx: StepContext) -> dict[int, Any]:
        """Per result: the body compiled on its input (a frame, or a recorder of one)."""
        if not inputs:
            return {}
        node = self.node
        feed = {node.iterated[k]: frame for k, frame in inputs.items()}
        outputs = _run_body(node.body, tuple(node.results[k] for k in inputs), feed, ctx)
        return dict(zip(inputs, outputs))


def _replayed(frame: DataFrame, calls: tuple, ctx: StepContext) -> DataFrame:
    for name, args, kwargs in calls:
        frame = getattr(frame, name)(*args, **kwargs)
        if name == "persist":  # as StepContext.logging does: unpersisted after the job
            ctx.persisted.append(frame)
    return frame


def _materialized(frame: DataFrame) -> tuple[DataFrame, int]:
    """The consolidated changes, computed once (in one job that also counts them)."""
    kept = _consolidated(frame).localCheckpoint(eager=False)
    return kept, kept.count()


def _run_body(body: list[n.Node], results: tuple[n.Node, ...], feed: dict[int, DataFrame], ctx: StepContext) -> list[DataFrame]:
    """The changes of the results for this round's changes of the inputs; nodes none of
    whose inputs changed are skipped, as in a step of the program."""
    frames: dict[int, DataFrame] = {}
    for node in body:
        if isinstance(node, n.IterationInput):
            if node.index not in feed:
                continue
            ctx.inputs[id(node)] = feed[node.index]
        elif not any(id(i) in frames for i in node.inputs):
            continue
        inputs = [frames[id(i)] if id(i) in frames else ctx.empty(i) for i in node.inputs]
        frames[id(node)] = compile_node(node, inputs, ctx)
    return [frames[id(r)] if id(r) in frames else ctx.empty(r) for r in results]


def _part_of(collection: DataFrame, collection_columns: set[str], index: int, columns: dict) -> DataFrame:
    """Input ``index``'s rows in a collection's output (whose columns are
    ``collection_columns``), under their own names (with ``ERRORS`` in a run keeping
    Error values, as the body's frames have it)."""
    rows = collection.filter(col("_input") == index)
    errors = [col(f"_{index}_{ERRORS}").alias(ERRORS)] if f"_{index}_{ERRORS}" in collection_columns else []
    return rows.select(col(ID), *[col(f"_{index}_{c}").alias(c) for c in columns], col(DIFF), *errors)


def _negated(frame: DataFrame) -> DataFrame:
    return frame.withColumn(DIFF, -col(DIFF))


def _consolidated(frame: DataFrame) -> DataFrame:
    """Changes of one row that cancel out removed, the others summed."""
    values = [c for c in frame.columns if c != DIFF]
    summed = frame.groupBy(*[col(c) for c in values]).agg(F.sum(col(DIFF)).cast("long").alias(DIFF))
    return summed.filter(col(DIFF) != 0).select(*[col(c) for c in frame.columns])


register(n.Iterate, fixpoint)
