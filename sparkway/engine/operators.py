"""Compiles plan nodes to the Spark DataFrame of their changes in one step.

One function per node kind.  Every change frame has the columns ``_id``, the node's
columns in order, and ``_diff``.  Stateless nodes are Spark SQL; stateful ones go through
``sparkway.engine.stateful.keyed_step`` with the kernel of their kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkway.core import dtypes as dt
from sparkway.core import durations
from sparkway.core.changes import DIFF, ID, spark_schema
from sparkway.core.dtypes import DType
from sparkway.core.expression import Expr
from sparkway.core.type_rules import infer
from sparkway.engine.expressions import Scope, array_items, as_type, col, compile_expr, pointer_of
from sparkway.engine.kernels.join import join_groups
from sparkway.engine.kernels.merge import merge_groups
from sparkway.engine.kernels.ordered import deduplicate_groups, sort_groups
from sparkway.engine.kernels.reduce import reduce_groups
from sparkway.engine.kernels.session import sessionize
from sparkway.engine.stateful import KeyedInput, keyed_step
from sparkway.plan import nodes as n
from sparkway.state.store import StateLocation


@dataclass
class StepContext:
    """What compiling one step needs: Spark, the step's identity and where state lives."""

    spark: SparkSession
    step: int
    time: int
    location: StateLocation
    partitions: int
    operator_names: dict[int, str]  # id(node) -> its state folder
    inputs: dict[int, DataFrame] = field(default_factory=dict)  # id(Input node) -> changes

    def empty(self, node: n.Node) -> DataFrame:
        return self.spark.createDataFrame([], spark_schema(node.columns))

    def keyed(self, node: n.Node, inputs: list[KeyedInput], kernel, params, output: T.StructType) -> DataFrame:
        return keyed_step(
            inputs,
            operator=self.operator_names[id(node)],
            where=node.label,
            step=self.step,
            time=self.time,
            location=self.location,
            partitions=self.partitions,
            kernel=kernel,
            params=params,
            output=output,
        )


def compile_node(node: n.Node, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    """The changes of ``node`` given the changes of its inputs."""
    return _COMPILERS[type(node)](node, frames, ctx)


def _changes(frame: DataFrame, columns: dict[str, Column]) -> DataFrame:
    return frame.select(col(ID), *[c.alias(name) for name, c in columns.items()], col(DIFF))


def _typed(node: n.Node, frame: DataFrame) -> DataFrame:
    """The frame with exactly the node's Spark types (kernels and unions need them)."""
    return frame.select(
        col(ID).cast("long").alias(ID),
        *[as_type(col(name), _pickled(frame, name), kind).alias(name) for name, kind in node.columns.items()],
        col(DIFF),
    )


def _pickled(frame: DataFrame, name: str) -> bool:
    return isinstance(frame.schema[name].dataType, T.BinaryType)


def _input(node: n.Input, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    frame = ctx.inputs.get(id(node))
    if frame is None:
        return ctx.empty(node)
    keys = node.source.key_columns
    if keys:  # ids from the key's values, as pointer_from gives them
        frame = frame.withColumn(ID, pointer_of([col(k) for k in keys]))
    return frame


def _select(node: n.Select, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    scope = Scope.of(node.input.columns, where=node.label)
    compiled = {
        name: as_type(compile_expr(e, scope), infer(e, [node.input.columns]).name == "Any", node.columns[name])
        for name, e in node.exprs
    }
    return _changes(frames[0], compiled)


def _filter(node: n.Filter, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    predicate = compile_expr(node.predicate, Scope.of(node.input.columns, where=node.label))
    return frames[0].filter(F.coalesce(predicate, F.lit(False)))


def _flatten(node: n.Flatten, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    source = node.input.columns[node.column].with_optional(False)
    values = col(node.column)
    item = col("_item")
    if source == dt.JSON:
        # through Spark's variant, so that every element stays JSON text (a string
        # element keeps its quotes, which from_json to array<string> would drop)
        values = F.parse_json(values).cast("array<variant>")
        item = F.to_json(item)
    elif source.is_array:
        values = array_items(source, node.label)(values)
    elif source == dt.STR:  # characters ("" has none)
        values = F.when(values == "", F.array().cast("array<string>")).otherwise(F.split(values, ""))
    exploded = frames[0].select("*", F.posexplode(values).alias("_pos", "_item"))
    columns = {name: col(name) for name in node.input.columns} | {node.column: item}
    if node.origin_id is not None:
        columns[node.origin_id] = col(ID)
    return exploded.select(
        pointer_of([col(ID), col("_pos")]).alias(ID),
        *[c.alias(name) for name, c in columns.items()],
        col(DIFF),
    )


def _reindex(node: n.Reindex, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    scope = Scope.of(node.input.columns, where=node.label)
    keys = [compile_expr(k, scope) for k in node.keys]
    new_id = keys[0] if node.use_pointer else pointer_of(keys)
    return frames[0].select(new_id.alias(ID), *[col(c) for c in node.columns], col(DIFF))


def _concat(node: n.Concat, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    parts = []
    for position, frame in enumerate(frames):
        frame = _typed(node, frame)
        if node.reindex:
            frame = frame.withColumn(ID, pointer_of([F.lit(position).cast("long"), col(ID)]))
        parts.append(frame)
    out = parts[0]
    for frame in parts[1:]:
        out = out.unionByName(frame)
    return out


def _key_columns(
    node: n.Node, exprs: list[Expr], inputs: list[dict[str, DType]], types: list[DType] | None = None
) -> list[Column]:
    scope = Scope.of(*inputs, where=node.label)
    types = types or [infer(e, inputs) for e in exprs]
    return [compile_expr(e, scope).cast(t.spark_type()) for e, t in zip(exprs, types)]


def _reduce(node: n.Reduce, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    inputs = [node.input.columns]
    scope = Scope.of(*inputs, where=node.label)
    keys = _key_columns(node, [e for _, e in node.keys], inputs)
    payload: dict[str, Column] = {name: k for (name, _), k in zip(node.keys, keys)}
    aggregates = []
    for j, (name, agg) in enumerate(node.aggregates):
        arg_names = []
        for m, arg in enumerate(agg.args):
            arg_name = f"_pw_arg_{j}_{m}"
            payload[arg_name] = compile_expr(arg, scope).cast(infer(arg, inputs).spark_type())
            arg_names.append(arg_name)
        aggregates.append((name, agg.kind, arg_names, agg.params))
    params = ([name for name, _ in node.keys], aggregates)
    output = spark_schema(node.columns, with_id=True)
    return ctx.keyed(node, [KeyedInput(frames[0], keys, payload)], reduce_groups, params, output)


def _join(node: n.Join, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    left_types = [infer(e, [node.left.columns]) for e in node.left_keys]
    right_types = [infer(e, [node.right.columns]) for e in node.right_keys]
    unified = [dt.unify(a, b) for a, b in zip(left_types, right_types)]
    sides = []
    times = node.interval[:2] if node.interval is not None else (None, None)
    for frame, table, keys, time, stored in (
        (frames[0], node.left, node.left_keys, times[0], node.keep_left),
        (frames[1], node.right, node.right_keys, times[1], True),
    ):
        key_columns = _key_columns(node, list(keys), [table.columns], unified)
        payload = {c: col(c) for c in table.columns}
        if time is not None:
            payload["_t"] = compile_expr(time, Scope.of(table.columns, where=node.label))
        sides.append(KeyedInput(_typed(table, frame), key_columns, payload, stored))
    pair_columns = {k: v for k, v in node.columns.items() if k not in ("_l_id", "_r_id")}
    output = T.StructType(
        [T.StructField("_l_id", T.LongType()), T.StructField("_r_id", T.LongType())]
        + list(spark_schema(pair_columns, with_id=False).fields)
    )
    bounds = tuple(durations.micros_or_number(b) for b in node.interval[2:]) if node.interval is not None else None
    params = (node.how, list(node.left.columns), list(node.right.columns), bounds)
    pairs = ctx.keyed(node, sides, join_groups, params, output)
    if node.id_from is not None:
        new_id = col("_l_id" if node.id_from == "left" else "_r_id")
    else:
        new_id = pointer_of([F.coalesce(col("_l_id"), F.lit(-1)), F.coalesce(col("_r_id"), F.lit(-2))])
    return pairs.select(new_id.alias(ID), *[col(c) for c in node.columns], col(DIFF))


def _per_instance(
    node: n.Node, frame: DataFrame, ctx: StepContext, instance: Expr | None,
    extra: dict[str, Column], kernel, params, carry_columns: bool = True,
) -> DataFrame:
    """A one-input stateful node whose groups are the values of ``instance`` (one group
    when None), carrying the input's columns (or not) plus ``extra`` payload columns."""
    source = node.inputs[0]
    keys = _key_columns(node, [instance], [source.columns]) if instance is not None else []
    payload = {c: col(c) for c in source.columns} if carry_columns else {}
    payload.update(extra)
    output = spark_schema(node.columns, with_id=True)
    return ctx.keyed(node, [KeyedInput(_typed(source, frame), keys, payload)], kernel, params, output)


def _session_window(node: n.SessionWindow, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    scope = Scope.of(node.input.columns, where=node.label)
    instance_type = node.columns["_pw_instance"].spark_type()
    instance = compile_expr(node.instance, scope).cast(instance_type) if node.instance is not None else F.lit(None).cast(instance_type)
    extra = {"_t": compile_expr(node.time, scope), "_inst": instance}
    params = (node.max_gap, list(node.input.columns))
    return _per_instance(node, frames[0], ctx, node.instance, extra, sessionize, params)


def _deduplicate(node: n.Deduplicate, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    extra = {"_v": compile_expr(node.value, Scope.of(node.input.columns, where=node.label))}
    params = (node.acceptor, list(node.input.columns))
    return _per_instance(node, frames[0], ctx, node.instance, extra, deduplicate_groups, params)


def _sort(node: n.Sort, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    extra = {"_k": compile_expr(node.key, Scope.of(node.input.columns, where=node.label))}
    return _per_instance(node, frames[0], ctx, node.instance, extra, sort_groups, None, carry_columns=False)


def _keyed_merge(node: n.KeyedMerge, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    inputs = []
    for position, (table, frame, key) in enumerate(zip(node.tables, frames, node.keys)):
        key_column = compile_expr(key, Scope.of(table.columns, where=node.label)) if key is not None else col(ID)
        inputs.append(KeyedInput(frame, [key_column.cast("long")], _merge_payload(node, position, table)))
    params = (node.mode, list(node.columns), node.optional)
    output = spark_schema(node.columns, with_id=True)
    return ctx.keyed(node, inputs, merge_groups, params, output)


def _merge_payload(node: n.KeyedMerge, position: int, table: n.Node) -> dict[str, Column]:
    """The columns an input of a keyed merge carries into the kernel, by output name."""
    if node.mode != "ix":
        return {c: col(c) for c in table.columns}
    if position == 0:  # the pointer holder: only its pointer, unless its columns come along
        return {c: col(c) for c in table.columns} if node.prefix is not None else {}
    return {(node.prefix or "") + c: col(c) for c in table.columns}


def _output(node: n.Output, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    return frames[0]


_COMPILERS: dict[type, Callable[[n.Node, list[DataFrame], StepContext], DataFrame]] = {
    n.Input: _input,
    n.Select: _select,
    n.Filter: _filter,
    n.Flatten: _flatten,
    n.Reindex: _reindex,
    n.Concat: _concat,
    n.Reduce: _reduce,
    n.Join: _join,
    n.SessionWindow: _session_window,
    n.Deduplicate: _deduplicate,
    n.Sort: _sort,
    n.KeyedMerge: _keyed_merge,
    n.Output: _output,
}
