"""File sinks: ``CsvSink``, ``JsonLinesSink``, ``ParquetSink`` and ``NullSink``.

A large time's changes come in pieces, which Spark's tasks format (or, for Parquet,
write as files): the driver only appends the pieces' bytes in order, or renames their
files (``PieceSink``).  A time's lines are flushed and fsynced before its step commits.

Values are written as Pathway 0.33 writes them (unless said otherwise):

* CSV: every field quoted (inner quotes doubled), the header's too; the text of a field:
* str: the text; JSON string
* int, bool: ``12``, ``True``/``False``; JSON numbers, booleans
* float: as Pathway prints floats (``2.5``, ``1e20``); JSON numbers (NaN and infinities: null)
* None: CSV ``None``; JSON ``null``
* Json (declared in ``dtypes``): its compact JSON text; JSON the value itself
* bytes: base64 text
* DateTimeNaive / DateTimeUtc: ``2024-01-02T03:04:05.123456789`` (nine fraction digits;
  ``+0000`` after a UTC time); a string in JSON
* Duration: integer nanoseconds
* list / tuple: compact JSON array

JSON lines are compact (``{"word":"a","count":2,...}``).

Parquet (``ParquetSink``): a directory of files, one per time (or per piece of a large
time), with the columns typed as ``formats.arrow.output_type`` says, then ``time`` and
``diff`` (int64).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import math
import os
import pickle
import re
import time as _time
import uuid
from collections.abc import Callable
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkway.connectors.base import OutputBatch, Piece, PieceSink, PieceWriter
from sparkway.connectors.formats.arrow import output_table, output_type
from sparkway.core.dtypes import DType, dtype_of_value
from sparkway.errors import PlanError
from sparkway.core.durations import nanos
from sparkway.core.text import float_texts, nanos_text, text_of

log = logging.getLogger("sparkway")

Formatter = Callable[[Any], Any]
_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _plain(value: Any) -> Any:
    """A JSON-able form of a Python value of unknown type (what an Any column holds)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN or infinity: null, as Pathway writes them
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dt.datetime):
        return text_of(value)
    if isinstance(value, dt.timedelta):
        return nanos(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):  # an Arrow struct holds a tuple as {"_0": .., "_1": ..}
        return [_plain(v) for v in value.values()]
    return value


def _stored_plain(dtype: DType | None) -> Formatter:
    """From a stored value of ``dtype`` (nested in lists and tuples too) to its JSON-able
    form: date-times (stored as nanoseconds) as text, durations as nanoseconds."""
    base = dtype.with_optional(False) if dtype is not None else None
    name = base.name if base is not None else None
    if name in ("DateTimeNaive", "DateTimeUtc"):
        zone = "+0000" if name == "DateTimeUtc" else ""
        return lambda v: None if v is None else nanos_text(v) + zone  # noqa: E731
    if name == "list":
        item = _stored_plain(base.items[0])
        return lambda v: None if v is None else [item(x) for x in v]  # noqa: E731
    if name == "tuple":
        items = [_stored_plain(t) for t in base.items]
        # an Arrow struct holds a tuple as {"_0": .., "_1": ..}
        return lambda v: None if v is None else [f(x) for f, x in zip(items, v.values())]  # noqa: E731
    return _plain


#: rows formatted at once by a file sink
_ROWS_PER_BLOCK = 1 << 16


class TextLines(PieceWriter):
    """Formats changes as the lines of a text file (``CsvLines``, ``JsonLines``): in
    Spark's tasks for a large time's pieces, whose bytes the driver only appends."""

    def __init__(self, columns: list[str], dtypes: dict[str, DType] | None = None) -> None:
        self.columns = list(columns)
        self.dtypes = dict(dtypes or {})

    def header(self) -> str:
        return ""

    def format_batch(self, batch: OutputBatch) -> str:
        """The batch as text: each row's columns, then its time and diff."""
        raise NotImplementedError

    def format_bytes(self, batch: OutputBatch) -> bytes:
        """``format_batch`` encoded in UTF-8 (a format may make the bytes at once)."""
        return self.format_batch(batch).encode()

    def write_piece(self, batch: OutputBatch) -> Piece:
        rows = batch.table.num_rows
        # a large batch in blocks: the Python objects of one block at a time
        blocks = [self.format_bytes(batch.slice(start, _ROWS_PER_BLOCK)) for start in range(0, rows, _ROWS_PER_BLOCK)]
        return Piece(rows, b"".join(blocks))

    def _is_json(self, column: str) -> bool:
        dtype = self.dtypes.get(column)
        return dtype is not None and dtype.name == "Json"

    def _is_array(self, column: str) -> bool:
        dtype = self.dtypes.get(column)
        return dtype is not None and dtype.name == "Array"

    def _is_any(self, column: str) -> bool:
        """Columns of type Any hold pickled Python objects: written as those objects."""
        dtype = self.dtypes.get(column)
        return dtype is not None and dtype.name == "Any"


class _FileSink(PieceSink):
    """Appends each time's lines to a file created (or truncated) by ``open()``."""

    def __init__(self, path: str, lines: TextLines, name: str | None = None) -> None:
        self.path = path
        self.lines = lines
        if name is not None:
            self.name = name
        self._file: IO[bytes] | None = None
        self._rows = 0  # of the time being written
        self._time_ms = 0.0  # spent on the time being written
        self._total_ms = 0.0

    @property
    def label(self) -> str:
        return self.path

    def open(self) -> None:
        folder = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(folder):  # as Pathway: a missing directory is not created
            raise FileNotFoundError(
                f"cannot create the output file {self.path}: the directory {folder} does not exist; "
                "create it before the run"
            )
        self._file = open(self.path, "wb")

    def piece_writer(self) -> TextLines:
        return self.lines

    def take_piece(self, time: int, piece: Piece) -> None:
        if not piece.rows:
            return
        started = _time.monotonic()
        if self._file is None:
            self.open()
        assert self._file is not None
        # the header comes with the first rows: no rows, an empty file (as Pathway)
        if self._file.tell() == 0:
            self._file.write(self.lines.header().encode())
        self._file.write(piece.data)
        self._rows += piece.rows
        self._time_ms += (_time.monotonic() - started) * 1000

    def end_time(self, time: int) -> None:
        if not self._rows:
            return
        assert self._file is not None
        started = _time.monotonic()
        self._file.flush()
        os.fsync(self._file.fileno())
        took = self._time_ms + (_time.monotonic() - started) * 1000
        self._total_ms += took
        log.info(
            "FileWriter-%s: Done writing %d entries, time %d. Current batch writes took: %d ms. "
            "All writes so far took: %d ms.",
            self.name, self._rows, time, took, self._total_ms,
        )
        self._rows, self._time_ms = 0, 0.0

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _array_object(stored: dict | None) -> dict | None:
    """An array as Pathway writes it: ``{"shape": [2], "elements": [1, 2]}``."""
    if stored is None:
        return None
    elements = stored["ints"] if stored["ints"] is not None else stored["floats"]
    return {"shape": stored["shape"], "elements": elements}


def _csv_quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _text_of_object(value: Any) -> str:
    """A Python object (of an Any column) as the text of a CSV field."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (int, float)):
        return text_of(value)
    return value if isinstance(value, str) else _compact(_plain(value))


def _csv_text(dtype: DType | None, arrow_type: pa.DataType) -> Formatter:
    """The text of a CSV field for the stored values of a column (before quoting)."""
    t = pa.types
    if dtype is not None and dtype.with_optional(False).name in ("DateTimeNaive", "DateTimeUtc", "Duration"):
        plain = _stored_plain(dtype)
        return lambda v: str(plain(v))  # noqa: E731
    if t.is_string(arrow_type) or t.is_large_string(arrow_type):
        return lambda v: v  # noqa: E731
    if t.is_boolean(arrow_type):
        return lambda v: "True" if v else "False"  # noqa: E731
    if t.is_floating(arrow_type):
        return text_of
    if t.is_binary(arrow_type) or t.is_large_binary(arrow_type):
        return lambda v: base64.b64encode(v).decode()  # noqa: E731
    if t.is_list(arrow_type) or t.is_large_list(arrow_type) or t.is_struct(arrow_type):
        plain = _stored_plain(dtype)
        return lambda v: _compact(plain(v))  # noqa: E731
    return str


class CsvLines(TextLines):
    """Every change as a CSV line ``<columns>,time,diff``, as Pathway 0.33 writes them:
    every field quoted, the header's too, and None written as ``"None"``.

    >>> lines = CsvLines(["word", "n"])
    >>> batch = OutputBatch(pa.table({"word": ["a"], "n": [2]}), 7, pa.array([1]))
    >>> lines.header() + lines.format_batch(batch)
    '"word","n","time","diff"\\n"a","2","7","1"\\n'
    """

    def header(self) -> str:
        return ",".join(_csv_quote(name) for name in [*self.columns, "time", "diff"]) + "\n"

    def format_batch(self, batch: OutputBatch) -> str:
        return self.format_bytes(batch).decode()

    def format_bytes(self, batch: OutputBatch) -> bytes:
        table = batch.table
        if table.num_rows == 0:
            return b""
        fields = [self._fields(table, n) for n in self.columns]
        fields += [pa.scalar(str(batch.time)), batch.diffs.cast(pa.string())]
        # every field is quoted: the line is '"' + the fields joined by '","' + '"'
        lines = pc.binary_join_element_wise(*fields, '","').cast(pa.large_string())  # may pass 2 GB in all
        if isinstance(lines, pa.ChunkedArray):
            lines = lines.combine_chunks()
        # one string, joined by Arrow: no Python object per line
        whole = pa.ListArray.from_arrays(pa.array([0, len(lines)], pa.int32()), lines)
        joined = pc.binary_join(whole, pa.scalar('"\n"', pa.large_string()))[0]
        return b'"' + joined.as_buffer().to_pybytes() + b'"\n'

    def _fields(self, table: pa.Table, name: str) -> pa.Array | pa.ChunkedArray:
        """A column's CSV fields before quoting, with '"' doubled and None for a null:
        integers, floats and strings at once, other values one by one."""
        column, dtype = table.column(name), self.dtypes.get(name)
        plain = dtype is None or dtype.with_optional(False).name in ("int", "str")
        if plain and pa.types.is_integer(column.type):
            return pc.fill_null(column.cast(pa.string()), "None")
        if plain and pa.types.is_string(column.type):
            return pc.fill_null(pc.replace_substring(column, '"', '""'), "None")
        if (dtype is None or dtype.with_optional(False).name == "float") and pa.types.is_floating(column.type):
            return pc.fill_null(float_texts(column), "None")
        text = self._text(table, name)
        return pa.array(["None" if v is None else text(v).replace('"', '""') for v in column.to_pylist()], pa.string())

    def _text(self, table: pa.Table, name: str) -> Formatter:
        if self._is_json(name):
            return lambda v: _compact(json.loads(v))
        if self._is_any(name):
            return lambda v: _text_of_object(pickle.loads(v))
        if self._is_array(name):
            return lambda v: _compact(_array_object(v))
        return _csv_text(self.dtypes.get(name), table.schema.field(name).type)


def _json_float(value: float | None) -> str:
    """A float as Pathway writes it in JSON: Python's digits, with no zero padding in a
    negative exponent (``1e-7``); NaN, infinities and None as null."""
    if value is None or not math.isfinite(value):
        return "null"
    return _NEGATIVE_EXPONENT.sub(r"e-\1", repr(value))


_NEGATIVE_EXPONENT = re.compile(r"e-0*(\d)")


class JsonLines(TextLines):
    """Every change as one JSON object per line: the columns, then ``diff`` and
    ``time``; Json columns (given in ``dtypes``) are embedded as JSON values.

    >>> batch = OutputBatch(pa.table({"word": ["a"], "count": [2]}), 7, pa.array([1]))
    >>> JsonLines(["word", "count"]).format_batch(batch)
    '{"word":"a","count":2,"diff":1,"time":7}\\n'
    """

    def format_batch(self, batch: OutputBatch) -> str:
        table = batch.table
        names = [_compact(n) for n in [*self.columns, "diff", "time"]]
        columns = [self._texts(table, n) for n in self.columns]
        columns += [[str(d) for d in batch.diffs.to_pylist()], [str(batch.time)] * table.num_rows]
        # written pair by pair: a column named diff or time is written twice, as Pathway does
        return "".join("{" + ",".join(f"{k}:{v}" for k, v in zip(names, row)) + "}\n" for row in zip(*columns))

    def _texts(self, table: pa.Table, name: str) -> list[str]:
        """The JSON text of each value of a column."""
        if pa.types.is_floating(table.schema.field(name).type):
            return [_json_float(v) for v in table.column(name).to_pylist()]
        return [_compact(v) for v in self._values(table, name)]

    def _values(self, table: pa.Table, name: str) -> list[Any]:
        values = table.column(name).to_pylist()
        if self._is_json(name):
            return [None if v is None else json.loads(v) for v in values]
        if self._is_any(name):
            return [None if v is None else _plain(pickle.loads(v)) for v in values]
        if self._is_array(name):
            return [_array_object(v) for v in values]
        dtype = self.dtypes.get(name)
        if dtype is not None and dtype.with_optional(False).name in ("DateTimeNaive", "DateTimeUtc"):
            return list(map(_stored_plain(dtype), values))
        if pa.types.is_primitive(table.schema.field(name).type):
            return values  # ints (durations: nanoseconds), floats, bools: already JSON-able
        return list(map(_stored_plain(dtype), values))


class CsvSink(_FileSink):
    """Appends every change to one CSV file as ``CsvLines`` formats it.

    >>> sink = CsvSink("out.csv", ["user_id", "session_length"])   # doctest: +SKIP
    >>> sink.open()   # out.csv: "user_id","session_length","time","diff"   # doctest: +SKIP
    >>> # a batch then appends lines like: "bob","62","1701270092168","1"
    """

    def __init__(self, path: str, columns: list[str], *, dtypes: dict[str, DType] | None = None,
                 name: str | None = None) -> None:
        super().__init__(path, CsvLines(columns, dtypes), name)


class JsonLinesSink(_FileSink):
    """Appends every change to one file as ``JsonLines`` formats it.

    >>> sink = JsonLinesSink("out.jsonl", ["word", "count"])   # doctest: +SKIP
    >>> # a batch appends lines like: {"word":"a","count":2,"diff":1,"time":1701270092168}
    """

    def __init__(self, path: str, columns: list[str], *, dtypes: dict[str, DType] | None = None,
                 name: str | None = None) -> None:
        super().__init__(path, JsonLines(columns, dtypes), name)


#: Parquet files of a ``ParquetSink``: ``part-<time>-<piece>.parquet``, zero-padded so that
#: their names sort in time order
PARQUET_PART = "part-{time:020d}-{piece:05d}.parquet"
#: a file being written, or written by a task and not yet taken by the driver: hidden
#: (Spark and pyarrow skip names starting with "."), and named by the time and by the
#: task's own token, so that two attempts of one task never write the same file
PARQUET_STAGED = ".staged-{time:020d}-{token}.parquet"


class ParquetFiles(PieceWriter):
    """Writes a piece of changes as one Parquet file, under a staged name that the
    ``ParquetSink`` on the driver renames once it takes the piece (a task Spark ran
    twice leaves a second staged file, which nobody takes)."""

    writes_files = True

    def __init__(self, folder: str, dtypes: dict[str, DType | None], schema: pa.Schema) -> None:
        self.folder, self.dtypes, self.schema = folder, dtypes, schema

    def write_piece(self, batch: OutputBatch) -> Piece:
        import pyarrow.parquet as pq  # 25 ms: loaded by the programs that write Parquet only

        rows = batch.table.num_rows
        dtypes = {c: t if t is not None else dtype_of_value(batch.table.column(c)[0].as_py())
                  for c, t in self.dtypes.items()}
        table = output_table(batch.table, dtypes)
        table = table.append_column(pa.field("time", pa.int64()), pa.array(np.full(rows, _int64_time(batch.time))))
        table = table.append_column(pa.field("diff", pa.int64()), batch.diffs.cast(pa.int64()))
        staged = PARQUET_STAGED.format(time=batch.time, token=uuid.uuid4().hex)
        path = os.path.join(self.folder, staged)
        pq.write_table(table, path)
        with open(path, "rb") as written:
            os.fsync(written.fileno())
        return Piece(rows, staged.encode())


def _int64_time(time: int) -> int:
    """The time as Parquet's int64 stores it: the end-of-input time 18446744073709551614
    as its bit pattern, -2."""
    return time if time < 2**63 else time - 2**64


class ParquetSink(PieceSink):
    """Writes every change into a directory of Parquet files: one file per time (a large
    time's output, which comes in pieces, a file per piece, written by Spark's tasks),
    named ``part-<time>-<piece>.parquet``, each with the columns, ``time`` and ``diff``.

    A file is written under a hidden staged name, fsynced, then renamed by the driver,
    so that a reader never sees half a file, nor a file of a task that Spark ran twice;
    ``spark.read.parquet`` of the directory gives the whole stream of changes.  Like
    Pathway's output files, the directory is rewritten by each run: ``open()`` removes
    the ``part-*.parquet`` and staged files of an earlier run (no other file).  The
    end-of-input time 18446744073709551614 (rows held back until every source ended) is
    stored as its int64 bit pattern, -2.

    >>> from sparkway.core.dtypes import INT, STR
    >>> sink = ParquetSink("out/", ["word", "n"], dtypes={"word": STR, "n": INT})
    >>> sink.piece_writer().schema.names
    ['word', 'n', 'time', 'diff']
    """

    def __init__(self, path: str, columns: list[str], *, dtypes: dict[str, DType] | None = None,
                 name: str | None = None) -> None:
        clash = [c for c in columns if c in ("time", "diff")]
        if clash:
            raise PlanError(f"cannot write column(s) {clash} to Parquet: the files have columns time and diff of "
                            "their own; rename them first (table.rename(...))")
        self.path = path
        typed = {c: (dtypes or {}).get(c) for c in columns}
        schema = pa.schema([*(pa.field(c, output_type(t)) for c, t in typed.items() if t is not None),
                            pa.field("time", pa.int64()), pa.field("diff", pa.int64())])
        self.files = ParquetFiles(os.path.abspath(path), typed, schema)
        if name is not None:
            self.name = name
        self._pieces = 0  # taken for the time being written
        self._rows = 0
        self._time_ms = 0.0
        self._total_ms = 0.0

    @property
    def label(self) -> str:
        return self.path

    def open(self) -> None:
        folder = self.files.folder
        parent = os.path.dirname(folder.rstrip(os.sep))
        if not os.path.isdir(parent):  # as for the other files: a missing directory is not created
            raise FileNotFoundError(
                f"cannot create the output directory {self.path}: the directory {parent} does not exist; "
                "create it before the run"
            )
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise FileExistsError(f"cannot write Parquet files into {self.path}: it is a file, not a directory")
        os.makedirs(folder, exist_ok=True)
        for entry in os.scandir(folder):  # an earlier run's files (or ones it was writing)
            if _PARQUET_FILE.fullmatch(entry.name) and entry.is_file():
                os.remove(entry.path)

    def piece_writer(self) -> ParquetFiles:
        return self.files

    def take_piece(self, time: int, piece: Piece) -> None:
        started = _time.monotonic()
        name = PARQUET_PART.format(time=time, piece=self._pieces)
        os.replace(os.path.join(self.files.folder, piece.data.decode()), os.path.join(self.files.folder, name))
        self._pieces += 1
        self._rows += piece.rows
        self._time_ms += (_time.monotonic() - started) * 1000

    def end_time(self, time: int) -> None:
        if not self._pieces:
            return
        started = _time.monotonic()
        _fsync_directory(self.files.folder)
        staged = PARQUET_STAGED.format(time=time, token="")[: -len(".parquet")]
        for entry in os.scandir(self.files.folder):  # what second attempts of the tasks wrote
            if entry.name.startswith(staged):
                os.remove(entry.path)
        took = self._time_ms + (_time.monotonic() - started) * 1000
        self._total_ms += took
        log.info("ParquetWriter-%s: Done writing %d entries, time %d, in %d file(s). Current batch writes took: "
                 "%d ms. All writes so far took: %d ms.", self.name, self._rows, time, self._pieces, took,
                 self._total_ms)
        self._pieces, self._rows, self._time_ms = 0, 0, 0.0


_PARQUET_FILE = re.compile(r"part-\d{20}-\d{5}\.parquet|\.part-\d{20}-\d{5}\.parquet|\.staged-\d{20}-\w+\.parquet")


def _fsync_directory(folder: str) -> None:
    """Makes a rename in ``folder`` durable (where the system allows it)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


class NullSink(PieceSink):
    """Discards everything (``pw.io.null.write``); its changes are still computed, by
    Spark's tasks for a large time.

    >>> NullSink().piece_writer().write_piece(OutputBatch(pa.table({"x": [1]}), 2, pa.array([1])))
    Piece(rows=1, data=b'')
    """

    def __init__(self, name: str | None = None) -> None:
        if name is not None:
            self.name = name

    def piece_writer(self) -> "_Discard":
        return _Discard()

    def take_piece(self, time: int, piece: Piece) -> None:
        pass


class _Discard(PieceWriter):
    def write_piece(self, batch: OutputBatch) -> Piece:
        return Piece(batch.table.num_rows, b"")
