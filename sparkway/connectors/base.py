"""What the step loop needs from a source and from a sink.

A source hands the engine *segments*: small JSON-able descriptions of input that is ready
(a new file, the appended bytes of a file, a deleted file...).  The step loop logs the
segments of a step before reading them, so that after a crash the same step can be read
again from its log, exactly.  Each segment is one input transaction.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkway.core.dtypes import DType
from sparkway.persistence.index import IndexedPosition
from sparkway.persistence.storage import BlobStorage

log = logging.getLogger("sparkway")

Segment = dict[str, Any]  # JSON-able


class Source(ABC):
    """An input connector.

    Life cycle, driven by the step loop:
      ``open(storage)`` once; ``restore(position)`` when a committed position exists;
      then repeatedly ``discover()`` → ``read(segments)`` → ``advance(segments)``;
      ``committed_position()`` is saved with every committed step.
    """

    #: the persistent id; set by the constructor (explicit) or by the plan (generated)
    name: str | None = None
    columns: dict[str, DType]
    #: columns whose values make the row ids (a primary key).  The engine computes those
    #: ids with the function ``pointer_from`` uses, so the ``_id`` that ``read()`` gives
    #: such rows is not used.  Empty: ``read()`` gives the ids.
    key_columns: list[str] = []
    #: creation order among the program's sources (unnamed sources are numbered by it)
    sequence: int = 0
    #: set by the step loop; a source that gets input between polls may set it to be read sooner
    wakeup: threading.Event | None = None
    #: the kind of connector in log lines, as in the seeds' logs
    connector_label: str = "Reader"
    #: whether the source only ever inserts rows (``Table.is_append_only``)
    append_only: bool = False
    #: set by the step loop before ``open`` in a run keeping Error values: a value that
    #: does not fit its column is then an Error value, and ``read()`` gives ``ERRORS`` and
    #: ``LOGGED`` columns too (``core.changes.error_fields``; a change with ``_diff`` 0
    #: only logs its messages); else such a row is skipped, with a logged error
    keep_errors: bool = False
    #: whether the table it feeds is an input table of a connector, which an input
    #: synchronization group may hold back (not the rows of ``pw.debug`` or of a clock)
    synchronizable: bool = True
    #: set by ``pw.io.register_input_synchronization_group``
    synchronization: "Synchronization | None" = None
    #: "static": what exists when the run starts, then the source is finished (and its
    #: input finite: ``bounded``); "streaming": new input for as long as the run lasts
    mode: str = "streaming"
    #: set by a static source once it has given all its segments (``is_finished``)
    _finished: bool = False

    @property
    def label(self) -> str:
        """The prefix of this source's log lines, e.g. ``CsvFilesystemReader-logs``."""
        return f"{self.connector_label}-{self.name}"

    def open(self, storage: BlobStorage | None) -> None:
        """Called before anything else.  ``storage`` is where this source may keep
        what it must remember across runs (rows it will have to retract); None when the
        run is not persistent, in which case the source keeps that in memory."""

    @abstractmethod
    def discover(self) -> list[Segment]:
        """Segments ready to be read now, in order, not yet advanced past.  Must not
        change the source's position: a step may be abandoned after this call."""

    @abstractmethod
    def read(self, segments: list[Segment]) -> pa.Table:
        """The changes the segments carry: an Arrow table ``_id, <columns>, _diff``
        (``core.changes.arrow_schema``).  Reading the same segments again must give the
        same rows and ids."""

    def read_on_executors(self, segments: list[Segment]) -> "ExecutorRead | None":
        """A way to read these segments in Spark's tasks instead of this process (large
        input: parsing is spread over the executors, and the driver holds none of it);
        None, the default, to ``read`` them here."""
        return None

    def inserts_distinct_rows(self, segments: list[Segment]) -> bool:
        """Whether the changes of ``segments`` are all insertions, of distinct ids (a
        large step then writes its sinks without spreading their changes by id first)."""
        return False

    def read_transactions(self, segments: list[Segment]) -> list[pa.Table]:
        """The changes of the segments, one table per input transaction (rows that
        must reach the engine at one time); together they are ``read(segments)``.  The
        step loop reads a synchronized source this way, so that it can hold a
        transaction back without splitting it."""
        return [self.read([segment]) for segment in segments]

    @abstractmethod
    def advance(self, segments: list[Segment]) -> None:
        """Move the position past the segments (they were committed)."""

    @abstractmethod
    def position(self) -> dict[str, Any]:
        """A JSON-able position: what has been read."""

    def committed_position(self) -> "dict[str, Any] | IndexedPosition":
        """What a step's commit stores: ``position()``, or, for a position that grows
        with the input's history (an entry per file read), an ``IndexedPosition`` with
        the entries changed since the last call, so that a commit writes what its step
        changed (``persistence/index.py``).  Called once per committed step."""
        return self.position()

    @abstractmethod
    def restore(self, position: dict[str, Any]) -> None:
        """Continue from a position returned by ``position()`` in an earlier run."""

    def time_of(self, segments: list[Segment]) -> int | None:
        """The time these segments were given at, when the input names one (``pw.debug``
        tables' ``__time__``); None for input that just arrives."""
        return None

    def due_in(self) -> float | None:
        """Seconds until this source will have input, when it knows (a clock); the step
        loop waits no longer than that.  None: it does not know."""
        return None

    @property
    def is_finished(self) -> bool:
        """True when the source will never have another segment (static mode, read)."""
        return self._finished

    def read_to_end(self, segments: list[Segment]) -> bool:
        """Whether no segment will follow ``segments`` (a bounded source with nothing
        else left); False when the source cannot tell."""
        return self.is_finished and not segments

    @property
    def bounded(self) -> bool:
        """True when the input is finite by construction (static mode), so that a table
        made only from such sources can be computed before ``pw.run`` (``Table.plot``)."""
        return self.mode == "static"

    def planned_bytes(self) -> int:
        """About how many bytes the run will read from this source, as known before
        Spark starts (0: unknown): a large batch gets a JVM that compiles for speed."""
        return 0

    def close(self) -> None:
        """Release resources at the end of the run."""


@dataclass(frozen=True)
class ExecutorRead:
    """Segments read by Spark's tasks: ``read(piece)`` (picklable, run in a task) gives
    a piece's changes, of ``schema``, and the rows it skipped by file (they did not
    parse), which the driver gives to ``skipped`` summed over the pieces; together the
    pieces' changes are what ``read`` would give.  Reading a piece again gives the same
    rows and ids.  ``reachable`` (picklable, run in a task) tells whether a task sees
    the input, for executors that may not (a Spark Connect server's); None: never
    read on those."""

    pieces: list[Segment]
    read: Callable[[Segment], tuple[pa.Table, dict[str, int]]]
    schema: pa.Schema
    skipped: Callable[[dict[str, int]], None]
    input_bytes: int = 0  # of the files the pieces read: the step's size
    reachable: Callable[[], bool] | None = None


@dataclass(frozen=True)
class Synchronization:
    """A source's place in an input synchronization group: the engine reads its rows so
    that the largest ``column`` value read from any source of ``group`` stays within
    ``max_difference`` of the others' (``pw.io.register_input_synchronization_group``).

    Values are compared as the engine holds them: ints, or nanoseconds for date-times and
    durations (``max_difference`` too).  A source of higher ``priority`` is read ahead
    of those of lower priority; a source without input for ``idle_duration_s`` seconds
    (None: never) holds nobody back until it has input again.
    """

    group: str
    column: str
    max_difference: int
    priority: int = 0
    idle_duration_s: float | None = None


def record_ids(source: str, file: str, ordinals: Sequence[int]) -> np.ndarray:
    """The row ids of rows without primary key: their source, file and ordinal in the
    file (the line number where the record starts, for line formats): a 64-bit mix
    (splitmix64's finalizer, a bijection) of the ordinal plus a hash of source and file,
    so the rows of one file never share an id.

    >>> bool(record_ids("logs", "a.csv", [2, 3])[1] == record_ids("logs", "a.csv", [3])[0])
    True
    """
    base = hashlib.blake2b(b"row\0" + json.dumps([source, file]).encode(), digest_size=8).digest()
    with np.errstate(over="ignore"):
        x = np.asarray(ordinals, dtype=np.uint64) + np.uint64(int.from_bytes(base, "little"))
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return (x ^ (x >> np.uint64(31))).view(np.int64)


def data_file_changes(source: Source, arrays: list[pa.Array], count: int, file: str, diff: int) -> pa.Table:
    """The changes (all of sign ``diff``) of a table source's data file (Delta Lake,
    Iceberg), given its ``count`` rows' values (``arrays``, one per column of ``source.columns``):
    a row holding a null in a column that may not hold None is skipped, with a warning;
    ids come from the key (the engine makes them) or from the file (``file``, as ids
    name it) and the row's place in it."""
    valid = np.ones(count, dtype=bool)
    for array, dtype in zip(arrays, source.columns.values()):
        if not dtype.optional and array.null_count:
            valid &= ~np.asarray(array.is_null())
    ordinals = np.arange(count)
    if not valid.all():
        log.warning("%s: %d rows of %r are skipped: a column that may not hold None holds a null",
                    source.label, int((~valid).sum()), file)
        keep = pa.array(valid)
        arrays = [a.filter(keep) for a in arrays]
        ordinals = ordinals[valid]
    if source.key_columns:
        ids = pa.array(np.zeros(len(ordinals), dtype=np.int64))  # made from the key by the engine
    else:
        ids = pa.array(record_ids(source.name or "", file, ordinals))
    diffs = pa.array(np.full(len(ordinals), diff, dtype=np.int64))
    return pa.Table.from_arrays([ids, *arrays, diffs], schema=source.arrow_schema)



#: the layouts of a table sink that can keep either (PostgreSQL, SQLite, Delta Lake,
#: Iceberg, Spark tables): every change as a row with its ``META_COLUMNS``, or the live
#: rows (keyed by ``_id`` where the table has no key of its own), as in Pathway
STREAM_OF_CHANGES = "stream_of_changes"
SNAPSHOT = "snapshot"
META_COLUMNS = ("time", "diff")
ID_COLUMN = "_id"


@dataclass
class OutputBatch:
    """Changes of one table at one time: each row's columns and its diff (+1 or -1).

    The diffs (and the time, the same for every row) are kept apart from the columns, so
    that a table may have columns named ``time`` or ``diff`` too."""

    table: pa.Table  # the output table's columns
    time: int
    diffs: pa.Array  # int64, per row
    ids: pa.Array | None = None  # the row ids, for sinks that report them (subscribe)
    #: per row, the names of its columns holding an Error value, for sinks that
    #: ``keeps_errors`` in a run with ``terminate_on_error=False``
    errors: pa.Array | None = None
    #: the changes of the last step, after every source ended (rows held back until the
    #: end, e.g. by ``Table.buffer``): Pathway gives them its time 18446744073709551614
    end_of_input: bool = False

    def slice(self, start: int, length: int) -> "OutputBatch":
        """The changes of rows ``start`` to ``start + length``."""
        def part(array: pa.Array | None) -> pa.Array | None:
            return None if array is None else array.slice(start, length)

        return replace(self, table=self.table.slice(start, length), diffs=part(self.diffs), ids=part(self.ids),
                       errors=part(self.errors))

    def sorted_by(self, columns: list[str]) -> "OutputBatch":
        """The same changes in the order of ``columns``' values (None last), for the
        sinks' ``sort_by``; ties keep their order."""
        if not columns or self.table.num_rows < 2:
            return self
        order = pc.sort_indices(self.table.select(columns), sort_keys=[(c, "ascending") for c in columns])
        ids = None if self.ids is None else self.ids.take(order)
        errors = None if self.errors is None else self.errors.take(order)
        return replace(self, table=self.table.take(order), diffs=self.diffs.take(order), ids=ids, errors=errors)

    def last_change_per_id(self) -> "OutputBatch":
        """One change per row id, what a snapshot sink applies: the id's insertion if it
        has one (a new row, or an update's new values), else its retraction (a deleted
        row).  Needs ``ids``.

        >>> batch = OutputBatch(pa.table({"v": [1, 9, 2]}), 4, pa.array([-1, 1, -1]), ids=pa.array([7, 7, 8]))
        >>> last = batch.last_change_per_id()
        >>> last.ids.to_pylist(), last.table.column("v").to_pylist(), last.diffs.to_pylist()
        ([7, 8], [9, 2], [1, -1])
        """
        assert self.ids is not None, "the changes have no row ids"
        ids = self.ids.to_numpy(zero_copy_only=False)
        diffs = self.diffs.to_numpy(zero_copy_only=False)
        order = np.lexsort((diffs, ids))  # by id, and within an id the retraction first
        last = np.ones(len(order), dtype=bool)
        last[:-1] = ids[order][1:] != ids[order][:-1]
        chosen = pa.array(order[last])
        errors = None if self.errors is None else self.errors.take(chosen)
        return replace(self, table=self.table.take(chosen), diffs=self.diffs.take(chosen),
                       ids=self.ids.take(chosen), errors=errors)


class Sink(ABC):
    """An output connector: receives every time's consolidated changes, in time order."""

    name: str = "sink"
    #: the order of the changes of one time (by these columns' values), set from the
    #: writer's ``sort_by``; the step loop sorts each batch before ``write``
    sort_by: list[str] = []
    #: receives rows with Error values (``OutputBatch.errors``); other sinks skip them
    keeps_errors: bool = False

    @property
    def label(self) -> str:
        """How the live view and ``/status`` name this output, e.g. ``out.csv``."""
        return self.name

    def open(self) -> None:
        """Called once, before the first batch."""

    @abstractmethod
    def write(self, batch: OutputBatch) -> None:
        """Write one time's changes (possibly none) and make them durable."""

    def close(self) -> None:
        """Called once at a graceful end."""

    def piece_writer(self) -> "PieceWriter | None":
        """The work on one time's changes that Spark's tasks may do for this sink, a
        piece at a time (``PieceSink``); None: the driver gives it each time whole."""
        return None


@dataclass(frozen=True)
class Piece:
    """What a ``PieceWriter`` made of a piece of one time's changes: its rows, and the
    bytes the driver needs: the rows formatted (a single file's lines), or a receipt
    naming the files written."""

    rows: int
    data: bytes


class PieceWriter(ABC):
    """The part of a sink's work that Spark's tasks do where the changes are, a piece
    of one time's changes per task (all the changes of an id in one piece, consolidated),
    so that the driver only does what must happen in one place (appending bytes to one
    file, committing files).  Picklable: it holds settings, never an open file."""

    #: writes files where it runs (a directory sink), which the driver then commits:
    #: attached to a Spark Connect server, whose executors may not see the program's
    #: folders, the driver does the work itself
    writes_files: bool = False

    @abstractmethod
    def write_piece(self, batch: OutputBatch) -> Piece:
        """Does the work for these changes (one time's, or a piece of them)."""


class PieceSink(Sink):
    """A sink whose time's changes can be done in pieces: ``piece_writer().write_piece``
    where the changes are (a Spark task, or the driver), then on the driver
    ``take_piece`` for each piece, in order, and ``end_time`` once, also when a time has
    no piece.  ``write`` does all three for a time given whole."""

    @abstractmethod
    def piece_writer(self) -> PieceWriter:
        ...

    @abstractmethod
    def take_piece(self, time: int, piece: Piece) -> None:
        """On the driver: a piece's work is done; append its bytes, or keep its files."""

    def end_time(self, time: int) -> None:
        """On the driver: every piece of ``time`` was taken; make them durable (commit)."""

    def write(self, batch: OutputBatch) -> None:
        if batch.table.num_rows:
            self.take_piece(batch.time, self.piece_writer().write_piece(batch))
        self.end_time(batch.time)
