"""``pw.iterate`` on Spark: a body of nodes applied to its own output until nothing changes.

A step in which an input of the iteration changed recomputes the fixpoint from the
inputs' whole current contents (kept in a persistent collection, ``collection_step``):
the body is compiled like the program, once per round, with its own fresh state, and
each round feeds the body only what changed in the iterated tables.  Round 1 feeds the
inputs; its output is the first value of each iterated table, so round 2 feeds that value
minus the input; later rounds feed the body's own output changes, until a round changes
nothing (or ``limit`` rounds ran).  The result's changes are the difference between the
new fixpoint and the last one (a second collection, replaced at every such step).

This is not incremental in the inputs (a step costs as much as the whole fixpoint), unlike
Pathway's nested-timestamp iteration; every round is a few Spark jobs.
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import uuid

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparkway.core.changes import DIFF, ID
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
    contents = [_part_of(held, k, table.columns) for k, table in enumerate(node.tables)]
    results = _rounds(node, contents, ctx, operator)
    return collection_step(
        results, operator=f"{operator}-result", step=ctx.step, time=ctx.time, location=ctx.location,
        partitions=ctx.partitions, replace=True,
    )


def _rounds(node: n.Iterate, contents: list[DataFrame], ctx: StepContext, operator: str) -> list[DataFrame]:
    """The results' whole contents at the fixpoint."""
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
                if len(value) >= 16:  # keeps the plans Spark analyses small
                    value[:] = [_materialized(functools.reduce(DataFrame.unionByName, value))[0]]
            if not feed or round_number == node.limit:
                break
    finally:
        scratch.checkpoint.delete("")
        shutil.rmtree(scratch.local_root, ignore_errors=True)
    return [_consolidated(functools.reduce(DataFrame.unionByName, value)) for value in values]


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


def _part_of(collection: DataFrame, index: int, columns: dict) -> DataFrame:
    """Input ``index``'s rows in a collection's output, under their own names."""
    rows = collection.filter(col("_input") == index)
    return rows.select(col(ID), *[col(f"_{index}_{c}").alias(c) for c in columns], col(DIFF))


def _negated(frame: DataFrame) -> DataFrame:
    return frame.withColumn(DIFF, -col(DIFF))


def _consolidated(frame: DataFrame) -> DataFrame:
    """Changes of one row that cancel out removed, the others summed."""
    values = [c for c in frame.columns if c != DIFF]
    summed = frame.groupBy(*[col(c) for c in values]).agg(F.sum(col(DIFF)).cast("long").alias(DIFF))
    return summed.filter(col(DIFF) != 0).select(*[col(c) for c in frame.columns])


register(n.Iterate, fixpoint)
