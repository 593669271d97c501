"""Input written by Python code: a ``ConnectorSubject`` pushes rows, the step loop reads them.

The subject runs in a thread of its own.  Rows it emits between two ``commit()`` calls
form one transaction; a committed transaction becomes a *batch* with a sequence number,
and a segment names one batch.  When the run is persistent, a batch is written to the
source's storage before ``commit()`` returns, because the subject's own input usually
cannot be read again: a step logged with that batch can then be replayed after a crash,
and a batch committed but not yet in a step is picked up by the next run.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pyarrow as pa

from sparkway.connectors.base import Segment, Source, record_ids
from sparkway.connectors.formats.values import RowError, json_converter, stored_default
from sparkway.core import changes
from sparkway.core.columns import Column
from sparkway.core.dtypes import DType, from_python
from sparkway.errors import ConnectorError, InputDataError, PersistenceError, PlanError
from sparkway.persistence.storage import BlobStorage

log = logging.getLogger("sparkway")


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

    def __init__(self, datasource_name: str = "python") -> None:
        self.datasource_name = datasource_name

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
                 autocommit_duration_ms: int | None, name: str | None) -> None:
        self.subject = subject
        self.schema = schema
        self.columns: dict[str, DType] = {c: col.dtype for c, col in schema.items()}
        self.name = name
        self.autocommit_s = None if autocommit_duration_ms is None else autocommit_duration_ms / 1000
        self.key_columns = [c for c, col in schema.items() if col.primary_key]
        self.arrow_schema = changes.arrow_schema(self.columns)
        self._python_converters = {c: from_python(d) for c, d in self.columns.items()}
        self._json_converters = {c: json_converter(d) for c, d in self.columns.items()}
        self._lock = threading.Lock()
        self.open(None)

    # ------------------------------------------------------------------ life cycle

    def open(self, storage: BlobStorage | None) -> None:
        self._storage = storage
        self._rows: list[list[Any]] = []  # the open transaction
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

    def add(self, fields: dict[str, Any], *, parse_json: bool) -> None:
        converters = self._json_converters if parse_json else self._python_converters
        row = [self._value(fields, c, converters[c]) for c in self.schema]
        with self._lock:
            if self._input_closed:
                raise PlanError("the subject emitted a row after close()")
            if not self._rows:
                self._opened_at = time.monotonic()
            self._rows.append(row)

    def add_single(self, value: Any) -> None:
        if len(self.schema) != 1:
            raise PlanError(f"next_str/next_bytes need a one-column schema; this one has {list(self.schema)}")
        self.add({next(iter(self.schema)): value}, parse_json=False)

    def _value(self, fields: dict[str, Any], name: str, convert: Any) -> Any:
        column = self.schema[name]
        if name not in fields:
            if column.has_default:
                return stored_default(column)
            if column.dtype.optional:
                return None
            raise InputDataError(f"the subject emitted a row without column {name!r}: {fields!r}")
        try:
            return convert(fields[name])
        except (RowError, TypeError, ValueError) as exc:
            raise InputDataError(f"the subject emitted {name}={fields[name]!r}, which does not fit {column.dtype}: {exc}") from exc

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

    def _table(self, number: int, rows: list[list[Any]]) -> pa.Table:
        columns = list(zip(*rows))
        if self.key_columns:
            ids = [0] * len(rows)  # made from the key by the engine (Source.key_columns)
        else:
            ids = record_ids(self.name or "", f"batch-{number}", range(len(rows)))
        arrays = [pa.array(ids, pa.int64())]
        arrays += [pa.array(list(values), d.arrow_type()) for values, d in zip(columns, self.columns.values())]
        arrays.append(pa.array([1] * len(rows), pa.int64()))
        return pa.Table.from_arrays(arrays, schema=self.arrow_schema)

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
            return [{"batch": b} for b in sorted(self._batches) if b >= self._next_batch]

    def read(self, segments: list[Segment]) -> pa.Table:
        parts = [self._batch(s["batch"]) for s in segments]
        return pa.concat_tables(parts) if parts else self.arrow_schema.empty_table()

    def _batch(self, number: int) -> pa.Table:
        with self._lock:
            table = self._batches.get(number)
        if table is not None:
            return table
        if self._storage is None:
            raise PersistenceError(f"{self.label}: batch {number} is gone")
        return self._storage.read_arrow(_batch_file(number))

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


def _batch_file(number: int) -> str:
    return f"batches/{number:012d}.arrow"

