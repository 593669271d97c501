"""Input written by Python code: a ``ConnectorSubject`` pushes rows, the step loop reads them.

The subject runs in a thread of its own.  Rows it emits between two ``commit()`` calls
form one transaction; a committed transaction becomes a *batch* with a sequence number,
and a segment names one batch.  When the run is persistent, a batch is written to the
source's storage before ``commit()`` returns, because the subject's own input usually
cannot be read again: a step logged with that batch can then be replayed after a crash,
and a batch committed but not yet in a step is picked up by the next run.
"""

from __future__ import annotations

import datetime
import enum
import json
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkway.connectors.base import Segment, Source, record_ids
from sparkway.connectors.formats.values import RowError, json_converter, pathway_type_name, stored_default
from sparkway.core import changes
from sparkway.core.columns import Column
from sparkway.core.dtypes import BOOL, DATE_TIME_NAIVE, DATE_TIME_UTC, DType, from_python
from sparkway.errors import ConnectorError, InputDataError, PersistenceError, PlanError
from sparkway.persistence.storage import BlobStorage

log = logging.getLogger("sparkway")


class SessionType(enum.Enum):
    """How a subject's rows change the table (a subject's ``_session_type``):
    ``NATIVE``, each row is inserted (``_add``) or deleted (``_remove``) as given;
    ``UPSERT``, a row replaces the row of its primary key, and ``_remove`` deletes the
    row of its key."""

    NATIVE = 0
    UPSERT = 1


class ConnectorSubject:
    """Base class of Python input: subclass it, implement ``run()`` and call ``next()``.

    ``run()`` is called in a thread of its own once the computation starts; the source
    closes when it returns (or when it calls ``close()``).  Rows emitted between two
    ``commit()`` calls reach the outputs at one time, together; without ``commit()``
    they are committed every ``autocommit_duration_ms`` (see ``pw.io.python.read``).

    >>> import sparkway as pw
    >>> class Numbers(pw.io.python.ConnectorSubject):
    ...     def run(self):
    ...         for n in range(3):
    ...             self.next(n=n)
    ...         self.commit()
    >>> class S(pw.Schema):
    ...     n: int
    >>> sorted(pw.debug.table_to_pandas(pw.io.python.read(Numbers(), schema=S))["n"])
    [0, 1, 2]
    """

    _channel: "PythonSource | None" = None

    def __init__(self, datasource_name: str = "python", *, session_type: str = "native") -> None:
        self.datasource_name = datasource_name
        if session_type not in ("native", "upsert"):
            raise ValueError(f"invalid session_type {session_type!r}: expected 'native' or 'upsert'")
        self._session_type_value = SessionType[session_type.upper()]

    def run(self) -> None:
        """Produces the input; override it."""
        raise NotImplementedError("a ConnectorSubject must implement run()")

    def on_stop(self) -> None:
        """Called when the computation stops before the subject finished (e.g. on SIGINT)."""

    def next(self, **fields: Any) -> None:
        """Emits one row, given as Python values by column name."""
        self._source().add(fields, parse_json=False)

    def next_json(self, message: dict[str, Any]) -> None:
        """Emits one row given as a JSON object: values are parsed as if read from JSON."""
        self._source().add(message, parse_json=True)

    def next_str(self, message: str) -> None:
        """Emits a row of the one-column (``data``) table."""
        self._source().add_single(message)

    def next_bytes(self, message: bytes) -> None:
        """Emits a row of the one-column (``data``) table."""
        self._source().add_single(message)

    def delete(self, **fields: Any) -> None:
        """Deletes a row emitted before, given by its values (its primary key's at least):
        in an upsert session (``session_type="upsert"``) the row of its primary key, else
        the row with these values, which must have been emitted once."""
        self._source().add(fields, parse_json=False, diff=-1)

    def _add(self, key: Any, message: bytes | str) -> None:
        """Emits a row given as a message in the source's ``format`` (``json``: an object;
        else the value of the one column).  ``key`` is not used: ids come from the
        schema's primary key, or from the row's place in its transaction."""
        self._source().add_message(message, diff=1)

    def _remove(self, key: Any, message: bytes | str) -> None:
        """Deletes the row given as a message (see ``_add``); in an upsert session, the
        row of its primary key."""
        self._source().add_message(message, diff=-1)

    @property
    def _session_type(self) -> SessionType:
        # a subclass that does not call __init__ has a native session
        return getattr(self, "_session_type_value", SessionType.NATIVE)

    @property
    def _deletions_enabled(self) -> bool:
        return True

    def commit(self) -> None:
        """Ends the current transaction: its rows reach the outputs together."""
        self._source().commit()

    def close(self) -> None:
        """Ends the input: commits what is pending; no more rows may follow."""
        self._source().close_input()

    def _source(self) -> "PythonSource":
        if self._channel is None:
            raise PlanError("this subject is not connected: pass it to pw.io.python.read(...) and call pw.run()")
        return self._channel


class PythonSource(Source):
    """Batches committed by a ``ConnectorSubject``; positions are batch numbers."""

    connector_label = "PythonReader"

    def __init__(self, subject: ConnectorSubject, schema: dict[str, Column], *,
                 autocommit_duration_ms: int | None, name: str | None, message_format: str = "json") -> None:
        self.subject = subject
        self.schema = schema
        self.message_format = message_format
        #: an upsert session: the rows are a stream of upserts and deletions (the
        #: ``UPSERT_FLAG`` column tells them apart), which ``stream_to_table`` reads
        self.upserts = subject._session_type == SessionType.UPSERT
        self.columns: dict[str, DType] = {c: col.dtype for c, col in schema.items()}
        if self.upserts:
            self.columns[UPSERT_FLAG] = BOOL
        self.name = name
        self.autocommit_s = None if autocommit_duration_ms is None else autocommit_duration_ms / 1000
        self.key_columns = [c for c, col in schema.items() if col.primary_key]
        self.arrow_schema = changes.arrow_schema(self.columns)
        self._python_converters = {c: _python_converter(d) for c, d in self.columns.items()}
        self._json_converters = {c: json_converter(d) for c, d in self.columns.items()}
        self._lock = threading.Lock()
        self.open(None)

    # ------------------------------------------------------------------ life cycle

    def open(self, storage: BlobStorage | None) -> None:
        self._storage = storage
        self._rows: list[_Row] = []  # the open transaction
        self._opened_at: float | None = None
        self._batches: dict[int, pa.Table | None] = {}  # committed, not advanced past; None = in storage
        self._next_batch = 0  # the first batch not advanced past
        self._sequence = 0  # the number the next committed batch gets
        self._stored_from = 0  # stored batches below this one are deleted
        self._thread: threading.Thread | None = None
        self._input_closed = False
        self._error: BaseException | None = None
        self._announced_end = False

    def position(self) -> dict[str, Any]:
        return {"next_batch": self._next_batch}

    def restore(self, position: dict[str, Any]) -> None:
        self._next_batch = self._sequence = self._stored_from = position["next_batch"]

    @property
    def is_finished(self) -> bool:
        with self._lock:
            finished = self._input_closed and not self._rows and not self._batches
        if finished and not self._announced_end:
            self._announced_end = True
            log.warning("%s: Closing the data source", self.label)
        return finished

    def close(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            self.subject.on_stop()
        self.subject._channel = None

    # ----------------------------------------------------------- the subject's side

    def add(self, fields: dict[str, Any], *, parse_json: bool, diff: int = 1) -> None:
        """A row the subject emitted.  A value that does not fit its column is an Error
        value keeping Error values (a row whose primary key does not fit is left out),
        else its row is skipped; either way the error is logged, as Pathway does."""
        converters = self._json_converters if parse_json else self._python_converters
        values, failed, messages = [], [], []
        for name in self.schema:
            try:
                values.append(self._value(fields, name, converters[name], parse_json))
            except _ValueFailure as failure:
                values.append(None)
                failed.append(name)
                messages.append(str(failure))
        if messages and not self.keep_errors:
            log.error("%s: parse error: %s; row skipped", self.label, messages[0])
            return
        in_key = [m for name, m in zip(failed, messages) if name in self.key_columns]
        if self.upserts:  # an upsert session's rows are events, inserted: the flag says upsert or deletion
            values, diff = [*values, diff > 0], 1
        row = _Row(values, failed, messages, diff=diff)
        if in_key:  # left out, only logged
            row = _Row(values, [], [f"error in primary key, skipping the row: {in_key[0]}"], logs_only=True)
        with self._lock:
            if self._input_closed:
                raise PlanError("the subject emitted a row after close()")
            if not self._rows:
                self._opened_at = time.monotonic()
            self._rows.append(row)

    def add_single(self, value: Any, diff: int = 1) -> None:
        if len(self.schema) != 1:
            raise PlanError(f"next_str/next_bytes need a one-column schema; this one has {list(self.schema)}")
        self.add({next(iter(self.schema)): value}, parse_json=False, diff=diff)

    def add_message(self, message: bytes | str, diff: int) -> None:
        """A row given as a message in the source's format (``_add``/``_remove``)."""
        if self.message_format == "json":
            fields = json.loads(message)
            if not isinstance(fields, dict):
                raise InputDataError(f"{self.label}: a JSON message must be an object, got {message!r}")
            self.add(fields, parse_json=True, diff=diff)
        elif self.message_format == "plaintext" and isinstance(message, bytes):
            self.add_single(message.decode("utf-8"), diff=diff)
        else:
            self.add_single(message, diff=diff)

    def _value(self, fields: dict[str, Any], name: str, convert: Any, parsed_json: bool) -> Any:
        column = self.schema[name]
        if name not in fields:
            if column.has_default:
                return stored_default(column)
            if column.dtype.optional:
                return None
            raise _ValueFailure(f'no value for "{name}" field and no default specified')
        try:
            return convert(fields[name])
        except (RowError, TypeError, ValueError) as exc:
            kind = pathway_type_name(column.dtype)
            if parsed_json:
                raise _ValueFailure(
                    f'failed to create a field "{name}" with type {kind} from json payload: {json.dumps(fields[name])}'
                ) from exc
            raise _ValueFailure(
                f'cannot create a field "{name}" with type {kind} from value {fields[name]}. '
                f"Original error: {type(exc).__name__}: {exc}"
            ) from exc

    def commit(self) -> None:
        with self._lock:
            self._seal()
        self._notify()

    def close_input(self) -> None:
        with self._lock:
            self._seal()
            self._input_closed = True
        self._notify()

    def _seal(self) -> None:
        """Turns the open transaction into a batch (the lock is held)."""
        if not self._rows:
            return
        number = self._sequence
        table = self._table(number, self._rows)
        if self._storage is not None:
            # durable before commit() returns: the subject may acknowledge its own input
            self._storage.write_arrow(_batch_file(number), table)
        self._batches[number] = table
        self._sequence += 1
        self._rows, self._opened_at = [], None

    def _table(self, number: int, rows: list["_Row"]) -> pa.Table:
        columns = list(zip(*(row.values for row in rows)))
        ids = record_ids(self.name or "", f"batch-{number}", range(len(rows)))
        if self.key_columns:  # made from the key by the engine (Source.key_columns), but for a row that only logs
            ids = [i if row.logs_only else 0 for i, row in zip(ids, rows)]
        arrays = [pa.array(ids, pa.int64())]
        arrays += [pa.array(list(values), d.arrow_type()) for values, d in zip(columns, self.columns.values())]
        arrays.append(pa.array([0 if row.logs_only else row.diff for row in rows], pa.int64()))
        if self.keep_errors:
            arrays.append(pa.array([row.failed or None for row in rows], pa.list_(pa.string())))
            arrays.append(pa.array([row.messages or None for row in rows], pa.list_(pa.string())))
        return pa.Table.from_arrays(arrays, schema=self._output_schema())

    def _output_schema(self) -> pa.Schema:
        """What ``read`` gives: the changes, and keeping Error values their columns."""
        if not self.keep_errors:
            return self.arrow_schema
        return pa.schema([*self.arrow_schema, *changes.error_fields()])

    def _notify(self) -> None:
        if self.wakeup is not None:
            self.wakeup.set()

    # -------------------------------------------------------- the step loop's side

    def discover(self) -> list[Segment]:
        self._start()
        if self._error is not None:
            raise ConnectorError(f"{self.label}: the subject's run() failed: {self._error!r}") from self._error
        with self._lock:
            due = self._opened_at is not None and self.autocommit_s is not None
            if due and time.monotonic() - self._opened_at >= self.autocommit_s:
                self._seal()
            # every transaction committed since the last step goes into the next one: a
            # step costs a Spark job, so a time per commit (Pathway's) would leave a subject
            # that commits often ever further behind
            return [{"batch": b} for b in sorted(self._batches) if b >= self._next_batch]

    def read(self, segments: list[Segment]) -> pa.Table:
        parts = [self._batch(s["batch"]) for s in segments]
        rows = pa.concat_tables(parts) if parts else self._output_schema().empty_table()
        return _last_per_key(rows, self.key_columns) if self.upserts else rows

    def read_transactions(self, segments: list[Segment]) -> list[pa.Table]:
        # an upsert session's events of one step are reduced to the last one per key,
        # which needs the step's batches together
        if self.upserts:
            return [self.read(segments)] if segments else []
        return super().read_transactions(segments)

    def _batch(self, number: int) -> pa.Table:
        with self._lock:
            table = self._batches.get(number)
        if table is not None:
            return table
        if self._storage is None:
            raise PersistenceError(f"{self.label}: batch {number} is gone")
        return changes.conform(self._storage.read_arrow(_batch_file(number)), self._output_schema())

    def advance(self, segments: list[Segment]) -> None:
        if not segments:
            return
        done = max(s["batch"] for s in segments) + 1
        with self._lock:
            for number in [b for b in self._batches if b < done]:
                del self._batches[number]
        # batches of the previous step are in a committed step now; this step's may
        # still be replayed if the process dies before its commit
        self._delete_stored(below=self._next_batch)
        self._next_batch = max(self._next_batch, done)

    def _delete_stored(self, below: int) -> None:
        if self._storage is not None:
            for number in range(self._stored_from, below):
                self._storage.delete(_batch_file(number))
        self._stored_from = max(self._stored_from, below)

    def _start(self) -> None:
        if self._thread is not None:
            return
        self._pick_up_stored_batches()
        self.subject._channel = self
        self._thread = threading.Thread(target=self._run_subject, name=f"subject-{self.name}", daemon=True)
        self._thread.start()

    def _pick_up_stored_batches(self) -> None:
        """Batches a previous run committed but did not process yet come first."""
        if self._storage is None:
            return
        stored = [int(f.split(".")[0]) for f in self._storage.list("batches") if f.endswith(".arrow")]
        self._stored_from = min(stored, default=self._stored_from)
        self._delete_stored(below=self._next_batch)
        pending = [b for b in stored if b >= self._next_batch]
        for number in pending:
            self._batches[number] = None
        # a number must never be given twice: the replay of an interrupted step may have
        # advanced past every stored batch, and a stored batch file may be left over
        self._sequence = max([self._sequence, self._next_batch, *(b + 1 for b in stored)])
        if pending:
            log.info("%s: %d batch(es) committed by the subject in the previous run will be processed first",
                     self.label, len(pending))

    def _run_subject(self) -> None:
        try:
            self.subject.run()
        except BaseException as exc:  # reported by the step loop, in the main thread
            self._error = exc
        finally:
            self.close_input()


#: the column of an upsert session's rows saying whether a row is an upsert or a deletion
UPSERT_FLAG = "_pw_upsert"


def _last_per_key(rows: pa.Table, keys: list[str]) -> pa.Table:
    """An upsert session's events of one step: the last one of each key (the engine
    cannot tell the order of two events of one id within a step)."""
    if rows.num_rows == 0:
        return rows
    numbered = rows.append_column("_pw_order", pa.array(range(rows.num_rows), pa.int64()))
    last = numbered.group_by(keys, use_threads=False).aggregate([("_pw_order", "max")])
    positions = last.column("_pw_order_max").combine_chunks()
    return rows.take(pc.take(positions, pc.sort_indices(positions)))


def _batch_file(number: int) -> str:
    return f"batches/{number:012d}.arrow"


class _ValueFailure(Exception):
    """A value of a row that does not fit its column; the message is Pathway's."""


@dataclass
class _Row:
    """A row the subject emitted: its stored values, the columns whose value is an
    Error and the errors to log; ``logs_only``: the row is left out, its errors logged."""

    values: list[Any]
    failed: list[str]
    messages: list[str]
    logs_only: bool = False
    diff: int = 1  # -1: a deletion (``_remove``)


def _python_converter(dtype: DType) -> Any:
    """``from_python``, with Pathway's checks of date-times' time zones."""
    convert = from_python(dtype)
    kind = dtype.with_optional(False)
    if kind not in (DATE_TIME_NAIVE, DATE_TIME_UTC):
        return convert
    zoned = kind == DATE_TIME_UTC
    this, other = ("DateTimeUtc", "DateTimeNaive") if zoned else ("DateTimeNaive", "DateTimeUtc")
    having, wanted = ("without", "with") if zoned else ("with", "without")

    def checked(value: Any) -> Any:
        if isinstance(value, datetime.datetime) and (value.tzinfo is not None) != zoned:
            raise ValueError(
                f"cannot create {this} from a datetime {having} timezone information. Pass a datetime "
                f"{wanted} timezone information or change the type to {other}"
            )
        return convert(value)
    return checked

