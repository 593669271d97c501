"""Stateful operators on Spark: a shuffle by key, then an Arrow kernel per partition.

Driver side, ``keyed_step`` tags each input's changes with the group pointer ``_gid``
(the hash of the key values) and a state partition ``_part``, unions the inputs, shuffles
by ``_part`` and maps each Spark partition with ``_run_partitions``.

Executor side, for each state partition in the data: open its versioned store at the
state before this step, load the *arrangements* (per input and group: the rows, with
multiplicity and arrival time) of the touched groups, apply the changes, run the kernel
on the old and on the new rows, and emit the difference of the two outputs.  A large
step does this a chunk of whole groups at a time, in the order Spark sorted them.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import pickle
import struct
import time as _time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkway.core.changes import DIFF, ID, consolidate, version_changes
from sparkway.core.spark_releases import arrow_schema
from sparkway.engine.expressions import col, pointer_of
from sparkway.engine.failures import failures_named
from sparkway.engine.spark import map_in_arrow, task_step
from sparkway.persistence.faults import fault_point
from sparkway.state.arrangement import (
    COUNT, GID, KEYS, ROW_ID, TIME, VALUE_HASH, ArrangementStore, consolidated, consolidated_union,
)
from sparkway.state.store import StateLocation

Kernel = Callable[[list[pa.Table], Any], pa.Table]
#: an operator whose output depends on its changes, not only on the rows its inputs hold
#: (``TimeGate``, ``StreamToTable``...): given a group's stored state (None at first), its
#: changes of the step (``_input``, ``_id``, the payload, ``_diff``; ``_diff`` 0 marks a
#: step without input: the input ended, or a forgetting step) and the params, the output
#: changes and the new state (None: nothing to keep)
GateKernel = Callable[[Any, pa.Table, Any], tuple[pa.Table, Any]]
#: an operator keeping a state per group that sees its changes in one call for all the
#: groups of a partition (groups of one row: a select's stored results; or of one
#: instance: deduplicate): given the stored states by group pointer (groups without one
#: are absent), the changes (``_gid``, ``_input``, ``_id``, the first input's payload by
#: name, the others' as ``_<input>_<name>``, ``_diff``) and the params,
#: the output changes and the new states of the groups that changed (None: deleted)
GroupsKernel = Callable[[dict[int, Any], pa.Table, Any], tuple[pa.Table, dict[int, Any]]]
#: row id -> [payload values, multiplicity, arrival time]; or, for an id under which rows
#: of different values are held (a stream of changes repeats its keys: ``to_stream``), a
#: list of such entries
Arrangement = dict[int, list]


@dataclass
class KeyedInput:
    """One input of a stateful operator: its changes, key and the columns it keeps."""

    frame: DataFrame
    keys: list[Column]
    payload: dict[str, Column]
    # False: the input's rows of a step meet the state of that step and are then
    # forgotten (the left side of an asof_now_join, whose results never change)
    stored: bool = True
    #: payload columns whose value is the same in every row of a group (the group's key
    #: values): the state of a one-input operator does not hold them, a step takes them
    #: from its changes, which every group it touches has
    group_columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class KernelSpec:
    """Everything an executor needs for one operator in one step (pickled to tasks)."""

    operator: str
    where: str  # how errors name the operator (Node.label)
    #: None on the driver: tasks learn them from their job (``map_in_arrow``), so that
    #: the spec, and the Python function made of it, stay the same from step to step
    step: int | None
    time: int | None
    location: StateLocation
    payloads: tuple[tuple[tuple[str, pa.DataType], ...], ...]  # per input: (name, type)
    kernel: Kernel
    params: Any
    output_schema: pa.Schema  # the kernel's output columns, then _diff
    stored: tuple[bool, ...]  # per input: KeyedInput.stored
    #: what ``kernel`` is: "arranged" a ``Kernel`` (old and new rows of the groups),
    #: "gate" a ``GateKernel``, "groups" a ``GroupsKernel`` (both see the changes themselves),
    #: "accumulated" a pair of functions: the sums each change adds to its group (Spark
    #: expressions, summed by Spark), and the output rows of groups given by their sums
    #: (``_apply_accumulated``)
    mode: str = "arranged"
    #: per input, the positions in its payload of columns the state does not hold
    #: (``KeyedInput.group_columns``)
    unstored: tuple[tuple[int, ...], ...] = ()
    #: in a large step, the rows come sorted by ``_gid``, and arrangements are applied to
    #: chunks of whole groups of about this many rows (bounded memory on the
    #: executors); None: to all rows at once
    chunk_rows: int | None = None


def keyed_step(
    inputs: list[KeyedInput],
    *,
    operator: str,
    where: str,
    step: int,
    time: int,
    location: StateLocation,
    partitions: int,
    kernel: Kernel,
    params: Any,
    output: T.StructType,
    mode: str = "arranged",
    large: bool = False,
    one_task: bool = False,
    partitioned_by: Column | None = None,
) -> DataFrame:
    """The changes of a stateful operator's output in this step (lazy); ``mode`` says
    what ``kernel`` is (``KernelSpec.mode``).  In a ``large`` step, Spark sorts each
    partition by group, so that executors apply arrangements a chunk of groups at a
    time (Spark's sort spills to disk; a Python worker holds one chunk).
    With ``one_task`` (a step of few rows, few state partitions), one task works through
    every state partition the rows touch, without a shuffle.

    ``partitioned_by``: the group pointer by which the (one) input's rows are already
    partitioned, the upstream operator's, which puts each of this operator's groups
    whole in one of its partitions (a session window's instance, for the reduce of its
    windows): state partitions then follow it, and no shuffle is needed."""
    frames, payload_types = [], []
    for index, item in enumerate(inputs):
        gid = pointer_of(item.keys)
        columns = [c.alias(f"_{index}_{name}") for name, c in item.payload.items()]
        # arrangements tell the entries of one id apart by a hash of their values
        values = F.xxhash64(*item.payload.values()) if item.payload else F.lit(0).cast("long")
        value_hash = [values.alias("_vh")] if mode == "arranged" else []
        routing = gid if partitioned_by is None else partitioned_by
        frame = item.frame.select(
            F.lit(index).alias("_input"),
            gid.alias("_gid"),
            F.pmod(routing, F.lit(partitions)).alias("_part"),
            col(ID),
            col(DIFF),
            *value_hash,
            *columns,
        )
        frames.append(frame)
        schema = arrow_schema(frame.schema)
        payload_types.append(tuple((n, schema.field(f"_{index}_{n}").type) for n in item.payload))
    union = functools.reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)
    keyless = not any(item.keys for item in inputs)
    chunked = large and mode in _ARRANGED and not keyless
    unstored = tuple(
        tuple(j for j, name in enumerate(item.payload) if name in item.group_columns) if len(inputs) == 1 else ()
        for item in inputs
    )
    spec = KernelSpec(
        operator, where, None, None, location, tuple(payload_types), kernel, params,
        arrow_schema(output), tuple(i.stored for i in inputs), mode,
        unstored, CHUNK_ROWS if chunked else None,
    )
    if mode == "accumulated":  # before the shuffle: only the sums cross it
        union = _contributions(inputs[0], kernel[0], params, summed=large)(union)
    # without keys every row is in one group, hence one state partition
    if keyless or one_task:
        grouped = union.coalesce(1)
    elif partitioned_by is not None:
        grouped = union
    else:
        grouped = by_state_partition(union, partitions).drop(ROUTE)
    if chunked:  # one long key: Spark sorts it by radix sort
        grouped = grouped.sortWithinPartitions("_gid")
    return map_in_arrow(grouped, functools.partial(_run_partitions, spec), output, (step, time))


#: the column of ``by_state_partition``'s shuffle key
ROUTE = "_route"


def by_state_partition(frame: DataFrame, partitions: int) -> DataFrame:
    """``frame`` shuffled into ``partitions`` Spark partitions, state partition ``_part``
    = p in Spark partition p.  Spark places a row by the Murmur3 hash of its key, and the
    hashes of a few small numbers collide: by ``_part`` itself, state partitions 0 and 1
    both went to Spark partition 1 of 2, and one task did all of a step's work.  So the
    key is, per state partition, a number whose hash lands in the partition of that number.

    The key is column ``ROUTE``: a group-by whose keys include it keeps the placement,
    where any other would shuffle again (and a task could then hold several state
    partitions, or two tasks one).  Drop it before the kernels.
    """
    keys = F.array(*[F.lit(landing_key(p, partitions)).cast("long") for p in range(partitions)])
    return frame.withColumn(ROUTE, F.element_at(keys, col("_part").cast("int") + 1)).repartition(partitions, ROUTE)


@functools.lru_cache(maxsize=64)
def landing_key(partition: int, partitions: int) -> int:
    """The smallest long that Spark's hash partitioning into ``partitions`` puts in
    ``partition`` (``pmod(murmur3(key, seed 42), partitions)``, as ``F.hash`` computes).

    >>> landing_key(0, 2), landing_key(1, 2)
    (2, 0)
    """
    key = 0
    while _spark_hash_of_long(key) % partitions != partition:
        key += 1
    return key


def _spark_hash_of_long(value: int, seed: int = 42) -> int:
    """Spark's ``Murmur3_x86_32.hashLong``: the low then the high 32 bits of the long."""
    mask = 0xFFFFFFFF

    def rotated(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    h = seed
    for word in (value & mask, (value >> 32) & mask):
        k = rotated((word * 0xCC9E2D51) & mask, 15) * 0x1B873593 & mask
        h = (rotated(h ^ k, 13) * 5 + 0xE6546B64) & mask
    h ^= 8
    h = ((h ^ (h >> 16)) * 0x85EBCA6B) & mask
    h = ((h ^ (h >> 13)) * 0xC2B2AE35) & mask
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h  # a Java int


def _contributions(
    item: KeyedInput, contribute: Callable, params: Any, summed: bool,
) -> Callable[[DataFrame], DataFrame]:
    """An accumulated reduce's changes as what they add to their groups: ``_diff`` (the
    rows a group gains), the group's keys (``_0_<name>``) and ``contribute``'s sums.
    ``summed``: Spark sums them per group and map task (a large step: a row per group
    crosses the shuffle); else a row per change, which executors sum (``consolidated``):
    an aggregation in Spark cost a step of 1,000 rows more than the rows' sums."""
    sums = contribute({name: col(f"_0_{name}") for name in item.payload}, col(DIFF), params)
    keys = [f"_0_{name}" for name in params[0]]
    if not summed:
        columns = [DIFF, *keys, *[F.coalesce(c, F.lit(0)).alias(name) for name, c in sums.items()]]
        return lambda frame: frame.select("_input", "_gid", "_part", *columns)
    columns = [
        F.sum(DIFF).alias(DIFF),
        *[F.first(key).alias(key) for key in keys],  # equal in a group
        *[F.coalesce(F.sum(c), F.lit(0)).alias(name) for name, c in sums.items()],
    ]
    return lambda frame: frame.groupBy("_input", "_gid", "_part").agg(*columns)


# -- executor side ---------------------------------------------------------------------------

def _run_partitions(
    spec: KernelSpec, batches: Iterator[pa.RecordBatch], step: tuple[int, int] | None,
) -> Iterator[pa.RecordBatch]:
    fault_point("kernel.started", spec.operator)  # for the tests of task retries and lost executors
    number, time = step or task_step()
    spec = dataclasses.replace(spec, step=number, time=time)
    if spec.mode in _ARRANGED:
        yield from _run_arranged(spec, batches)
        return
    chunks = list(batches)
    if not chunks:
        return
    table = pa.Table.from_batches(chunks)
    if table.num_rows == 0:
        return
    for part in sorted(pc.unique(table.column("_part")).to_pylist()):
        rows = table.filter(pc.equal(table.column("_part"), part))
        out = _apply_with_retry(spec, part, rows)
        yield from out.cast(spec.output_schema).to_batches()


#: modes whose state is arrangements: immutable files, which no task holds
_ARRANGED = ("arranged", "accumulated")
#: rows of a chunk of groups, in a large step (a larger group is a chunk of its own):
#: a chunk's work needs a few times its size of transient memory in the worker
CHUNK_ROWS = 1 << 15


def _run_arranged(spec: KernelSpec, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Applies the step to the state partitions of an operator kept as arrangements, a
    chunk of whole groups at a time: each partition's changes go to its new run as they
    are made (groups come in ascending ``_gid``), and partitions commit at the end."""
    chunks = _whole(batches) if spec.chunk_rows is None else _group_chunks(batches, spec.chunk_rows)
    stores: dict[int, ArrangementStore] = {}
    summed: tuple[str, ...] = ()
    try:
        for chunk in chunks:
            for part, rows in _by_part(chunk):
                if part not in stores:
                    stores[part] = spec.location.arrangements(spec.operator, part)
                    stores[part].begin(spec.step)
                if spec.mode == "arranged":
                    out, changes = _apply_arranged(spec, rows, stores[part])
                else:
                    out, changes, summed = _apply_accumulated(spec, rows, stores[part])
                stores[part].add(changes)
                yield from out.cast(spec.output_schema).to_batches()
            # Arrow's allocator keeps what a chunk's work freed (about 100 MB for 140k rows
            # of a session window), in each of the (up to two per task) Python workers
            pa.default_memory_pool().release_unused()
        for part in sorted(stores):
            stores[part].commit(summed=summed)
    except BaseException:
        for store in stores.values():
            store.abort()
        raise


def _whole(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.Table]:
    """All the rows as one chunk, sorted by ``_gid``."""
    chunks = [batch for batch in batches if batch.num_rows]
    if chunks:
        yield pa.Table.from_batches(chunks).sort_by([("_gid", "ascending")])


def _group_chunks(batches: Iterator[pa.RecordBatch], limit: int) -> Iterator[pa.Table]:
    """Rows sorted by ``_gid`` as tables of whole groups of about ``limit`` rows: a
    table ends where a group starts, once it holds ``limit`` rows."""
    pending: list[pa.RecordBatch] = []
    count = 0
    last: int | None = None  # the _gid of the last row taken
    for batch in batches:
        if batch.num_rows == 0:
            continue
        gids = batch.column("_gid").to_numpy()
        if count + batch.num_rows >= limit:
            starts = np.flatnonzero(gids[1:] != gids[:-1]) + 1
            if last is not None and last != gids[0]:
                starts = np.concatenate([[0], starts])
            if len(starts):
                cut = int(starts[-1])
                yield pa.Table.from_batches([*pending, batch.slice(0, cut)], batch.schema)
                pending, count = [], 0
                batch = batch.slice(cut)
        pending.append(batch)
        count += batch.num_rows
        last = gids[-1]
    if pending:
        yield pa.Table.from_batches(pending)


def _by_part(rows: pa.Table) -> Iterator[tuple[int, pa.Table]]:
    """The rows of each state partition in the chunk (a Spark partition may hold
    several), in ascending ``_gid`` as they came."""
    parts = rows.column("_part").to_numpy()
    if (parts == parts[0]).all():
        yield int(parts[0]), rows
        return
    for part in np.unique(parts).tolist():
        yield part, rows.filter(pa.array(parts == part))


def _apply_with_retry(
    spec: Any, part: int, rows: pa.Table, attempts: int = 50, apply: Callable | None = None,
) -> pa.Table:
    """Applies the step to one partition of a keyed state store (with ``apply``, default
    ``_apply``); waits while another task holds it."""
    for attempt in range(attempts):
        store = spec.location.partition(spec.operator, part)
        try:
            store.begin(spec.step)
        except Exception as error:  # RocksDB's lock: a zombie attempt still has it open
            store.close()
            if "lock" not in str(error).lower() or attempt == attempts - 1:
                raise
            _time.sleep(0.1 * (attempt + 1))
            continue
        try:
            out, updates = (apply or _apply)(spec, rows, store)
            store.commit(updates)
            return out
        finally:
            store.close()
    raise AssertionError("unreachable")


def _state_key(input_index: int, gid: int) -> bytes:
    return struct.pack(">Bq", input_index, gid)


def _apply(spec: KernelSpec, rows: pa.Table, store: Any) -> tuple[pa.Table, dict[bytes, bytes | None]]:
    return (_apply_gate if spec.mode == "gate" else _apply_groups)(spec, rows, store)


def _apply_arranged(spec: KernelSpec, rows: pa.Table, store: ArrangementStore) -> tuple[pa.Table, dict[int, pa.Table]]:
    """The arrangements of the touched groups before and after the changes, through the
    kernel; the output is the difference of its two results."""
    gids = np.unique(rows.column("_gid").to_numpy())
    tables, changes = [], {}
    for i, payload in enumerate(spec.payloads):
        mine = rows.filter(pc.equal(rows.column("_input"), i))
        step_rows = _arranged_rows(mine, [f"_{i}_{name}" for name, _ in payload], spec.time)
        unstored = [f"_v{j}" for j in spec.unstored[i]] if spec.unstored else []
        held = store.lookup(i, gids) if spec.stored[i] else None
        if held is not None and unstored:
            held = _with_group_values(held, step_rows, unstored)
        old = held.cast(step_rows.schema) if held is not None else step_rows.slice(0, 0)
        old_rows, new_rows, changes[i] = _versions(old, step_rows)
        tables.append(_kernel_rows(old_rows, new_rows, gids, [name for name, _ in payload]))
        if not spec.stored[i]:
            del changes[i]
        elif unstored:
            changes[i] = changes[i].drop_columns(unstored)
    with failures_named(spec.where):
        out = spec.kernel(tables, spec.params)
    is_new = pc.equal(pc.bit_wise_and(out.column("_g"), 1), 1)
    return version_changes(out.drop_columns(["_g"]), is_new), changes


def _with_group_values(held: pa.Table, step_rows: pa.Table, columns: list[str]) -> pa.Table:
    """Stored rows with the ``columns`` the state does not hold, whose values are their
    group's: taken from a change of the same group in the step."""
    step_gids = step_rows.column(GID).to_numpy()
    order = np.argsort(step_gids, kind="stable")
    groups, first = np.unique(step_gids[order], return_index=True)
    source = order[first][np.searchsorted(groups, held.column(GID).to_numpy())]
    for name in columns:
        held = held.append_column(name, step_rows.column(name).take(pa.array(source)))
    return held.select(step_rows.column_names)


def _apply_accumulated(
    spec: KernelSpec, rows: pa.Table, store: ArrangementStore,
) -> tuple[pa.Table, dict[int, pa.Table], tuple[str, ...]]:
    """A reduce whose aggregates are sums (``kernels.reduce.ACCUMULABLE``): per group, one
    arrangement row holding its count, its keys and its sums; a step adds the changes'
    contributions (``_contributions``), so it costs
    O(changed groups) whatever their size.  Returns the output, the arrangement's changes
    and the names of its summed columns."""
    _, results = spec.kernel
    key_names = spec.params[0]
    sums = tuple(c for c in rows.column_names if c not in ("_input", "_gid", "_part", DIFF) and not c.startswith("_0_"))
    zeros = pa.array(np.zeros(rows.num_rows, dtype=np.int64))
    delta = consolidated(pa.table({
        GID: rows.column("_gid"), ROW_ID: zeros, VALUE_HASH: zeros, COUNT: rows.column(DIFF),
        TIME: pa.array(np.full(rows.num_rows, spec.time, dtype=np.int64)),
        **{f"_v{j}": rows.column(f"_0_{name}") for j, name in enumerate(key_names)},
        **{name: rows.column(name) for name in sums},
    }), sums)
    held = store.lookup(0, np.unique(rows.column("_gid").to_numpy()), sums)
    old = held.cast(delta.schema) if held is not None else delta.slice(0, 0)
    new = consolidated_union(old, delta, sums)
    outputs = []
    for groups in (old, new):
        groups = groups.filter(pc.greater(groups.column(COUNT), 0))
        named = groups.rename_columns([
            {GID: "_gid", **{f"_v{j}": k for j, k in enumerate(key_names)}}.get(c, c) for c in groups.column_names
        ])
        with failures_named(spec.where):
            outputs.append(results(named, spec.params))
    diffs = np.repeat(np.array([-1, 1], dtype=np.int64), [outputs[0].num_rows, outputs[1].num_rows])
    return consolidate(pa.concat_tables(outputs), pa.array(diffs)), {0: delta}, sums


def _arranged_rows(changes: pa.Table, payload: list[str], time: int) -> pa.Table:
    """An input's changes as arrangement rows (payload columns by position: ``_v<j>``)."""
    return pa.table({
        GID: changes.column("_gid"), ROW_ID: changes.column(ID), VALUE_HASH: changes.column("_vh"),
        COUNT: changes.column(DIFF), TIME: pa.array(np.full(changes.num_rows, time, dtype=np.int64)),
        **{f"_v{j}": changes.column(name) for j, name in enumerate(payload)},
    })


def _versions(old: pa.Table, step_rows: pa.Table) -> tuple[pa.Table, pa.Table, pa.Table]:
    """(rows to compute with before the step, after it, the arrangement's changes).

    Most groups only gain rows and lose rows they hold: their new rows are the old ones
    and the changes consolidated, all vectorized.  A group is *irregular* when a
    retraction finds no row of its values (a value computed again differently) or it
    holds rows of negative multiplicity (a stream whose ids do not pair up): those few
    go through the per-entry rules of ``_irregular``."""
    net = consolidated(step_rows)
    if old.num_rows == 0 and (net.num_rows == 0 or pc.min(net.column(COUNT)).as_py() > 0):  # nothing to match
        return old, net, net
    odd = _irregular_gids(old, net)
    if len(odd):
        odd = pa.array(odd)
        odd_in_old = pc.is_in(old.column(GID), odd)
        regular_old = old.filter(pc.invert(odd_in_old))
        regular_net = net.filter(pc.invert(pc.is_in(net.column(GID), odd)))
        new = consolidated_union(regular_old, regular_net)
        odd_old, odd_new, odd_changes = _irregular(
            old.filter(odd_in_old), step_rows.filter(pc.is_in(step_rows.column(GID), odd)),
        )
        return (
            pa.concat_tables([regular_old, odd_old]),
            pa.concat_tables([new, odd_new]),
            pa.concat_tables([regular_net, odd_changes]),
        )
    return old, consolidated_union(old, net), net


def _irregular_gids(old: pa.Table, net: pa.Table) -> np.ndarray:
    """The groups holding a negative multiplicity, or that a change would make negative."""
    negative = old.filter(pc.less(old.column(COUNT), 0)).column(GID).to_numpy()
    retracted = net.filter(pc.less(net.column(COUNT), 0))
    if retracted.num_rows:
        held = old.select([*KEYS, COUNT]).rename_columns([*KEYS, "_held"])
        joined = retracted.select([*KEYS, COUNT]).join(held, KEYS, join_type="left outer", use_threads=False)
        after = pc.add(joined.column(COUNT), pc.fill_null(joined.column("_held"), 0))
        negative = np.concatenate([negative, joined.filter(pc.less(after, 0)).column(GID).to_numpy()])
    return np.unique(negative)


def _kernel_rows(old: pa.Table, new: pa.Table, gids: np.ndarray, names: list[str]) -> pa.Table:
    """What a kernel computes on: ``_g`` (2 * the group's number + 0 before, 1 after the
    step), ``_id``, ``_gid``, ``_time`` and the payload by name; a row of multiplicity m
    appears m times."""
    parts = []
    for version, rows in ((0, old), (1, new)):
        counts = rows.column(COUNT).to_numpy()
        if len(counts) and counts.max() > 1:
            rows = rows.take(pa.array(np.repeat(np.arange(len(counts)), counts)))
        group = np.searchsorted(gids, rows.column(GID).to_numpy())
        parts.append(pa.table({
            "_g": pa.array(2 * group + version, pa.int64()), ID: rows.column(ROW_ID), "_gid": rows.column(GID),
            "_time": rows.column(TIME), **{name: rows.column(f"_v{j}") for j, name in enumerate(names)},
        }))
    return pa.concat_tables(parts)


def _irregular(old: pa.Table, step_rows: pa.Table) -> tuple[pa.Table, pa.Table, pa.Table]:
    """``_versions`` for irregular groups: every change applied in turn to the entries of
    its id (``_add_change``), in Python; these groups are rare."""
    hashes: dict[str, int] = {}
    own: dict[int, Arrangement] = collections.defaultdict(dict)
    ordered = old.sort_by([(TIME, "ascending")])  # an id's entries in the order they came
    for gid, row_id, value_hash, count, time, *values in zip(*(c.to_pylist() for c in ordered.columns)):
        hashes[repr(values)] = value_hash
        _entries_of(own[gid], row_id).append([tuple(values), count, time])
    before = {gid: {row_id: [list(e) for e in _entries(held)] for row_id, held in arrangement.items()}
              for gid, arrangement in own.items()}
    for gid, row_id, value_hash, diff, time, *values in zip(*(c.to_pylist() for c in step_rows.columns)):
        hashes.setdefault(repr(values), value_hash)
        entries = _entries_of(own[gid], row_id)
        _add_change(entries, tuple(values), diff, time)
        if not entries:
            del own[gid][row_id]
    schema = old.schema

    def table(arrangements: dict[int, Arrangement], sign: int, computing: bool) -> pa.Table:
        out = []
        for gid, arrangement in arrangements.items():
            if computing:  # what the kernel sees: negative multiplicities cancel rows of their values
                held = _cancel_negative(arrangement)
            else:
                held = [(row_id, *entry) for row_id, entries in arrangement.items() for entry in _entries(entries)]
            out += [(gid, row_id, hashes[repr(list(values))], sign * count, time, *values)
                    for row_id, values, count, time in held]
        columns = list(zip(*out)) if out else [[] for _ in schema]
        return pa.Table.from_arrays([pa.array(c, f.type) for c, f in zip(columns, schema)], schema=schema)

    changes = pa.concat_tables([table(before, -1, False), table(own, 1, False)])
    return table(before, 1, True), table(own, 1, True), consolidated(changes)


def _entries_of(arrangement: Arrangement, row_id: int) -> list[list]:
    """The entries of ``row_id``, held in ``arrangement`` as a list."""
    entries = _entries(arrangement.get(row_id))
    arrangement[row_id] = entries
    return entries


def _apply_gate(spec: KernelSpec, rows: pa.Table, store: Any) -> tuple[pa.Table, dict[bytes, bytes | None]]:
    """A step of an operator that sees its changes with its stored state: per group, its
    state and changes through the kernel (the changes have ``_input``, ``_id``, the first
    input's payload by name, the others' as ``_<input>_<name>``, and ``_diff``)."""
    rows = rows.sort_by([("_gid", "ascending")])
    gid_column = rows.column("_gid").to_numpy()
    starts = [0, *(np.flatnonzero(gid_column[1:] != gid_column[:-1]) + 1).tolist()]
    gids = [int(gid_column[start]) for start in starts]
    keys = [_state_key(0, gid) for gid in gids]
    names = [name for name, _ in spec.payloads[0]]
    others = [f"_{i}_{name}" for i in range(1, len(spec.payloads)) for name, _ in spec.payloads[i]]
    rows = rows.select(["_input", ID, *[f"_0_{name}" for name in names], *others, DIFF])
    rows = rows.rename_columns(["_input", ID, *names, *others, DIFF])
    outputs, updates = [], {}
    for key, start, end, stored in zip(keys, starts, [*starts[1:], rows.num_rows], store.get_many(keys)):
        with failures_named(spec.where):
            out, state = spec.kernel(pickle.loads(stored) if stored is not None else None, rows.slice(start, end - start), spec.params)
        outputs.append(out)
        if stored is not None or state is not None:
            updates[key] = pickle.dumps(state, protocol=5) if state is not None else None
    out = pa.concat_tables(outputs)
    return consolidate(out.drop_columns([DIFF]), out.column(DIFF)), updates


def _apply_groups(spec: KernelSpec, rows: pa.Table, store: Any) -> tuple[pa.Table, dict[bytes, bytes | None]]:
    """A ``GroupsKernel``'s step: the stored states of the touched groups and their
    changes, through the kernel in one call."""
    gids = sorted(set(rows.column("_gid").to_pylist()))
    keys = [_state_key(0, gid) for gid in gids]
    states = {gid: pickle.loads(b) for gid, b in zip(gids, store.get_many(keys)) if b is not None}
    names = [name for name, _ in spec.payloads[0]]
    others = [f"_{i}_{name}" for i in range(1, len(spec.payloads)) for name, _ in spec.payloads[i]]
    changes = rows.select(["_gid", "_input", ID, *[f"_0_{name}" for name in names], *others, DIFF])
    changes = changes.rename_columns(["_gid", "_input", ID, *names, *others, DIFF])
    with failures_named(spec.where):
        out, changed = spec.kernel(states, changes, spec.params)
    updates = {
        _state_key(0, gid): pickle.dumps(state, protocol=5) if state is not None else None
        for gid, state in changed.items()
    }
    return consolidate(out.drop_columns([DIFF]), out.column(DIFF)), updates


def _entries(held: list | None) -> list[list]:
    """The entries held under one id (see ``Arrangement``)."""
    if held is None:
        return []
    return held if isinstance(held[0], list) else [held]


def _add_change(entries: list[list], values: tuple, diff: int, time: int) -> None:
    """Applies one change to the entries of its id: it counts for the entry of the same
    values.  A retraction whose values match none (a value computed again differently)
    retracts the earliest row of its id, as a retraction of a row by id does."""
    entry = next((e for e in entries if e[0] == values), None)
    if entry is None and diff < 0:
        entry = next((e for e in entries if e[1] > 0), None)
    if entry is None:
        entries.append([values, diff, time])
        return
    if diff > 0:
        entry[2] = time
    entry[1] += diff
    if entry[1] == 0:
        entries.remove(entry)


def _cancel_negative(arrangement: Arrangement) -> list[tuple[int, tuple, int, int]]:
    """(id, values, multiplicity, time) to compute with: a retraction of an id that was
    never inserted (a stream whose ids do not pair up) cancels a row of the same values
    under another id, as a multiset of values does in Pathway; what it cannot cancel is
    left out."""
    rows = [(row_id, *entry) for row_id, held in arrangement.items() for entry in _entries(held)]
    owed: collections.Counter = collections.Counter()
    for _, values, count, _ in rows:
        if count < 0:
            owed[repr(values)] -= count
    out = []
    for row_id, values, count, time in rows:
        cancelled = min(max(count, 0), owed[repr(values)]) if owed else 0
        if owed:
            owed[repr(values)] -= cancelled
        if count - cancelled > 0:
            out.append((row_id, values, count - cancelled, time))
    return out


# -- whole collections (pw.iterate) ----------------------------------------------------------

@dataclass(frozen=True)
class CollectionSpec:
    """A persistent collection of rows by (input, id), read whole at every step."""

    operator: str
    step: int | None  # as ``KernelSpec.step``
    location: StateLocation
    payloads: tuple[tuple[tuple[str, pa.DataType], ...], ...]  # per input: (name, type)
    #: False: the frames are changes, and the output is every row held after them;
    #: True: the frames are the whole new contents, and the output is what changed
    replace: bool
    output_schema: pa.Schema


def collection_step(
    frames: list[DataFrame], *, operator: str, step: int, time: int, location: StateLocation, partitions: int,
    replace: bool,
) -> DataFrame:
    """Every state partition runs, also those without input (they must say what they
    hold): so this costs in proportion to the whole collection, unlike ``keyed_step``.
    Output columns: ``_input``, ``_id``, each input's columns as ``_<input>_<name>``, ``_diff``."""
    tagged = []
    for index, frame in enumerate(frames):
        data = [col(c).alias(f"_{index}_{c}") for c in frame.columns if c not in (ID, DIFF)]
        tagged.append(frame.select(F.lit(index).alias("_input"), col(ID), col(DIFF), *data))
    spark = frames[0].sparkSession
    every_part = spark.range(partitions).select(
        F.lit(-1).alias("_input"), F.lit(None).cast("long").alias(ID), F.lit(0).cast("long").alias(DIFF),
        col("id").cast("long").alias("_part"),
    )
    union = functools.reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), tagged)
    union = union.withColumn("_part", F.pmod(col(ID), F.lit(partitions)))
    union = union.unionByName(every_part, allowMissingColumns=True)
    output = T.StructType([f for f in union.schema.fields if f.name != "_part"])
    schema = arrow_schema(output)
    payloads = tuple(
        tuple((c, schema.field(f"_{i}_{c}").type) for c in frame.columns if c not in (ID, DIFF))
        for i, frame in enumerate(frames)
    )
    spec = CollectionSpec(operator, None, location, payloads, replace, schema)
    routed = by_state_partition(union, partitions).drop(ROUTE)
    return map_in_arrow(routed, functools.partial(_collection_partitions, spec), output, (step, time))


def _collection_partitions(
    spec: CollectionSpec, batches: Iterator[pa.RecordBatch], step: tuple[int, int] | None,
) -> Iterator[pa.RecordBatch]:
    fault_point("kernel.started", spec.operator)
    spec = dataclasses.replace(spec, step=(step or task_step())[0])
    chunks = list(batches)
    if not chunks:
        return
    table = pa.Table.from_batches(chunks)
    for part in sorted(pc.unique(table.column("_part")).to_pylist()):
        rows = table.filter(pc.and_(pc.equal(table.column("_part"), part), pc.greater_equal(table.column("_input"), 0)))
        out = _apply_with_retry(spec, part, rows, apply=_apply_collection)
        yield from out.cast(spec.output_schema).to_batches()


def _apply_collection(spec: CollectionSpec, rows: pa.Table, store: Any) -> tuple[pa.Table, dict[bytes, bytes | None]]:
    held = {key: pickle.loads(value) for key, value in store.items()}  # key -> [values, multiplicity]
    given: dict[bytes, list] = {} if spec.replace else {k: list(v) for k, v in held.items()}
    for i, payload in enumerate(spec.payloads):
        changes = rows.filter(pc.equal(rows.column("_input"), i))
        columns = [changes.column(f"_{i}_{name}").to_pylist() for name, _ in payload]
        for row_id, diff, *values in zip(changes.column(ID).to_pylist(), changes.column(DIFF).to_pylist(), *columns):
            entry = given.setdefault(_state_key(i, row_id), [tuple(values), 0])
            if diff > 0:
                entry[0] = tuple(values)
            entry[1] += diff
    given = {k: v for k, v in given.items() if v[1] != 0}
    updates = {k: pickle.dumps(tuple(v), protocol=5) for k, v in given.items() if held.get(k) != tuple(v)}
    updates |= {k: None for k in held if k not in given}
    if not spec.replace:
        return _collection_rows(spec, [(k, v[0], v[1]) for k, v in given.items()]), updates
    changed = [(k, v[0], -v[1]) for k, v in held.items() if k in updates]
    changed += [(k, v[0], v[1]) for k, v in given.items() if k in updates]
    return _collection_rows(spec, changed), updates


def _collection_rows(spec: CollectionSpec, rows: list[tuple[bytes, tuple, int]]) -> pa.Table:
    """(state key, values, diff) as rows of the output schema."""
    keys = [struct.unpack(">Bq", key) for key, _, _ in rows]
    columns: dict[str, list] = {"_input": [i for i, _ in keys], ID: [row_id for _, row_id in keys]}
    columns[DIFF] = [diff for _, _, diff in rows]
    for i, payload in enumerate(spec.payloads):
        for j, (name, _) in enumerate(payload):
            columns[f"_{i}_{name}"] = [values[j] if k[0] == i else None for k, (_, values, _) in zip(keys, rows)]
    return pa.table({f.name: pa.array(columns[f.name], f.type) for f in spec.output_schema})
