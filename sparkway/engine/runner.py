"""The driver-side step loop.

Each step: ask the sources what input is ready, log it (with the step's time) in the
metadata, read it, compile the plan to Spark for that input, run one Spark job that
collects every sink's changes, write the sinks, then commit the sources' positions.
A crash between logging and committing replays the logged step on restart.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import logging
import os
import sys
import threading
import time as _time
import uuid
from dataclasses import dataclass
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import ipc
from pyspark import StorageLevel, TaskContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from sparkway.connectors.base import ExecutorRead, OutputBatch, Piece, PieceWriter, Source
from sparkway.core import changes, spark_releases
from sparkway.core.changes import DIFF, ERRORS, ID, LOGGED, consolidate, spark_schema
from sparkway.engine.expressions import col
from sparkway.engine import iterate  # noqa: F401 - registers the compiler of Iterate nodes
from sparkway.engine.executor_reads import PieceCounts, read_by_attached_executors
from sparkway.engine.failures import computation_error, spark_ended
from sparkway.engine.operators import StepContext, compile_node, error_entries
from sparkway.engine.programs import TAG, Collection, StepInputs, can_keep, reusable_plan, shape_of
from sparkway.engine.cache import state_cache
from sparkway.engine.spark import (
    computing_step, default_parallelism, get_spark, give_back_settings, is_remote, jvm_process, running_stages,
    spark_ui_url, take_result_settings, this_machine,
)
from sparkway.engine.signals import StopSignals
from sparkway.engine.synchronization import Synchronizer
from sparkway.errors import PlanError
from sparkway.monitoring.stats import RunStats
from sparkway.persistence.config import Config
from sparkway.persistence.faults import fault_point
from sparkway.persistence.metadata import MetadataLog, brief_position
from sparkway.persistence.scratch import ScratchFolder
from sparkway.persistence.storage import BlobStorage
from sparkway.persistence.working_copies import working_copy
from sparkway.plan import nodes as n
from sparkway.state.store import StateLocation
from sparkway.state.versions import Fence

log = logging.getLogger("sparkway")


@dataclass
class RunOptions:
    spark_master: str | None = None
    persistence: Config | None = None
    #: the longest wait between two looks for new input (``poll_wait``)
    poll_interval_s: float = 0.5
    partitions: int | None = None
    #: False: a failing value becomes an Error value (logged) instead of stopping the run
    terminate_on_error: bool = True
    #: Spark's web UI on, in a session sparkway starts
    spark_ui: bool = False

ONE_BATCH_ROWS = 10_000  # Spark's default spark.sql.execution.arrow.maxRecordsPerBatch
#: a step reading at least this many rows is large (see ``StepContext.large``)
LARGE_STEP_ROWS = 200_000
#: input from which a batch's JVM compiles with the optimizing JIT (``wants_optimizing_jit``)
OPTIMIZING_JIT_BYTES = 160 << 20
#: a shuffle costs a step about what two state partitions' work in a task costs (a
#: stage, and a plan made again between stages: 60 ms of a step of 1,000 rows on two
#: cores): with at most this many state partitions, one task does a small step's work
ONE_TASK_PARTITIONS = 2


class Runner:
    """Runs a plan until every source is finished, or until SIGINT/SIGTERM."""

    def __init__(self, outputs: list[n.Output], options: RunOptions) -> None:
        self.plan = n.Plan(outputs)
        config = options.persistence
        self.udf_cache_root = config.udf_cache_folder if config is not None else None
        if config is not None and not config.keeps_state:  # only UDF caches persist
            options = dataclasses.replace(options, persistence=None)
        self.options = options
        self.sources: list[Source] = _sources(self.plan)
        # ids generated for unnamed sources hold for this run only
        self.generated_names = [s for s in self.sources if s.name is None]
        _name_sources(self.sources)
        self.output_labels = _distinct([out.sink.label for out in self.plan.outputs])
        self.stats = RunStats([s.label for s in self.sources], self.output_labels)
        self.operator_names = {
            id(node): f"{i:03d}-{node.kind.lower()}" for i, node in enumerate(self.plan.nodes) if node.is_stateful
        }
        self.step = 0
        self.last_time = 0
        self.metadata: MetadataLog | None = None
        self.partitions = 0  # state partitions, fixed by the first run of a persistent program
        self.signals = StopSignals(self._on_stop_signal)
        self.abandoning = threading.Event()  # a second stop signal: the step is given up
        self.ended = threading.Event()
        self._spark: SparkSession | None = None
        self._user_settings: dict[str, str | None] = {}  # a user's session's own, given back after the run
        self.wakeup = threading.Event()  # set when a source has input, or on a stop request
        self.entries: dict[str, int] = {}  # per source, entries read in this and earlier runs
        self._executors_see: dict[str, bool] = {}  # per source, attached to Spark Connect
        self._scratch: ScratchFolder | None = None  # the state of a run without persistence
        self._inputs: StepInputs | None = None  # with the plans later steps run again (``programs``)
        self.order, self.reads_log = _error_log_order(self.plan.nodes)
        self.node_numbers = {id(node): i for i, node in enumerate(self.plan.nodes)}  # operator ids in the error log
        self.global_log = next((x for x in self.plan.nodes if isinstance(x, n.ErrorLog) and not x.local), None)
        self.sync: Synchronizer | None = None  # the input synchronization groups, if any
        self._sync_storage: BlobStorage | None = None

    # -- the loop -------------------------------------------------------------------------
    def run(self) -> None:
        self.sync = Synchronizer.of(self.sources, _time.monotonic())
        for source in self.sources:
            source.wakeup = self.wakeup
            source.keep_errors = not self.options.terminate_on_error
        self.signals.install()  # a stop while Spark starts too
        log.info("Preparing the sparkway computation")
        try:
            self._lock()  # before Spark starts: a second process fails at once
            spark = get_spark(self.options.spark_master, ui=self.options.spark_ui,
                              optimizing_jit=wants_optimizing_jit(self.sources))
            # again: a new SparkContext installs its own SIGINT handler (raising
            # KeyboardInterrupt) over the graceful stop
            self.signals.install()
            self._spark = spark
            self._user_settings = take_result_settings(spark)
            self._watch(spark)
            location = self._open(spark)
            if reusable_plan(self.plan, keep_errors=not self.options.terminate_on_error) and can_keep(spark):
                self._inputs = StepInputs()
            sinks = [out.sink for out in self.plan.outputs]
            for sink in sinks:
                sink.open()
            try:
                self._replay_pending(spark, location)
                self._loop(spark, location)
            except Exception:
                if not self.abandoning.is_set():
                    raise
                log.info("The step was abandoned%s",
                         ": the next run does it again" if self.metadata is not None else "")
                log.debug("The abandoned step ended with", exc_info=True)
            for sink in sinks:
                sink.close()
        except Exception as error:
            ended = spark_ended(error, jvm_process())
            if ended is None:
                raise
            raise ended from None
        finally:
            failing = sys.exc_info()[0] is not None  # an exception on its way out
            self.stats.ended("failed" if failing else "stopped" if self.signals.received else "finished")
            self.signals.restore()
            self.ended.set()
            self._close()
            if self._user_settings:
                with contextlib.suppress(Exception):  # the session may have ended with the run
                    give_back_settings(self._spark, self._user_settings)

    def _loop(self, spark: SparkSession, location: StateLocation) -> None:
        """Steps, as input comes, until the sources are finished or a stop is requested."""
        while not self.signals.received:
            self.wakeup.clear()
            looked = _time.monotonic()
            segments = {s.name: s.discover() for s in self.sources}
            looking = _time.monotonic() - looked
            self.stats.looked(found=any(segments.values()))
            idle = self._idle_sources(segments)
            if any(segments.values()) or (self.sync is not None and self.sync.would_release(idle)):
                self._run_step(spark, location, segments, self._step_time(segments), idle=idle)
                if any(_forgets_marked(node) for node in self.plan.nodes):
                    self._run_step(spark, location, {}, self.last_time + 1, kind="forgetting")
            elif all(s.is_finished for s in self.sources):
                if self.sync is not None and self.sync.holding:  # cannot be: finished sources hold nobody back
                    raise PlanError(f"the input synchronization groups hold {self.sync.holding} row(s) at the end")
                if any(_holds_back(node) for node in self.plan.nodes):
                    self._run_step(spark, location, {}, self._step_time({}), kind="end")
                break
            else:
                dues = [d for s in self.sources if (d := s.due_in()) is not None]
                self.wakeup.wait(min([poll_wait(looking, self.options.poll_interval_s), *dues]))

    def _abandon(self) -> None:
        """A second stop request: the running step's Spark jobs are cancelled, and the
        run ends without committing the step (a persistent run does it again when it
        restarts, as after a crash)."""
        if self.abandoning.is_set() or self._spark is None:
            return
        self.abandoning.set()
        log.info("Abandoning the current step")
        spark = self._spark
        cancel_jobs = spark.interruptAll if is_remote(spark) else spark.sparkContext.cancelAllJobs

        def cancel() -> None:  # until the run ends: the step may not have started its job yet
            while True:
                cancel_jobs()
                if self.ended.wait(0.5):
                    return

        # from a thread of its own: the signals' thread stays free for the next one
        threading.Thread(target=cancel, name="sparkway-abandon", daemon=True).start()

    def _on_stop_signal(self, signal_name: str, nth: int) -> None:
        """SIGINT or SIGTERM (on the signals' thread): the run ends after the current
        step, which the loop sees in ``signals.received``; a second one abandons the step."""
        if nth > 1:
            self._abandon()
            return
        log.info("Received %s: finishing the current step, then stopping (again: abandon the step)", signal_name)
        self.wakeup.set()

    def _watch(self, spark: SparkSession) -> None:
        ui = spark_ui_url(spark)
        if ui is not None:
            log.info("Spark's web UI: %s", ui)
        if is_remote(spark):  # a server's stages are not this program's to show
            self.stats.watch_spark(self.options.spark_master or "Spark Connect", None, list)
        else:
            self.stats.watch_spark(spark.sparkContext.master, ui, running_stages(spark.sparkContext))

    def _step_time(self, segments: dict[str, list]) -> int:
        """The time of a new step: the time its input names (``pw.debug`` tables'
        ``__time__``, as Pathway shows it) when that is later than the last step's, else
        the clock's milliseconds; times only grow, also across restarts.  Pathway's time of
        the end of input (18446744073709551614, beyond int64) is a time after all others."""
        named = [t for s in self.sources if (t := s.time_of(segments.get(s.name, []))) is not None and t < _END]
        if named and (self.step == 0 or min(named) > self.last_time):
            return min(named)
        return max(int(_time.time() * 1000), self.last_time + 1)

    def _idle_sources(self, segments: dict[str, list]) -> list[str]:
        """The synchronized sources that hold nobody back in the next step (see
        ``Synchronizer.idle``); the step log records them, so that a replay decides alike."""
        if self.sync is None:
            return []
        finished = {s.name for s in self.sources if s.is_finished}
        return self.sync.idle(_time.monotonic(), finished, {name for name, found in segments.items() if found})

    def _run_step(
        self, spark: SparkSession, location: StateLocation, segments: dict[str, list], time: int, kind: str = "input",
        idle: list[str] | None = None,
    ) -> None:
        """One step of a ``kind``: ``input`` (the segments' changes), ``end`` (the input has
        ended, and nodes holding rows back let them out) or ``forgetting`` (right after an
        input step: marked forgets retract the rows due, see ``TimeGate``).  ``idle``: the
        synchronized sources that hold nobody back in this step."""
        step = self.step + 1
        self.stats.step_started(step, time)
        if self.metadata is not None:
            self.metadata.log_step(step, time, segments, kind, idle if self.sync is not None else None)
            fault_point("runner.step.logged")
        tables = self._read(segments, idle or [], synchronize=kind == "input")
        read_here = {name: t.num_rows for name, t in tables.items() if isinstance(t, pa.Table)}
        self._count_entries(segments, read_here)
        with computing_step(spark, step, time):
            distinct = self._distinct_inserts(segments) if kind == "input" else set()
            last_input = all(s.read_to_end(segments.get(s.name, [])) for s in self.sources)
            deliveries, read_on_executors = self._compute(spark, location, step, time, tables, kind, distinct,
                                                          last_input)
        self._count_entries(segments, read_on_executors)
        for delivery in deliveries:
            delivery.finish()
        fault_point("runner.sinks.written")
        for source in self.sources:
            source.advance(segments.get(source.name, []))
        if self.metadata is not None:
            held = None
            if self.sync is not None and self._sync_storage is not None:
                held = self.sync.save(self._sync_storage, step)  # before the commit that names them
            positions = {s.name: s.committed_position() for s in self.sources}
            self.metadata.commit(step, time, positions, self.entries, held)
            if self.sync is not None and self._sync_storage is not None:
                self.sync.clean(self._sync_storage)
        self.step, self.last_time = step, time
        for source in self.sources:
            if source.is_finished:
                self.stats.finished(source.label)
        done = self.stats.step_ended()
        log.info("Step %d (time %d): %d rows in, %d changes out, %.2f s",
                 step, time, done["rows_in"], done["rows_out"], done["seconds"])

    def _count_entries(self, segments: dict[str, list], rows: dict[str, int]) -> None:
        """Adds the rows read from each source to its entries, and logs them."""
        for source in self.sources:
            count = len(segments.get(source.name, []))
            entries = rows.get(source.name, 0)
            if source.name in rows and (count or entries):  # rows a synchronization group let through count too
                self.entries[source.name] = self.entries.get(source.name, 0) + entries
                self.stats.read(source.label, entries)
                log.info("%s: %d entries (%d minibatch(es)) have been sent to the engine",
                         source.label, entries, count or 1)

    def _read(
        self, segments: dict[str, list], idle: list[str], synchronize: bool,
    ) -> dict[str, pa.Table | ExecutorRead]:
        """Every source's changes in this step: what the segments carry, and for the
        sources of a synchronization group (in a step of input), what the group lets
        through.  Large input a source reads on Spark's executors is an ``ExecutorRead``."""
        tables: dict[str, pa.Table | ExecutorRead] = {}
        held: dict[str, list[pa.Table]] = {}
        sync = self.sync if synchronize else None
        for source in self.sources:
            found = segments.get(source.name, [])
            if sync is not None and sync.holds(source.name):
                held[source.name] = source.read_transactions(found)
            else:
                distributed = self._read_on_executors(source, found)
                tables[source.name] = distributed if distributed is not None else source.read(found)
        if sync is not None:
            for name, released in sync.step(held, idle, _time.monotonic()).items():
                empty = self._source(name).read([])
                tables[name] = empty if released is None else changes.conform(released, empty.schema)
        return tables

    def _read_on_executors(self, source: Source, found: list) -> ExecutorRead | None:
        """How Spark's tasks read ``found``, if they do (large input whose pieces
        they can reach: a Connect server's executors may not see this program's input)."""
        read = source.read_on_executors(found) if found else None
        if read is not None and is_remote(self._spark):
            if source.name not in self._executors_see:
                self._executors_see[source.name] = read_by_attached_executors(self._spark, read, source.label)
            read = read if self._executors_see[source.name] else None
        if read is not None:
            log.info("%s: %d piece(s) to read by Spark's tasks", source.label, len(read.pieces))
        return read

    def _distinct_inserts(self, segments: dict[str, list]) -> set[str]:
        """The sources whose changes in a step of these segments are insertions of
        distinct ids (none, when synchronization groups may hold rows back or let
        rows of earlier steps through)."""
        if self.sync is not None:
            return set()
        return {s.name for s in self.sources if s.inserts_distinct_rows(segments.get(s.name, []))}

    def _source(self, name: str) -> Source:
        return next(s for s in self.sources if s.name == name)

    def _compute(
        self, spark: SparkSession, location: StateLocation, step: int, time: int,
        tables: dict[str, pa.Table | ExecutorRead], kind: str = "input", distinct: set[str] | None = None,
        last_input: bool = False,
    ) -> tuple[list["_Delivery"], dict[str, int]]:
        """The step's output, per sink (a large step's is written to the sinks that take
        it in pieces as it comes, see ``_delivered``), and the rows read on the executors
        per source (``distinct``: the sources whose changes are insertions of distinct ids;
        ``last_input``: no input step follows)."""
        final = kind == "end"
        distributed = {name: t for name, t in tables.items() if isinstance(t, ExecutorRead)}
        rows_here = sum(t.num_rows for t in tables.values() if isinstance(t, pa.Table))
        ctx = StepContext(spark, step, time, location, self.partitions, self.operator_names,
                          keep_errors=not self.options.terminate_on_error, final=final, forgetting=kind == "forgetting",
                          udf_cache_root=self.udf_cache_root,
                          large=bool(distributed) or rows_here >= LARGE_STEP_ROWS,
                          one_task=not distributed and rows_here <= ONE_BATCH_ROWS
                          and self.partitions <= ONE_TASK_PARTITIONS)
        counters = {name: PieceCounts(spark) for name in distributed}
        # a small step of input may run the plan of an earlier step (``engine.programs``)
        inputs = self._inputs if kind == "input" and ctx.one_task else None
        collection = None
        if inputs is not None:
            shape = shape_of(tables)
            inputs.write(step, {name: t for name, t in tables.items() if t.num_rows})
            collection = inputs.get(shape)
        if collection is None:
            collection = self._build(ctx, tables, counters, inputs, distinct or set())
            step_bound = ctx.persisted or ctx.logged or ctx.reads_time
            # no later step would run the plan of the last one, which a static program's
            # first step often is (checking that it can costs Spark a physical plan)
            if inputs is not None and not step_bound and not last_input and collection.exchanges_nothing():
                inputs.keep(shape, collection)
        parts = collect_parts(tables, self.partitions) if ctx.large else None
        deliveries = [_Delivery(out, label, time, final, parts is not None, self.stats)
                      for out, label in zip(self.plan.outputs, self.output_labels)]
        errors = []
        try:
            for *collected, logged in _failing_as_computation(_delivered(collection, deliveries, parts, time, final)):
                for delivery, table in zip(deliveries, collected):
                    delivery.add(table)
                if logged is not None:
                    errors.append(logged)
                pa.default_memory_pool().release_unused()  # what a piece's consolidation and formatting freed
        finally:
            for frame in ctx.persisted:
                frame.unpersist()
            if inputs is not None:
                inputs.delete(step, list(tables))
        _log_errors(pa.concat_tables(errors) if errors else None)
        rows = {}
        for name, counter in counters.items():
            rows[name], skipped = counter.totals()
            if skipped:
                distributed[name].skipped(skipped)
        return deliveries, rows

    def _build(
        self, ctx: StepContext, tables: dict[str, pa.Table | ExecutorRead], counters: dict[str, PieceCounts],
        inputs: StepInputs | None, distinct: set[str],
    ) -> Collection:
        """The step's plan: the frames of the sinks and of the error log, to collect.
        With ``inputs``, the sources' rows are read from the step's files (a plan that
        later steps may run again), else given to Spark as they are.  ``distinct``: the
        sources whose changes are insertions of distinct ids, which the collection needs
        not consolidate (see ``Collection.consolidated``)."""
        spark = ctx.spark
        wakes = _holds_back if ctx.final else _forgets_marked if ctx.forgetting else (lambda node: False)
        frames: dict[int, DataFrame] = {}
        nonempty: set[int] = set()
        consumers = self.plan.consumers()
        for node in self.order:
            if isinstance(node, n.ErrorLog):
                entries = self._log_entries(ctx, ctx.time, node)
                if entries is None:
                    continue
                ctx.inputs[id(node)] = entries
            elif isinstance(node, n.Input):
                table = tables[node.source.name]
                if isinstance(table, pa.Table) and not table.num_rows:
                    continue
                schema = spark_schema(node.columns)
                if ERRORS in table.schema.names:  # a source keeping Error values, and logging errors
                    for name in (ERRORS, LOGGED):
                        schema = schema.add(name, T.ArrayType(T.StringType()))
                if isinstance(table, ExecutorRead):
                    ctx.inputs[id(node)] = counters[node.source.name].frame(table, schema)
                elif inputs is not None:
                    ctx.inputs[id(node)] = inputs.frame(spark, node.source.name, schema)
                else:
                    ctx.inputs[id(node)] = _input_frame(spark, table, schema)
            elif not any(id(i) in nonempty for i in node.inputs) and not wakes(node):
                continue  # no input changed: no output changes, and state stays as it is
            nonempty.add(id(node))
            node_inputs = [frames[id(i)] if id(i) in frames else ctx.empty(i) for i in node.inputs]
            frame = compile_node(node, node_inputs, ctx)
            if node.is_stateful and consumers.get(id(node), 0) > 1:
                frame = frame.persist()  # evaluated once even when read twice
                ctx.persisted.append(frame)
            frames[id(node)] = frame
        sinks = [frames.get(id(out)) if id(out) in nonempty else None for out in self.plan.outputs]
        consolidated = all(_distinct_ids(out, distinct) for out in self.plan.outputs if id(out) in nonempty)
        return Collection(sinks + [self._log_entries(ctx, ctx.time)], consolidated)

    def _log_entries(self, ctx: StepContext, time: int, error_log: n.ErrorLog | None = None) -> DataFrame | None:
        """The errors logged in this step: those of ``error_log``, or (None) every error;
        None when there are none."""
        parts = [
            self._entries_of(ctx, part, node, frame, time) for part, (node, frame) in enumerate(ctx.logged)
            if error_log is None
            or (id(node) not in self.reads_log and _log_of(node, self.global_log) is error_log)
        ]
        return functools.reduce(DataFrame.unionByName, parts) if parts else None

    def _entries_of(self, ctx: StepContext, part: int, node: n.Node, frame: DataFrame, time: int) -> DataFrame:
        """The error log rows of what ``node`` logged in this step in ``frame``, the
        ``part``-th frame logged (a node may log several: a join, one per side); made
        once per step."""
        if part not in ctx.entries:
            ctx.entries[part] = error_entries(frame, self.node_numbers[id(node)], node.trace, time, part)
        return ctx.entries[part]

    def _default_partitions(self, spark: SparkSession) -> int:
        return self.options.partitions or max(2, default_parallelism(spark))

    # -- persistence ----------------------------------------------------------------------------
    def _lock(self) -> None:
        config = self.options.persistence
        if config is not None:
            self.metadata = MetadataLog(config.metadata_storage.storage())
            self.metadata.lock()

    def _open(self, spark: SparkSession) -> StateLocation:
        config = self.options.persistence
        if config is None:
            self.partitions = self._default_partitions(spark)
            self._scratch = ScratchFolder("state")
            for source in self.sources:
                source.open(None)
            state = BlobStorage(os.path.join(self._scratch.path, "state"), synced=False)  # gone with the run
            return StateLocation(state, os.path.join(self._scratch.path, "local"), 10**12)
        assert self.metadata is not None
        snapshots = config.snapshot_storage.storage()
        description, partitions = self._describe(), self._default_partitions(spark)
        record, changed = self.metadata.check_plan(
            description, config.on_plan_change == "rebuild", partitions, [node.label for node in self.plan.nodes],
        )
        if changed:
            log.warning("The program changed: discarding the persisted state and starting over")
            self.metadata.begin_rebuild()
            self.metadata.clear()
            snapshots.delete("operators")
            fault_point("runner.rebuild.cleared")
            snapshots.delete("sources")
            snapshots.delete("synchronization")
            record = self.metadata.write_plan(description, partitions)  # ends the rebuild
        self.partitions = record["partitions"]
        for source in self.sources:
            source.open(snapshots.child(f"sources/{_safe(source.name)}"))
        self._sync_storage = snapshots.child("synchronization")
        commit = self.metadata.last_commit()
        if commit is None:
            log.info("No time has been advanced in the previous run, therefore no data read from the snapshot")
        else:
            self.step, self.last_time = commit["step"], commit["time"]
            self.entries = {s.name: commit.get("entries", {}).get(s.name, 0) for s in self.sources}
            log.info("Restored the state of step %d (time %d) from the persistence storage", self.step, self.last_time)
            if commit.get("synchronization"):
                # rows held by groups the program no longer has are let through at once
                self.sync = self.sync or Synchronizer([])
                schemas = {s.name: s.read([]).schema for s in self.sources}
                self.sync.restore(self._sync_storage, commit["synchronization"], schemas)
            for source in self.sources:
                if source.name in commit["positions"]:
                    position = commit["positions"][source.name]
                    source.restore(position)
                    log.info("%s: restored after %d entries; continuing from %s",
                             source.label, self.entries[source.name], brief_position(position))
        local = working_copy(state_cache(), snapshots, record["incarnation"])
        # taken after a rebuild's clearing, while holding the storage
        fence = Fence.take(snapshots)
        return StateLocation(snapshots.child("operators"), local, config.snapshot_interval_ms, fence)

    def _replay_pending(self, spark: SparkSession, location: StateLocation) -> None:
        if self.metadata is None:
            return
        pending = self.metadata.pending_step(self.step)
        if pending is not None:
            log.info("Replaying step %d, interrupted in the previous run", pending["step"])
            self._run_step(spark, location, pending["segments"], pending["time"], pending.get("kind", "input"),
                           pending.get("idle") or [])

    def _describe(self) -> list[dict[str, Any]]:
        index = {id(node): i for i, node in enumerate(self.plan.nodes)}
        return [
            {"kind": node.kind, "inputs": [index[id(i)] for i in node.inputs], **node.describe()}
            for node in self.plan.nodes
        ]

    def _close(self) -> None:
        for source in self.sources:
            source.close()
        for source in self.generated_names:
            source.name = None
        if self.metadata is not None:
            self.metadata.unlock()
        if self._scratch is not None:
            self._scratch.remove()
        if self._inputs is not None:
            self._inputs.close()
            self._inputs = None


#: the shortest wait between two looks for new input
MIN_POLL_S = 0.05


def poll_wait(looking_s: float, longest_s: float) -> float:
    """How long to wait before looking for new input again, when a look took
    ``looking_s``: as little as ``MIN_POLL_S``, so that a new file is seen soon after it
    appears, but long enough that looking costs at most a tenth of a core (a folder of
    20,000 files takes about 40 ms to list), and at most ``longest_s``.

    >>> poll_wait(0.001, 0.5), poll_wait(0.04, 0.5), poll_wait(2.0, 0.5)
    (0.05, 0.36, 0.5)
    """
    return min(longest_s, max(MIN_POLL_S, 9 * looking_s))


def _error_log_order(nodes: list[n.Node]) -> tuple[list[n.Node], set[int]]:
    """The nodes in an order that computes every node whose errors go to an error log
    before the logs, and the logs before the nodes that read them; and the ids of the
    nodes that read a log (whose errors are not logged in one: a log never feeds itself)."""
    reads_log: set[int] = set()
    for node in nodes:  # inputs come first
        if isinstance(node, n.ErrorLog) or any(id(i) in reads_log for i in node.inputs):
            reads_log.add(id(node))
    before = [x for x in nodes if id(x) not in reads_log]
    logs = [x for x in nodes if isinstance(x, n.ErrorLog)]
    after = [x for x in nodes if id(x) in reads_log and not isinstance(x, n.ErrorLog)]
    return before + logs + after, reads_log


#: times from this on (Pathway's end of input, 2**64 - 2) are not step times
_END = 2**63


def _distinct_ids(node: n.Node, distinct: set[str]) -> bool:
    """Whether the node's changes in the step are insertions of distinct ids, which no
    consolidation changes: selects and filters of the sources whose changes are
    (``distinct``: ``Source.inserts_distinct_rows``)."""
    if isinstance(node, n.Input):
        return node.source.name in distinct
    return isinstance(node, (n.Select, n.Filter, n.Output)) and all(_distinct_ids(i, distinct) for i in node.inputs)


def _holds_back(node: n.Node) -> bool:
    """Whether the node holds rows back until its input ends (``pw.Table.buffer``)."""
    return isinstance(node, n.TimeGate) and node.mode == "buffer"


def _forgets_marked(node: n.Node) -> bool:
    """Whether the node forgets rows in forgetting steps (``forget(...,
    mark_forgetting_records=True)``)."""
    return isinstance(node, n.TimeGate) and node.mode == "forget_marked"


def _log_of(node: n.Node, global_log: n.ErrorLog | None) -> n.ErrorLog | None:
    return node.error_log if node.error_log is not None else global_log


def _log_errors(errors: pa.Table | None) -> None:
    """Every error of the step in Python's log, as Pathway logs them."""
    if errors is None:
        return
    for row in errors.to_pylist():
        log.error("%s in operator %d. %s", row["message"], row["operator_id"], row["trace"])


def _sources(plan: n.Plan) -> list[Source]:
    """The plan's sources, in the order they were created."""
    unique = {id(x.source): x.source for x in plan.nodes if isinstance(x, n.Input)}
    return sorted(unique.values(), key=lambda s: s.sequence)


def _name_sources(sources: list[Source]) -> None:
    """Unnamed sources get ids "0", "1"... in creation order; ids must be distinct."""
    unnamed = (s for s in sources if s.name is None)
    for number, source in enumerate(unnamed):
        source.name = str(number)
    names = [s.name for s in sources]
    duplicates = {x for x in names if names.count(x) > 1}
    if duplicates:
        raise PlanError(f"two sources have the same persistent id: {sorted(duplicates)}")


def _distinct(labels: list[str]) -> list[str]:
    """The labels, a repeated one numbered from its second use on.

    >>> _distinct(["subscribe", "out.csv", "subscribe"])
    ['subscribe', 'out.csv', 'subscribe (2)']
    """
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return out


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _input_frame(spark: SparkSession, table: pa.Table, schema: T.StructType) -> DataFrame:
    """A source's changes in this step as a DataFrame.  Spark makes a partition of every
    Arrow batch it is given, so a large input goes in batches of a few partitions per
    core rather than of ``ONE_BATCH_ROWS`` (a task per 10,000 rows)."""
    if table.num_rows <= ONE_BATCH_ROWS:  # one task; one Arrow batch for Python functions, which
        return spark_releases.frame_from_arrow(spark, table, schema).coalesce(1)  # Pathway calls with a time's rows
    rows = max(ONE_BATCH_ROWS, -(-table.num_rows // (4 * default_parallelism(spark))))
    return spark_releases.frame_from_arrow(spark, table, schema, rows_per_partition=rows)


class _Delivery:
    """One sink's changes in a step.  In a large step, a sink with a ``PieceWriter``
    gets its changes a piece at a time: done by Spark's tasks (``_pieces``), given to the
    sink as they come (``take``), or, for one whose tasks would write files a Spark
    Connect server's executors may not share with the program, collected and done here
    (``add``); the others get the step's changes in one batch (``finish``)."""

    def __init__(self, out: n.Output, label: str, time: int, final: bool, in_pieces: bool, stats: RunStats) -> None:
        self.out, self.label, self.time, self.final, self.stats = out, label, time, final, stats
        self.writer = out.sink.piece_writer()
        self.in_pieces = in_pieces and self.writer is not None and not out.sink.sort_by
        self.held: list[pa.Table] = []
        self.taken = False

    def on_executors(self, remote: bool) -> PieceWriter | None:
        """The writer Spark's tasks run for this sink, if they run one."""
        writer = self.writer
        if not self.in_pieces or writer is None or (remote and writer.writes_files):
            return None
        return writer

    def add(self, table: pa.Table | None) -> None:
        """Changes collected to the driver (all the changes of their ids)."""
        if table is None or table.num_rows == 0:
            return
        if self.in_pieces and self.writer is not None:
            self.take(self.writer.write_piece(changes_batch(list(self.out.columns), table, self.time, self.final)))
        else:
            self.held.append(table)

    def take(self, piece: Piece) -> None:
        self.out.sink.take_piece(self.time, piece)
        self.stats.wrote(self.label, piece.rows)
        self.taken = True

    def finish(self) -> None:
        if self.in_pieces:
            self.out.sink.end_time(self.time)
            if not self.taken:
                self.stats.wrote(self.label, 0)
            return
        batch = _output_batch(self.out, pa.concat_tables(self.held) if self.held else None, self.time, self.final)
        self.held = []
        self.out.sink.write(batch.sorted_by(self.out.sink.sort_by))
        self.stats.wrote(self.label, batch.table.num_rows)


def _failing_as_computation(pieces: Iterator[list[pa.Table | None]]) -> Iterator[list[pa.Table | None]]:
    """The pieces, with a failure of the Spark job that makes them reported as the
    failure of the computation (``failures.computation_error``)."""
    try:
        yield from pieces
    except Exception as error:
        raise computation_error(error) from None


def _delivered(
    collection: Collection, deliveries: list[_Delivery], parts: int | None, time: int, final: bool,
) -> Iterator[list[pa.Table | None]]:
    """Runs the step's Spark job: per piece of its output (all of it, or with ``parts``,
    up to that many pieces, see ``_pieces``), a table per frame collected to the driver
    (None: no frame, or one whose sink's pieces the tasks did: those are ``take``n)."""
    if collection.union is None:
        return
    if parts is None:
        yield collection.layout.split(spark_releases.collect_arrow(collection.union))
        return
    remote = is_remote(collection.union.sparkSession)
    done = {k: (writer, list(d.out.columns)) for k, d in enumerate(deliveries)
            if (writer := d.on_executors(remote)) is not None}
    for rows, pieces in _pieces(collection, parts, done, time, final):
        tables = collection.layout.split(rows) if rows is not None else [None] * len(collection.layout.tags)
        for k, piece in pieces:
            deliveries[k].take(piece)
        yield [None if k in done else table for k, table in enumerate(tables)]


#: a large step's output is collected in at most this many pieces per state partition,
COLLECT_PARTS_PER_STATE_PARTITION = 8
#: and in a piece per this many bytes of input, or else one per state partition (with
#: 64 MB, the first step of 5M keys peaked 0.26 GB higher, in the driver and the JVM)
INPUT_BYTES_PER_COLLECT_PART = 16 << 20


def wants_optimizing_jit(sources: list[Source]) -> bool:
    """Whether a JVM started for these sources should compile with the optimizing JIT:
    for a stream (many steps), or a batch of at least ``OPTIMIZING_JIT_BYTES`` (with it
    and with the fast tier only: W3 over 1 GB of CSV 26 s and 30 s, the sessions and
    count first runs over 210 MB 35-39 s and 45 s, 18 s and 23 s; W3 over 100 MB 9 s and
    8 s: there the optimizing tier's warm-up costs more than it gives)."""
    return not all(s.bounded for s in sources) or sum(s.planned_bytes() for s in sources) >= OPTIMIZING_JIT_BYTES


def collect_parts(tables: dict[str, pa.Table | ExecutorRead], partitions: int) -> int:
    """In how many pieces a large step's output is collected: more for more input (100M
    rows of sessions history, 2 GB of CSV, make 2 GB of sessions, which the JVM must not
    hold at once), few for a small one, since each piece is a Spark job of its own.

    >>> collect_parts({"a": pa.table({"x": [1]})}, 2), collect_parts({"a": pa.table({"x": [1]})}, 3)
    (2, 3)
    """
    read = sum(t.input_bytes if isinstance(t, ExecutorRead) else t.nbytes for t in tables.values())
    wanted = -(-read // INPUT_BYTES_PER_COLLECT_PART)
    return min(COLLECT_PARTS_PER_STATE_PARTITION * partitions, max(partitions, wanted))


def _pieces(
    collection: Collection, parts: int, writers: dict[int, tuple[PieceWriter, list[str]]], time: int, final: bool,
) -> Iterator[tuple[pa.Table | None, list[tuple[int, Piece]]]]:
    """A large step's output, a piece at a time: the rows are spread over ``parts``
    partitions by id (all the changes of a row in one piece, where they consolidate;
    changes that need no consolidation stay in the partitions they were made in);
    each task does the work of ``writers`` (per sink position: the writer and the sink's
    columns) on its piece, and sends the other rows as Arrow IPC blobs; the driver takes
    one piece after another, so that neither the JVM nor the driver holds the whole
    output (a first run over 100M rows of history makes 2 GB of sessions).  The
    spreading is a shuffle, so the step's stateful work runs once (a stateless step
    runs it once with ``collect``, or persists it).  Per piece: the
    collected rows (None: none) and the ``(position, Piece)`` of each writer's work."""
    frame, layout = collection.union, collection.layout
    spread = frame if collection.consolidated else frame.repartition(parts, col(ID))
    collected = {layout.tags[k] for k in range(len(layout.tags)) if k not in writers and layout.tags[k] is not None}
    every = collected == set(layout.names)
    spool = ScratchFolder("pieces") if _executors_here(frame.sparkSession) else None
    spool_path = spool.path if spool is not None else None

    def work(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        part = TaskContext.get().partitionId()
        held = []
        for batch in batches:
            held.append(batch)
            rows = batch if every else batch.filter(pc.is_in(batch.column(TAG), pa.array(sorted(collected))))
            if rows.num_rows:
                yield _piece_row(part, -1, rows.num_rows, _ipc(rows), spool_path)
        if held and writers:
            table = pa.Table.from_batches(held)
            for k, (writer, columns) in writers.items():
                changes = layout.rows(table, k)
                if changes is not None and changes.num_rows:
                    piece = writer.write_piece(changes_batch(columns, changes, time, final))
                    fault_point("sink.piece.written", f"{k}-{type(writer).__name__}")
                    yield _piece_row(part, k, piece.rows, piece.data, spool_path)

    schema = spark_releases.arrow_schema(frame.schema)
    blobs = spread.mapInArrow(work, "part long, sink long, rows long, blob binary")
    try:
        for _, rows in itertools.groupby(_fetched(blobs, spool is not None, bool(writers)), key=lambda row: row.part):
            tables, pieces = [], []
            for row in rows:
                blob = _unspooled(row.blob) if spool is not None else bytes(row.blob)
                if row.sink < 0:
                    tables.append(ipc.open_stream(blob).read_all())
                else:
                    pieces.append((row.sink, Piece(row.rows, blob)))
            yield (pa.concat_tables(tables).cast(schema) if tables else None), pieces
    finally:
        if spool is not None:
            spool.remove()


def _executors_here(spark: SparkSession) -> bool:
    """Whether Spark's tasks run on this machine, and may hand the driver files."""
    return not is_remote(spark) and this_machine(spark.sparkContext.master)


def _fetched(blobs: DataFrame, spooled: bool, working: bool) -> Iterator[Any]:
    """The rows of ``blobs``, in the order of their partitions.  Spooled (the blobs are
    names of files the tasks wrote on this machine), all of them at once, in one job:
    every task runs at the same time.  Else the driver fetches one partition per job, so
    that it holds one piece at a time; tasks that do a sink's ``working`` would then
    run one at a time, so they first run in one job, their output kept on the
    executors' disks."""
    if spooled:
        yield from blobs.collect()
        return
    if working:
        blobs = blobs.persist(StorageLevel.DISK_ONLY)
        blobs.count()
    try:
        yield from (blobs.toLocalIterator() if is_remote(blobs.sparkSession)
                    else blobs.rdd.toLocalIterator(prefetchPartitions=False))
    finally:
        if working:
            blobs.unpersist()


def _piece_row(part: int, sink: int, rows: int, blob: bytes, spool: str | None) -> pa.RecordBatch:
    """A row of a piece's output: its bytes, or with a ``spool`` folder, the name of a
    file there holding them."""
    if spool is not None:
        path = os.path.join(spool, f"{part}-{sink}-{uuid.uuid4().hex}")
        with open(path, "wb") as f:
            f.write(blob)
        blob = path.encode()
    return pa.RecordBatch.from_pydict({"part": [part], "sink": [sink], "rows": [rows], "blob": [blob]})


def _unspooled(name: bytes) -> bytes:
    path = name.decode()
    with open(path, "rb") as f:
        data = f.read()
    os.remove(path)
    return data


def _ipc(batch: pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def _output_batch(out: n.Output, table: pa.Table | None, time: int, final: bool) -> OutputBatch:
    if table is None or table.num_rows == 0:
        empty = pa.table({c: pa.array([], out.columns[c].arrow_type()) for c in out.columns})
        return OutputBatch(empty, time, pa.array([], pa.int64()), pa.array([], pa.int64()), end_of_input=final)
    return changes_batch(list(out.columns), table, time, final)


def changes_batch(columns: list[str], table: pa.Table, time: int, final: bool) -> OutputBatch:
    """A sink's changes of one time (``_id``, ``columns``, ``_diff``) as it gets them:
    consolidated, the retractions first."""
    merged = consolidate(table.drop_columns([DIFF]), table.column(DIFF))
    if merged.num_rows and pc.min(merged.column(DIFF)).as_py() < 0:
        merged = merged.take(pc.sort_indices(merged, sort_keys=[(DIFF, "ascending")]))  # retractions first
    errors = merged.column(ERRORS) if ERRORS in merged.column_names else None
    return OutputBatch(merged.select(columns), time, merged.column(DIFF).combine_chunks(), merged.column(ID), errors,
                       end_of_input=final)
