"""Compiles plan nodes to the Spark DataFrame of their changes in one step.

One function per node kind.  Every change frame has the columns ``_id``, the node's
columns in order, and ``_diff``.  Stateless nodes are Spark SQL; stateful ones go through
``sparkway.engine.stateful.keyed_step`` with the kernel of their kind.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Callable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkway.core import dtypes as dt
from sparkway.core import durations, spark_releases
from sparkway.core.changes import DIFF, ERRORS, ID, LOGGED, spark_schema
from sparkway.core.dtypes import DType
from sparkway.core.expression import ColumnRef, Expr
from sparkway.core.type_rules import infer
from sparkway.engine.expressions import (
    Scope, array_items, as_type, col, compile_expr, errors_column, has_errors, messages_column, pointer_of,
)
from sparkway.engine.kernels.gate import INSTANCE, THRESHOLD, TIME, gate
from sparkway.engine.kernels.ids import DROPPED, MESSAGE
from sparkway.engine.kernels.join import join_exactly_once, join_groups
from sparkway.engine.kernels.merge import CHECKED, MISSING, POINTER, merge_groups
from sparkway.engine.kernels.ordered import REJECTED, deduplicate_instances, sort_groups
from sparkway.engine.kernels.reduce import accumulable, contributions, fallible, from_sums, reduce_groups, written_in_python
from sparkway.engine.kernels.session import sessionize
from sparkway.engine.kernels.stored import replay_stored
from sparkway.engine.kernels.streams import UPSERT, consistent_rows, snapshots, upserts
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
    inputs: dict[int, DataFrame] = field(default_factory=dict)  # id(Input/ErrorLog node) -> changes
    #: the run keeps Error values (``terminate_on_error=False``): frames have ``ERRORS``
    keep_errors: bool = False
    #: (node, frame with ``LOGGED``): the errors each node logged in this step
    logged: list[tuple[n.Node, DataFrame]] = field(default_factory=list)
    entries: dict[int, DataFrame] = field(default_factory=dict)  # position in ``logged`` -> error log rows
    #: the input has ended: a last step in which nodes holding rows back let them out
    final: bool = False
    #: a forgetting step: marked forgets retract the rows due (``TimeGate`` ``forget_marked``)
    forgetting: bool = False
    #: ids of the nodes whose changes in this step hold no Error value for sure: their
    #: consumers skip the checks of their values
    error_free: set[int] = field(default_factory=set)
    persisted: list[DataFrame] = field(default_factory=list)  # unpersisted after the step
    #: where ``pw.udfs.DiskCache`` keeps results in this run (None: no filesystem persistence)
    udf_cache_root: str | None = None
    #: the step's input is large (a first run over a long history): stateful operators
    #: work through it a chunk of groups at a time (``keyed_step``)
    large: bool = False
    #: the step's input is a few rows (one task reads them) and state partitions are
    #: few: stateful operators work in that task, without a shuffle (``keyed_step``)
    one_task: bool = False
    #: the scopes of the step's expressions (``reads_time``)
    scopes: list[Scope] = field(default_factory=list)

    @property
    def reads_time(self) -> bool:
        """Whether an expression compiled for the step holds its time."""
        return any(scope.reads_time for scope in self.scopes)

    def empty(self, node: n.Node) -> DataFrame:
        frame = self.spark.createDataFrame([], spark_schema(node.columns))
        return with_no_errors(frame) if self.keep_errors else frame

    def scope(self, node: n.Node, *inputs: dict[str, DType]) -> Scope:
        scope = Scope.of(*inputs, where=node.label, errors=self.keep_errors, time=self.time)
        scope.udf_cache_root = self.udf_cache_root
        self.scopes.append(scope)
        if scope.checks is not None and self.inputs_error_free(node):
            scope.checks.inputs = [set() for _ in inputs]
        return scope

    def inputs_error_free(self, node: n.Node) -> bool:
        return all(id(i) in self.error_free for i in node.inputs)

    def logging(self, node: n.Node, frame: DataFrame, calls_python: bool = False) -> DataFrame:
        """``frame`` without its ``LOGGED`` column, whose messages go to the node's error
        log.  A frame that ``calls_python`` (user functions) is cached for the step, so
        that they run once for the node's changes and its errors."""
        if calls_python:
            frame = frame.persist()
            self.persisted.append(frame)
        self.logged.append((node, frame))
        return frame.drop(LOGGED)

    def keyed(
        self, node: n.Node, inputs: list[KeyedInput], kernel, params, output: T.StructType, mode: str = "arranged",
        partitioned_by: Column | None = None,
    ) -> DataFrame:
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
            mode=mode,
            large=self.large,
            one_task=self.one_task,
            partitioned_by=partitioned_by,
        )




def with_no_errors(frame: DataFrame) -> DataFrame:
    return frame.withColumn(ERRORS, F.lit(None).cast("array<string>"))


def _skipping(
    node: n.Node, ctx: StepContext, frame: DataFrame, scope: Scope, failed: Column | None, what: str,
    keep: bool = False,
) -> DataFrame:
    """In a run keeping Error values: ``frame`` without the rows where ``failed`` (an
    Error in the node's ``what``; with ``keep`` they stay), logging them and the
    expressions' new errors."""
    if scope.checks is None:
        return frame
    skipped = [(failed, F.lit(f"Error value encountered in {what}, skipping the row"))] if failed is not None else []
    logged = scope.checks.logged + skipped
    if not logged:
        return frame
    frame = ctx.logging(node, frame.withColumn(LOGGED, messages_column(logged)), scope.checks.calls_python)
    return frame.filter(~failed) if failed is not None and not keep else frame


def error_entries(frame: DataFrame, operator: int, trace: str, time: int, part: int = 0) -> DataFrame:
    """Rows of an error log for the errors a node logged (``frame`` has ``LOGGED``; it is
    the ``part``-th frame logged in the step): never retracted, with ids new at every
    time (SQL text: fewer py4j calls)."""
    messages = frame.selectExpr(ID, DIFF, f"posexplode({LOGGED}) as (_pos, message)")
    return messages.select(
        F.expr(f"xxhash64({time}L, {operator}, {part}, {ID}, {DIFF}, _pos) as {ID}"),
        F.expr(f"{operator}L as operator_id"),
        col("message"),
        F.lit(trace).alias("trace"),
        F.expr(f"1L as {DIFF}"),
        F.expr(f"cast(null as array<string>) as {ERRORS}"),
    )


def register(kind: type, compiler: Callable[[Any, list[DataFrame], StepContext], DataFrame]) -> None:
    """Adds the compiler of a node kind defined in another module (``engine/iterate.py``,
    which compiles its body with this module's ``compile_node``)."""
    _COMPILERS[kind] = compiler


def compile_node(node: n.Node, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    """The changes of ``node`` given the changes of its inputs."""
    frame = _COMPILERS[type(node)](node, frames, ctx)
    if not ctx.keep_errors:
        return frame
    if ctx.inputs_error_free(node) and not any(logging is node for logging, _ in ctx.logged):
        ctx.error_free.add(id(node))
    if ERRORS not in frame.columns and not isinstance(node, n.Output):  # makes no Error values
        frame = with_no_errors(frame)
    return frame


def _changes(frame: DataFrame, columns: dict[str, Column]) -> DataFrame:
    return frame.select(col(ID), *[c.alias(name) for name, c in columns.items()], col(DIFF))


def typed(node: n.Node, frame: DataFrame) -> DataFrame:
    """The frame with exactly the node's Spark types (kernels and unions need them);
    it is returned as it is when it has them (a select, and each cast, costs py4j calls
    and an analysis by the JVM)."""
    schema = frame.schema
    names = [ID, *node.columns, DIFF, *([ERRORS] if ERRORS in frame.columns else [])]
    wanted = {ID: T.LongType(), **{name: kind.spark_type() for name, kind in node.columns.items()}}
    cast = {name for name, kind in wanted.items() if schema[name].dataType != kind}
    if not cast and frame.columns == names:
        return frame
    return frame.select(*[
        col(name) if name not in cast
        else col(ID).cast("long").alias(ID) if name == ID
        else as_type(col(name), isinstance(schema[name].dataType, T.BinaryType), node.columns[name]).alias(name)
        for name in names
    ])


def _input(node: n.Input, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    frame = ctx.inputs.get(id(node))
    if frame is None:
        return ctx.empty(node)
    keys = node.source.key_columns
    if keys:  # ids from the key's values, as pointer_from gives them (not for rows that only log)
        frame = frame.withColumn(ID, F.when(col(DIFF) == 0, col(ID)).otherwise(pointer_of([col(k) for k in keys])))
    if LOGGED in frame.columns:  # the source's errors (values that do not fit their column)
        return ctx.logging(node, frame).filter(col(DIFF) != 0)
    return with_no_errors(frame) if ctx.keep_errors and ERRORS not in frame.columns else frame


def _error_log(node: n.ErrorLog, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    entries = ctx.inputs.get(id(node))
    return entries if entries is not None else ctx.empty(node)


def _iteration_input(node: n.IterationInput, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    changes = ctx.inputs.get(id(node))
    return changes if changes is not None else ctx.empty(node)


def _iterate_result(node: n.IterateResult, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    rows = frames[0].filter(col("_input") == node.index)
    return rows.select(col(ID), *[col(f"_{node.index}_{c}").alias(c) for c in node.columns], col(DIFF))


def _select(node: n.Select, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    scope = ctx.scope(node, node.input.columns)
    compiled, flags = {}, {}
    for name, e in node.exprs:
        stored = name in node.stored
        value, flags[name] = _selected(e, scope, stored)
        compiled[name] = as_type(value, infer(e, [node.input.columns]).name == "Any", node.columns[name])
    if scope.checks is None:
        return _replayed(node, _changes(frames[0], compiled), ctx)
    values = {  # an Error's value is null
        name: value if flags[name] is None else F.when(flags[name], F.lit(None)).otherwise(value)
        for name, value in compiled.items()
    }
    values[ERRORS] = errors_column(flags)
    if not scope.checks.logged:
        return _replayed(node, _changes(frames[0], values), ctx)
    values[LOGGED] = messages_column(scope.checks.logged)  # read the input's columns
    return _replayed(node, ctx.logging(node, _changes(frames[0], values), scope.checks.calls_python), ctx)


def _selected(e: Expr, scope: Scope, stored: bool) -> tuple[Column, Column | None]:
    """A select's column and its Error flag.  A ``stored`` column is computed for
    insertions only (its functions are not called for deletions, which replay the
    stored values), so that it fails and logs errors only there."""
    if not stored:
        return compile_expr(e, scope), scope.checks.flag(e) if scope.checks is not None else None
    inserted = col(DIFF) > 0
    logged = len(scope.checks.logged) if scope.checks is not None else 0
    scope.not_called = ~inserted
    try:
        value = F.when(inserted, compile_expr(e, scope))
    finally:
        scope.not_called = None
    if scope.checks is None:
        return value, None
    entries = scope.checks.logged
    entries[logged:] = [(inserted & failed, message) for failed, message in entries[logged:]]
    flag = scope.checks.flag(e)
    return value, inserted & flag if flag is not None else None


def _replayed(node: n.Select, frame: DataFrame, ctx: StepContext) -> DataFrame:
    """The select's changes, with the deletions' stored columns (and Errors) as they
    were inserted (``Select.stored``)."""
    if not node.stored:
        return frame
    names = list(node.columns) + ([ERRORS] if ctx.keep_errors else [])
    positions = [names.index(c) for c in node.stored] + ([len(names) - 1] if ctx.keep_errors else [])
    keyed = KeyedInput(typed(node, frame), [col(ID)], {c: col(c) for c in names})
    output = spark_schema(node.columns, with_id=True)
    output = _with_errors(output) if ctx.keep_errors else output
    return ctx.keyed(node, [keyed], replay_stored, (names, positions), output, mode="groups")


def _filter(node: n.Filter, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    scope = ctx.scope(node, node.input.columns)
    predicate = F.coalesce(compile_expr(node.predicate, scope), F.lit(False))
    if scope.checks is None:
        return frames[0].filter(predicate)
    kept = _skipping(node, ctx, frames[0].withColumn("_pw_keep", predicate), scope,
                     scope.checks.flag(node.predicate), "filter condition")
    return kept.filter(col("_pw_keep")).drop("_pw_keep")


def _append_only(node: n.AppendOnly, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    if not node.check:
        return frames[0].filter(col(DIFF) > 0)
    return _failing_on_retraction(frames[0], node.label, why=node.why)


def _failing_on_retraction(frame: DataFrame, where: str, what: str = "table", why: str | None = None) -> DataFrame:
    """``frame``, whose first retraction fails the step (named as ``failures_named``
    names errors)."""
    # a native expression, so that it runs after the filters before it (a Python function
    # would be evaluated ahead of them)
    pointer = F.lpad(F.hex(col(ID)), 16, "0")
    message = F.concat(
        F.lit(f"{where}: ValueError: Expected {what} to be append-only, but got diff=-1 for key: ^"), pointer,
        F.lit(f" ({why})" if why else ""),
    )
    return frame.filter(F.when(col(DIFF) < 0, F.raise_error(message)).otherwise(F.lit(True)))


def _remove_errors(node: n.RemoveErrors, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    return frames[0].filter(~has_errors()) if ctx.keep_errors else frames[0]


def _flatten(node: n.Flatten, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    source = node.input.columns[node.column].with_optional(False)
    values = col(node.column)
    item = col("_item")
    frame = frames[0]
    if source == dt.JSON:
        scope = ctx.scope(node, node.input.columns)
        array = spark_releases.json_array_items(values)
        failed = values.isNotNull() & array.isNull()
        message = F.concat(F.lit("Pathway can't flatten this Json: "), values)  # Pathway's words
        if scope.checks is None:
            values = scope.failing(failed, "ValueError", message, array)
        else:  # as Pathway, the row gives no rows and the error is logged
            scope.checks.logged.append((failed, message))
            frame, values = _skipping(node, ctx, frame, scope, None, "flatten"), array
    elif source.is_array:
        values = array_items(source, node.label)(values)
    elif source == dt.STR:  # characters ("" has none)
        values = F.when(values == "", F.array().cast("array<string>")).otherwise(F.split(values, ""))
    exploded = frame.select("*", F.posexplode(values).alias("_pos", "_item"))
    sources = {**{name: col(name) for name in node.input.columns}, node.column: item}
    if node.origin_id is not None:
        sources[node.origin_id] = col(ID)
    columns = {name: sources[name] for name in node.columns}  # in the plan's order
    if ctx.keep_errors:
        columns[ERRORS] = col(ERRORS)
    return exploded.select(
        pointer_of([col(ID), col("_pos")]).alias(ID),
        *[c.alias(name) for name, c in columns.items()],
        col(DIFF),
    )


def _reindex(node: n.Reindex, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    scope = ctx.scope(node, node.input.columns)
    keys = [compile_expr(k, scope) for k in node.keys]
    new_id = keys[0] if node.use_pointer else pointer_of(keys)
    if scope.checks is None:
        return frames[0].select(new_id.alias(ID), *[col(c) for c in node.columns], col(DIFF))
    failed = _any_flag(scope, node.keys)
    frame = _skipping(node, ctx, frames[0].withColumn("_pw_new_id", new_id), scope, failed, "reindex as new id")
    return frame.select(col("_pw_new_id").alias(ID), *[col(c) for c in node.columns], col(DIFF), col(ERRORS))


def _any_flag(scope: Scope, exprs: Iterable[Expr]) -> Column | None:
    """Where any of the (compiled) expressions is an Error; None: nowhere."""
    flags = [f for f in (scope.checks.flag(e) for e in exprs) if f is not None]
    return functools.reduce(lambda a, b: a | b, flags) if flags else None


def _concat(node: n.Concat, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    parts = []
    for position, frame in enumerate(frames):
        frame = typed(node, frame)
        if node.reindex:
            frame = frame.withColumn(ID, pointer_of([F.lit(position).cast("long"), col(ID)]))
        parts.append(frame)
    out = parts[0]
    for frame in parts[1:]:
        out = out.unionByName(frame)
    return out


def _keyed_input(
    node: n.Node, ctx: StepContext, frame: DataFrame, scope: Scope, key_exprs: list[Expr], key_types: list[DType],
    payload: dict[str, Column], what: str, key_names: list[str] | None = None, errors_as: str | None = None,
    own_groups: int | None = None, keep_failed: bool = False, stored: bool = True, group_columns: tuple[str, ...] = (),
) -> KeyedInput:
    """An input of a stateful node: its key columns and the payload it carries (plus,
    named by ``key_names``, the key values).

    Keeping Error values, a row whose key is an Error is skipped (and logged as an error
    in the node's ``what``), and with ``errors_as`` (the kernel passes the row's
    columns through) the payload also carries the row's ``ERRORS``, by that name.
    With ``own_groups`` (a number per input) an extra key is the row's id where its key
    is an Error, so that with ``keep_failed`` such a row is kept, alone in its group (an
    outer join's unmatched row).  The key values, and the ``group_columns`` of the
    payload, are the same in all rows of a group (``KeyedInput.group_columns``).
    """
    keys = [compile_expr(e, scope).cast(t.spark_type()) for e, t in zip(key_exprs, key_types)]
    payload = dict(zip(key_names or [], keys)) | payload
    group_columns = tuple(key_names or ()) + tuple(group_columns)
    if scope.checks is None:
        return KeyedInput(frame, keys, payload, stored, group_columns)
    if errors_as is not None:
        payload[errors_as] = col(ERRORS)
    staged = frame.select(
        "*", *[k.alias(f"_pw_key_{i}") for i, k in enumerate(keys)],
        *[c.alias(f"_pw_payload_{j}") for j, c in enumerate(payload.values())],
    )
    failed = _any_flag(scope, key_exprs)
    kept = _skipping(node, ctx, staged, scope, failed, what, keep=keep_failed)
    keys = [col(f"_pw_key_{i}") for i in range(len(keys))]
    if own_groups is not None:
        alone = F.xxhash64(col(ID), F.lit(own_groups)) if failed is not None else F.lit(None)
        keys.append(F.when(_holds_flag(failed), alone).cast("long"))
    return KeyedInput(kept, keys, {name: col(f"_pw_payload_{j}") for j, name in enumerate(payload)}, stored, group_columns)


def _holds_flag(flag: Column | None) -> Column:
    return flag if flag is not None else F.lit(False)


def _errors_field(name: str = ERRORS) -> T.StructField:
    return T.StructField(name, T.ArrayType(T.StringType()))


def _with_errors(schema: T.StructType) -> T.StructType:
    """A kernel's output schema with ``ERRORS`` just before ``_diff``."""
    return T.StructType([*schema.fields[:-1], _errors_field(), schema.fields[-1]])


def _reduce(node: n.Reduce, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    inputs = [node.input.columns]
    scope = ctx.scope(node, *inputs)
    payload: dict[str, Column] = {}
    aggregates = []
    failures = {}  # aggregate -> the payload column saying where an argument is an Error
    arg_types = {}
    # input column -> the payload column carrying it for every reducer reading it, and
    # where it is an Error
    carried: dict[str, tuple[str, Column | None]] = {}
    for j, (name, agg) in enumerate(node.aggregates):
        arg_names = []
        for m, arg in enumerate(agg.args):
            column = _input_column(arg)
            if column in carried:  # min and max of one column: the state holds it once
                arg_name, failed = carried[column]
            else:
                arg_name = f"_pw_arg_{j}_{m}"
                value = compile_expr(arg, scope).cast(infer(arg, inputs).spark_type())
                failed = scope.checks.flag(arg) if scope.checks is not None else None  # known once compiled
                arg_types[arg_name] = infer(arg, inputs).arrow_type()
                payload[arg_name] = value if failed is None else F.when(failed, F.lit(None)).otherwise(value)
                if column is not None:
                    carried[column] = (arg_name, failed)
            arg_names.append(arg_name)
            if failed is not None and not node.skip_errors:
                failures[name] = failures[name] | failed if name in failures else failed
        params = agg.params
        if written_in_python(agg.kind):  # the user's function gets Python values (tuples, Json...)
            params = (*params, tuple(infer(arg, inputs) for arg in agg.args))
        aggregates.append((name, agg.kind, arg_names, params))
    for name, failed in failures.items():  # whether the group has an Error: the max of the flags
        payload[f"_pw_failed_{name}"] = failed
        aggregates.append((f"_pw_failed_{name}", "max", [f"_pw_failed_{name}"], ()))
    key_exprs = [e for _, e in node.keys]
    keyed = _keyed_input(
        node, ctx, frames[0], scope, key_exprs, [infer(e, inputs) for e in key_exprs], payload,
        "grouping columns", key_names=[name for name, _ in node.keys],
    )
    params = ([name for name, _ in node.keys], aggregates, ctx.keep_errors)
    output = spark_schema(node.columns, with_id=True)
    fallible_names = [name for name, agg in node.aggregates if ctx.keep_errors and fallible(agg.kind)]
    partitioned_by = _by_window_instance(node)
    if not failures and not fallible_names:
        if accumulable(aggregates, arg_types):
            return ctx.keyed(node, [keyed], (contributions, from_sums), params, output, "accumulated", partitioned_by)
        return ctx.keyed(node, [keyed], reduce_groups, params, output, partitioned_by=partitioned_by)
    extra = [T.StructField(f"_pw_failed_{name}", T.BooleanType()) for name in failures]
    extra += [T.StructField(f"_pw_error_{name}", T.StringType()) for name in fallible_names]
    reduced = ctx.keyed(node, [keyed], reduce_groups, params, T.StructType([*output.fields[:-1], *extra, output.fields[-1]]),
                        partitioned_by=partitioned_by)
    # an aggregate is an Error where an argument was one (with _skip_errors=False), or
    # where its reducer failed for the group (a new error, logged when the row is inserted)
    failed = {name: F.coalesce(col(f"_pw_failed_{name}"), F.lit(False)) for name in failures}
    for name in fallible_names:
        failing = col(f"_pw_error_{name}").isNotNull()
        failed[name] = failed[name] | failing if name in failed else failing
    if fallible_names:
        messages = [(col(f"_pw_error_{name}").isNotNull() & (col(DIFF) > 0), col(f"_pw_error_{name}")) for name in fallible_names]
        reduced = ctx.logging(node, reduced.withColumn(LOGGED, messages_column(messages)))
    values = [F.when(failed[c], F.lit(None)).otherwise(col(c)) if c in failed else col(c) for c in node.columns]
    return reduced.select(
        col(ID), *[v.alias(c) for v, c in zip(values, node.columns)], col(DIFF), errors_column(failed).alias(ERRORS)
    )


def _by_window_instance(node: n.Reduce) -> Column | None:
    """For a reduce of a session window's rows grouped by window and instance: the
    pointer of the instance, by which the window partitioned its state and output, so
    that each window's rows already sit in one partition (see ``keyed_step``)."""
    window = node.input
    if not isinstance(window, n.SessionWindow) or window.instance is None:
        return None
    if not any(_input_column(e) == "_pw_instance" for _, e in node.keys):
        return None
    return pointer_of([col("_pw_instance").cast(window.columns["_pw_instance"].spark_type())])


def _join(node: n.Join, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    left_types = [infer(e, [node.left.columns]) for e in node.left_keys]
    right_types = [infer(e, [node.right.columns]) for e in node.right_keys]
    unified = [dt.unify(a, b) for a, b in zip(left_types, right_types)]
    sides = []
    times = node.interval[:2] if node.interval is not None else (None, None)
    for side, frame, table, keys, time, stored, once in (
        ("left", frames[0], node.left, node.left_keys, times[0], node.keep_left, node.exactly_once[0]),
        ("right", frames[1], node.right, node.right_keys, times[1], True, node.exactly_once[1]),
    ):
        if once:  # Pathway's exactly-once side is append-only
            frame = _failing_on_retraction(frame, node.label, f"the {side} table of a join with {side}_exactly_once=True")
        scope = ctx.scope(node, table.columns)
        payload = {c: col(c) for c in table.columns}
        if time is not None:
            payload["_t"] = compile_expr(time, scope)
        # an outer side keeps a row whose key is an Error (unmatched); the other side skips it
        outer = node.how in ("outer", side)
        own_groups = len(sides) if ctx.keep_errors and node.how != "inner" else None
        sides.append(_keyed_input(
            node, ctx, typed(table, frame), scope, list(keys), unified, payload, "join condition", errors_as=ERRORS,
            own_groups=own_groups, keep_failed=outer, stored=stored,
        ))
    pair_columns = {k: v for k, v in node.columns.items() if k not in ("_l_id", "_r_id")}
    pair_fields = list(spark_schema(pair_columns, with_id=False).fields)
    left_payload, right_payload = list(node.left.columns), list(node.right.columns)
    if ctx.keep_errors:  # each side's ERRORS after its columns
        pair_fields.insert(len(left_payload), _errors_field(f"_l_{ERRORS}"))
        pair_fields.insert(len(pair_fields) - 1, _errors_field(f"_r_{ERRORS}"))
        left_payload, right_payload = left_payload + [ERRORS], right_payload + [ERRORS]
    output = T.StructType([T.StructField("_l_id", T.LongType()), T.StructField("_r_id", T.LongType()), *pair_fields])
    bounds = tuple(durations.nanos_or_number(b) for b in node.interval[2:]) if node.interval is not None else None
    if any(node.exactly_once):
        pairs = ctx.keyed(node, sides, join_exactly_once, (node.exactly_once, left_payload, right_payload), output, mode="groups")
    else:
        params: tuple = (node.how, left_payload, right_payload, bounds)
        if node.id_from is not None:  # one side's ids: the kernel checks they stay unique
            params += ((node.id_from, ctx.keep_errors),)
            if ctx.keep_errors:
                output = T.StructType([*output.fields[:-1], T.StructField(MESSAGE, T.StringType()), output.fields[-1]])
        pairs = ctx.keyed(node, sides, join_groups, params, output)
    if node.id_from is not None:
        new_id = col("_l_id" if node.id_from == "left" else "_r_id")
    else:
        new_id = pointer_of([F.coalesce(col("_l_id"), F.lit(-1)), F.coalesce(col("_r_id"), F.lit(-2))])
    errors = [_joined_errors()] if ctx.keep_errors else []
    messages = [col(MESSAGE)] if MESSAGE in output.fieldNames() else []
    joined = pairs.select(new_id.alias(ID), *[col(c) for c in node.columns], col(DIFF), *errors, *messages)
    return _logging_messages(node, ctx, joined) if messages else joined


def _logging_messages(node: n.Node, ctx: StepContext, frame: DataFrame) -> DataFrame:
    """A kernel's output without its ``MESSAGE`` column (logged when its row is inserted)
    and without the rows that only carry a message (``DROPPED``)."""
    logged = F.when(col(MESSAGE).isNotNull() & (col(DIFF) > 0), F.array(col(MESSAGE)))
    frame = ctx.logging(node, frame.withColumn(LOGGED, logged)).drop(MESSAGE)
    return frame.filter(~col(DROPPED)).drop(DROPPED) if DROPPED in frame.columns else frame


def _joined_errors() -> Column:
    """``ERRORS`` of a joined pair: each side's, named as the pair's columns (``_l_x``)."""
    return F.concat(*[_prefixed(col(f"_{side}_{ERRORS}"), f"_{side}_") for side in ("l", "r")]).alias(ERRORS)


def _prefixed(names: Column, prefix: str) -> Column:
    """An array of column names (null: none) with ``prefix`` added to each."""
    return F.transform(F.coalesce(names, F.array().cast("array<string>")), lambda x: F.concat(F.lit(prefix), x))


def _per_instance(
    node: n.Node, frame: DataFrame, ctx: StepContext, scope: Scope, instance: Expr | None,
    extra: dict[str, Column], kernel, params, carry_columns: bool = True, group_columns: tuple[str, ...] = (),
) -> DataFrame:
    """A one-input stateful node whose groups are the values of ``instance`` (one group
    when None), carrying the input's columns (or not) plus ``extra`` payload columns
    (``group_columns``: those equal in all rows of an instance)."""
    source = node.inputs[0]
    instances = [instance] if instance is not None else []
    payload = {c: col(c) for c in source.columns} if carry_columns else {}
    payload.update(extra)
    types = [infer(e, [source.columns]) for e in instances]
    carries_errors = carry_columns and ERRORS in params[-1]
    keyed = _keyed_input(
        node, ctx, typed(source, frame), scope, instances, types, payload, f"{node.kind.lower()} instance",
        errors_as=ERRORS if carries_errors else None, group_columns=group_columns,
    )
    output = spark_schema(node.columns, with_id=True)
    return ctx.keyed(node, [keyed], kernel, params, _with_errors(output) if carries_errors else output)


def _carried(node: n.Node, ctx: StepContext) -> list[str]:
    """The input columns a kernel passes through (and the row's ``ERRORS`` when kept)."""
    return list(node.inputs[0].columns) + ([ERRORS] if ctx.keep_errors else [])


def _session_window(node: n.SessionWindow, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    scope = ctx.scope(node, node.input.columns)
    instance_type = node.columns["_pw_instance"].spark_type()
    instance = compile_expr(node.instance, scope).cast(instance_type) if node.instance is not None else F.lit(None).cast(instance_type)
    # the kernel reads the time and the instance from the input's columns when they are
    # columns (the state then holds them once), else from columns of their own
    time_column = _input_column(node.time) or "_t"
    instance_column = _input_column(node.instance) if node.instance is not None else None
    if instance_column is not None and node.input.columns[instance_column] != node.columns["_pw_instance"]:
        instance_column = None
    extra = {"_t": compile_expr(node.time, scope)} if time_column == "_t" else {}
    if instance_column is None:
        instance_column, extra["_inst"] = "_inst", instance
    # a predicate sees times as Python gives them (pandas Timestamps, not nanoseconds)
    as_python = dt.to_python(infer(node.time, [node.input.columns]))
    params = (node.max_gap, as_python, time_column, instance_column, list(node.input.columns))
    return _per_instance(node, frames[0], ctx, scope, node.instance, extra, sessionize, params,
                         group_columns=(instance_column,))


def _input_column(expr: Expr) -> str | None:
    """The name of the input column ``expr`` is, when it is a column of the node's
    first input as it is; else None."""
    if isinstance(expr, ColumnRef) and isinstance(expr.table, n.InputRef) and expr.table.index == 0:
        return expr.name
    return None


def _deduplicate(node: n.Deduplicate, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    scope = ctx.scope(node, node.input.columns)
    value = compile_expr(node.value, scope)
    failed = scope.checks.flag(node.value) if scope.checks is not None else None
    frame = frames[0].filter(~failed) if failed is not None else frames[0]  # as Pathway: silently
    instances = [node.instance] if node.instance is not None else []
    payload = {c: col(c) for c in node.input.columns} | {"_v": value}
    keyed = _keyed_input(
        node, ctx, typed(node.input, frame), scope, instances, [infer(e, [node.input.columns]) for e in instances],
        payload, "deduplicate instance", errors_as=ERRORS if ctx.keep_errors else None,
    )
    outputs = _carried(node, ctx)
    # the acceptor sees values as Python gives them (a tuple, not the struct that stores it)
    as_python = dt.to_python(infer(node.value, [node.input.columns]))
    params = (node.acceptor, as_python, list(keyed.payload), outputs, ctx.keep_errors)
    output = spark_schema(node.columns, with_id=True)
    if not ctx.keep_errors:
        return ctx.keyed(node, [keyed], deduplicate_instances, params, output, mode="groups")
    output = T.StructType([*_with_errors(output).fields[:-1], T.StructField(REJECTED, T.StringType()), output.fields[-1]])
    changes = ctx.keyed(node, [keyed], deduplicate_instances, params, output, mode="groups")
    logged = ctx.logging(node, changes.withColumn(LOGGED, F.when(col(REJECTED).isNotNull(), F.array(col(REJECTED)))))
    return logged.filter(col(REJECTED).isNull()).drop(REJECTED)


def _sort(node: n.Sort, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    scope = ctx.scope(node, node.input.columns)
    extra = {"_k": compile_expr(node.key, scope)}
    return _per_instance(node, frames[0], ctx, scope, node.instance, extra, sort_groups, None, carry_columns=False)


def _with_marker(ctx: StepContext, frame: DataFrame) -> DataFrame:
    """``frame`` and a change of no row (``_diff`` 0), which makes a gate kernel run in a
    step without input (the end of the input, a forgetting step)."""
    nothing = [F.lit(None).cast(field.dataType).alias(field.name) for field in frame.schema.fields]
    marker = ctx.spark.range(1).select(*nothing).withColumn(ID, F.lit(0).cast("long")).withColumn(DIFF, F.lit(0).cast("long"))
    return frame.unionByName(marker)


def _time_gate(node: n.TimeGate, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    scope = ctx.scope(node, node.input.columns)
    frame = typed(node.input, frames[0])
    if (ctx.final and node.mode == "buffer") or (ctx.forgetting and node.mode == "forget_marked"):
        frame = _with_marker(ctx, frame)
    instance = pointer_of([compile_expr(node.instance, scope)]) if node.instance is not None else F.lit(0).cast("long")
    payload = {c: col(c) for c in node.input.columns}
    payload |= {THRESHOLD: compile_expr(node.threshold, scope), TIME: compile_expr(node.time, scope), INSTANCE: instance}
    errors_as = ERRORS if ctx.keep_errors else None
    keyed = _keyed_input(node, ctx, frame, scope, [], [], payload, "time gate", errors_as=errors_as)
    output = spark_schema(node.columns, with_id=True)
    params = (node.mode, _carried(node, ctx), ctx.forgetting)
    return ctx.keyed(node, [keyed], gate, params, _with_errors(output) if ctx.keep_errors else output, mode="gate")


def _to_stream(node: n.ToStream, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    """Per id changed in the step: its row inserted (upsert), else its row deleted."""
    values = [col(c) for c in node.input.columns] + ([col(ERRORS)] if ctx.keep_errors else [])
    net = frames[0].groupBy(col(ID), *values).agg(F.sum(col(DIFF)).alias(DIFF)).filter(col(DIFF) != 0)
    inserted_first = Window.partitionBy(col(ID)).orderBy(col(DIFF).desc())
    picked = net.withColumn("_pw_rank", F.row_number().over(inserted_first)).filter(col("_pw_rank") == 1)
    return picked.select(
        col(ID), *[col(c) for c in node.input.columns], (col(DIFF) > 0).alias(node.upsert), F.lit(1).cast("long").alias(DIFF),
        *([col(ERRORS)] if ctx.keep_errors else []),
    )


def _stream_to_table(node: n.StreamToTable, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    inputs = []
    for position, (table, frame) in enumerate(zip(node.tables, frames)):
        scope = ctx.scope(node, table.columns)
        payload = {c: col(c) for c in node.columns} if position == 0 else {}
        if position == 0 and node.is_upsert is not None:
            payload[UPSERT] = compile_expr(node.is_upsert, scope)
        keyed = _keyed_input(node, ctx, typed(table, frame), scope, [], [], payload, "stream",
                             errors_as=ERRORS if position == 0 and ctx.keep_errors else None)
        keyed.keys = [col(ID)]  # a row of the stream changes the row of its id
        inputs.append(keyed)
    output = spark_schema(node.columns, with_id=True)
    params = (_carried_columns(node, ctx), node.is_upsert is not None)
    return ctx.keyed(node, inputs, upserts, params, _with_errors(output) if ctx.keep_errors else output, mode="gate")


def _snapshots(node: n.Snapshots, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    scope = ctx.scope(node, node.input.columns)
    payload = {c: col(c) for c in _carried(node, ctx)}
    keyed = _keyed_input(node, ctx, typed(node.input, frames[0]), scope, [], [], payload, "snapshot")
    output = spark_schema(node.columns, with_id=True)
    rows = ctx.keyed(node, [keyed], snapshots, _carried(node, ctx), _with_errors(output) if ctx.keep_errors else output)
    # a row of a snapshot is new at each time: its id is made of the row's and the time
    return rows.withColumn(ID, pointer_of([F.lit(ctx.time).cast("long"), col(ID)]))


def _filter_out_forgetting(node: n.FilterOutForgetting, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    if ctx.forgetting:
        # nothing passes, but the input is computed: its stateful operators forget (a
        # frame that no output reads would not run); no change has a diff of 0
        return frames[0].filter(col(DIFF) == 0)
    if not node.consistent:
        return frames[0]
    scope = ctx.scope(node, node.input.columns)
    payload = {c: col(c) for c in _carried(node, ctx)}
    keyed = _keyed_input(node, ctx, typed(node.input, frames[0]), scope, [], [], payload, "row")
    keyed.keys = [col(ID)]
    output = spark_schema(node.columns, with_id=True)
    return ctx.keyed(node, [keyed], consistent_rows, _carried(node, ctx),
                     _with_errors(output) if ctx.keep_errors else output, mode="gate")


def _carried_columns(node: n.Node, ctx: StepContext) -> list[str]:
    """The node's own columns a kernel carries (and the row's ``ERRORS`` when kept)."""
    return list(node.columns) + ([ERRORS] if ctx.keep_errors else [])


def _keyed_merge(node: n.KeyedMerge, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    # keeping Error values, an ix's missing rows are Error values (the pointer comes along
    # for the message), not a failed step
    checks_missing = ctx.keep_errors and node.mode == "ix" and not node.optional
    inputs = []
    for position, (table, frame, key) in enumerate(zip(node.tables, frames, node.keys)):
        scope = ctx.scope(node, table.columns)
        payload = _merge_payload(node, position, table)
        # the looked-up table's ERRORS under the prefix of its columns, beside the holder's
        errors_as = (node.prefix or "") + ERRORS if node.mode == "ix" and position == 1 else ERRORS
        keyed = _keyed_input(
            node, ctx, frame, scope, [key] if key is not None else [], [dt.POINTER], payload, "key",
            errors_as=errors_as if payload else None,
            key_names=[POINTER] if checks_missing and position == 0 and key is not None else None,
        )
        if key is None:  # matched on its ids
            keyed.keys = [col(ID)]
            if checks_missing and position == 0:
                keyed.payload[POINTER] = col(ID)
        inputs.append(keyed)
    output = spark_schema(node.columns, with_id=True)
    if not ctx.keep_errors:
        return ctx.keyed(node, inputs, merge_groups, (node.mode, list(node.columns), node.optional), output)
    errors = [ERRORS] + ([node.prefix + ERRORS] if node.mode == "ix" and node.prefix is not None else [])
    fields = [*output.fields[:-1], *[_errors_field(name) for name in errors]]
    params: tuple = (node.mode, list(node.columns) + errors, node.optional)
    if checks_missing:
        params += ((node.prefix or "") + ERRORS,)
        fields.append(T.StructField(MISSING, T.StringType()))
    elif node.mode in CHECKED:  # the kernel checks the promises about ids, and says what to log
        params += (True,)
        fields += [T.StructField(MESSAGE, T.StringType()), T.StructField(DROPPED, T.BooleanType())]
    merged = ctx.keyed(node, inputs, merge_groups, params, T.StructType([*fields, output.fields[-1]]))
    if checks_missing or node.mode in CHECKED:
        merged = _logging_messages(node, ctx, merged)
    if len(errors) == 1:
        return merged
    both = F.concat(_prefixed(col(ERRORS), ""), _prefixed(col(errors[1]), node.prefix))
    return merged.select(col(ID), *[col(c) for c in node.columns], col(DIFF), both.alias(ERRORS))


def _merge_payload(node: n.KeyedMerge, position: int, table: n.Node) -> dict[str, Column]:
    """The columns an input of a keyed merge carries into the kernel, by output name."""
    if node.mode == "restrict" and position == 1:  # only its ids count
        return {}
    if node.mode != "ix":
        return {c: col(c) for c in table.columns}
    if position == 0:  # the pointer holder: only its pointer, unless its columns come along
        return {c: col(c) for c in table.columns} if node.prefix is not None else {}
    return {(node.prefix or "") + c: col(c) for c in table.columns}


def _output(node: n.Output, frames: list[DataFrame], ctx: StepContext) -> DataFrame:
    if not ctx.keep_errors or getattr(node.sink, "keeps_errors", False) or ctx.inputs_error_free(node):
        return frames[0]
    failed = has_errors()
    message = F.lit("Error value encountered in output, skipping the row")
    frame = ctx.logging(node, frames[0].withColumn(LOGGED, F.when(failed, F.array(message))))
    return frame.filter(~failed).drop(ERRORS)


_COMPILERS: dict[type, Callable[[n.Node, list[DataFrame], StepContext], DataFrame]] = {
    n.Input: _input,
    n.ErrorLog: _error_log,
    n.Select: _select,
    n.Filter: _filter,
    n.RemoveErrors: _remove_errors,
    n.AppendOnly: _append_only,
    n.Flatten: _flatten,
    n.Reindex: _reindex,
    n.Concat: _concat,
    n.Reduce: _reduce,
    n.Join: _join,
    n.SessionWindow: _session_window,
    n.Deduplicate: _deduplicate,
    n.Sort: _sort,
    n.KeyedMerge: _keyed_merge,
    n.IterationInput: _iteration_input,
    n.IterateResult: _iterate_result,
    n.TimeGate: _time_gate,
    n.ToStream: _to_stream,
    n.StreamToTable: _stream_to_table,
    n.Snapshots: _snapshots,
    n.FilterOutForgetting: _filter_out_forgetting,
    n.Output: _output,
}
