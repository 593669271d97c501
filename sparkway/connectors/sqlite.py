"""SQLite source and sink, with Python's built-in ``sqlite3``.

Source: ``SqliteSource`` polls a table (or view).  It keeps the rows it has sent, by
identity (the schema's primary key, else SQLite's ``_rowid_``); each poll that finds the
database changed (``PRAGMA data_version``) reads the table again and sends the difference:
new rows, retraction and insertion of changed rows, retraction of deleted rows.  The rows
sent are kept in memory only: a SQLite table has no history of its changes to resume
from, so a persistent run refuses the source, as Pathway does.

Sink: ``SqliteSink`` writes each time's changes in one transaction that also records, in
``sparkway_sink_progress``, the time the sink has written up to; a time not above the
recorded one is skipped, so a step replayed after a crash is not written twice.

* ``stream_of_changes``: every change is a row, ``<columns>, time, diff``;
* ``snapshot``: the table holds the live rows, one per primary key (an insertion is an
  upsert, a retraction not followed by an insertion of its key deletes the row).

Values are stored in SQLite's storage classes as Pathway stores them, so that a table
either of them wrote reads back in both (see ``docs/sqlite.md`` for the table).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import os
import pathlib
import pickle
import re
import sqlite3
import time as _time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from sparkway.connectors.base import (
    META_COLUMNS, SNAPSHOT, STREAM_OF_CHANGES, OutputBatch, Segment, Sink, Source, record_ids,
)
from sparkway.connectors.formats.values import RowError, json_converter
from sparkway.core import changes
from sparkway.core.columns import Column
from sparkway.core.dtypes import DType, array_from_python, array_to_python
from sparkway.core.durations import nanos
from sparkway.core.text import nanos_text
from sparkway.errors import ConnectorError
from sparkway.persistence.storage import BlobStorage

log = logging.getLogger("sparkway")

INIT_MODES = ("default", "create_if_not_exists", "replace")
PROGRESS_TABLE = "sparkway_sink_progress"
ROWID_ALIASES = ("rowid", "_rowid_", "oid")
BUSY_TIMEOUT_S = 60.0  # SQLite locks the whole file: wait for another writer this long


class SqliteError(ConnectorError):
    """The SQLite database cannot be read or written as asked."""


# ------------------------------------------------------------------------ names and files


def quote(name: str) -> str:
    """An SQLite identifier, quoted.

    >>> print(quote('my-table'), quote('a"b'))
    "my-table" "a""b"
    """
    return '"' + name.replace('"', '""') + '"'


def connect(path: str | os.PathLike, *, read_only: bool) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), checked to be a
    database: SQLite opens any file and fails only at the first query."""
    target: str = os.fspath(path)
    if read_only:
        if not os.path.exists(target):
            raise SqliteError(f"SQLite database {target!r} does not exist")
        target = pathlib.Path(target).absolute().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(target, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                               check_same_thread=False, uri=read_only)
        conn.execute("PRAGMA schema_version").fetchone()
    except sqlite3.DatabaseError as error:
        raise SqliteError(f"{os.fspath(path)!r} is not a valid SQLite 3 database (or it is encrypted): "
                          f"{error}") from error
    return conn


# ------------------------------------------------------------------------ what a table is


@dataclass
class SqliteColumn:
    name: str
    declared_type: str
    not_null: bool
    has_default: bool
    pk_position: int  # 0: not in the primary key
    generated: bool


@dataclass
class SqliteObject:
    """What the pragmas tell about a table or view (``kind`` None: there is none)."""

    name: str
    kind: str | None
    columns: list[SqliteColumn] = field(default_factory=list)
    without_rowid: bool = False
    unique_keys: list[frozenset[str]] = field(default_factory=list)  # lowercased names

    @property
    def has_rowid(self) -> bool:
        return self.kind == "table" and not self.without_rowid

    def column_names(self) -> set[str]:
        return {c.name.lower() for c in self.columns}

    def rowid_alias(self) -> str | None:
        """The ``INTEGER PRIMARY KEY`` column, which SQLite fills in when NULL."""
        key = [c for c in self.columns if c.pk_position]
        if self.has_rowid and len(key) == 1 and key[0].declared_type.upper() == "INTEGER":
            return key[0].name.lower()
        return None


def _is_without_rowid(ddl: str) -> bool:
    """Whether a CREATE TABLE ends with the ``WITHOUT ROWID`` option (after its last
    parenthesis, among the table options such as ``STRICT``)."""
    options = ddl[ddl.rfind(")") + 1:]
    return re.search(r"\bWITHOUT\s+ROWID\b", options, re.IGNORECASE) is not None


def describe(conn: sqlite3.Connection, name: str) -> SqliteObject:
    """The table or view ``name`` (matched case-insensitively, as SQLite does)."""
    found = conn.execute(
        "SELECT type, sql FROM sqlite_master WHERE name = ? COLLATE NOCASE ORDER BY type = 'table' DESC",
        (name,),
    ).fetchone()
    if found is None:
        return SqliteObject(name, None)
    kind, ddl = found
    obj = SqliteObject(name, kind)
    if kind not in ("table", "view"):
        return obj
    for _cid, col, declared, not_null, default, pk, hidden in conn.execute(f"PRAGMA table_xinfo({quote(name)})"):
        obj.columns.append(SqliteColumn(col, declared or "", bool(not_null), default is not None, pk,
                                        generated=hidden in (2, 3)))
    obj.without_rowid = kind == "table" and _is_without_rowid(ddl or "")
    key = frozenset(c.name.lower() for c in obj.columns if c.pk_position)
    if key:
        obj.unique_keys.append(key)
    for _seq, index, unique, _origin, partial in conn.execute(f"PRAGMA index_list({quote(name)})"):
        if not unique or partial:  # a partial index cannot be an ON CONFLICT target
            continue
        names = [row[2] for row in conn.execute(f"PRAGMA index_info({quote(index)})")]
        if names and None not in names:  # None: an expression, not a column
            obj.unique_keys.append(frozenset(n.lower() for n in names))
    return obj


def check_key_constraint(obj: SqliteObject, key: list[str], what: str, remedy: str) -> None:
    """A primary key must be a UNIQUE or PRIMARY KEY constraint of a table (a view has
    none: its key is trusted)."""
    if obj.kind != "table" or frozenset(k.lower() for k in key) in obj.unique_keys:
        return
    raise SqliteError(
        f"{what} {key} do not correspond to any UNIQUE or PRIMARY KEY constraint of SQLite table "
        f"{obj.name!r}: {remedy}"
    )


# ------------------------------------------------------------------------ values


def sqlite_type(dtype: DType) -> str:
    """The declared type of the column sparkway creates for ``dtype``.

    >>> from sparkway.core import dtypes
    >>> sqlite_type(dtypes.FLOAT), sqlite_type(dtypes.dtype_of(list[int]))
    ('REAL', 'TEXT')
    """
    name = dtype.with_optional(False).name
    if name in ("int", "bool", "Duration"):
        return "INTEGER"
    if name == "float":
        return "REAL"
    if name in ("bytes", "Any"):
        return "BLOB"
    return "TEXT"


def _plain(value: Any, dtype: DType) -> Any:
    """A nested value as JSON (list and tuple items)."""
    if value is None:
        return None
    name = dtype.with_optional(False).name
    if name == "list":
        return [_plain(v, dtype.items[0]) for v in value]
    if name == "tuple":
        items = list(value.values()) if isinstance(value, dict) else list(value)
        return [_plain(v, t) for v, t in zip(items, dtype.items)]
    if name == "bytes":
        return base64.b64encode(value).decode()
    if name in ("DateTimeNaive", "DateTimeUtc"):
        return _date_time_text(value, name)
    if name == "Json":
        return json.loads(value)
    if name == "Array":
        return _array_json(value)
    return value


def _array_json(stored: Any) -> dict[str, Any]:
    array = array_to_python(stored)
    return {"shape": list(array.shape), "elements": array.ravel().tolist()}


def encoder(dtype: DType) -> Callable[[Any], Any]:
    """From the value Arrow holds to the value bound in SQLite."""
    name = dtype.with_optional(False).name
    convert: Callable[[Any], Any]
    if name == "bool":
        convert = int
    elif name in ("DateTimeNaive", "DateTimeUtc"):
        convert = lambda v: _date_time_text(v, name)  # noqa: E731
    elif name == "Pointer":
        convert = str
    elif name == "Json":  # compact, as Pathway writes it
        convert = lambda v: json.dumps(json.loads(v), separators=(",", ":"), ensure_ascii=False)  # noqa: E731
    elif name in ("list", "tuple"):
        convert = lambda v: json.dumps(_plain(v, dtype), separators=(",", ":"))  # noqa: E731
    elif name == "Array":
        convert = lambda v: json.dumps(_array_json(v), separators=(",", ":"))  # noqa: E731
    else:  # int, float, str, bytes, pickled Any
        return lambda v: v
    return lambda v: None if v is None else convert(v)


_DATETIME = re.compile(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d(?::\d\d)?)(?:\.(\d+))?\s*(Z|[+-]\d\d:?\d\d)?$")


def _date_time_text(count: int, name: str) -> str:
    """A date-time's text, as Pathway writes it to SQLite (nine fraction digits)."""
    return nanos_text(count) + ("+0000" if name == "DateTimeUtc" else "")


def parse_datetime(text: str, zoned: bool) -> int:
    """Nanoseconds since the epoch of an ISO 8601 (``T``) or SQL (space) date and time,
    up to nanoseconds; a text without an offset is a UTC time for a ``zoned`` column, and
    a naive column takes the wall-clock time of a text with one.

    >>> parse_datetime("1970-01-01 00:00:01.000000005", zoned=False)
    1000000005
    """
    match = _DATETIME.match(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a date and time")
    day, clock, fraction, offset = match.groups()
    value = dt.datetime.fromisoformat(f"{day}T{clock}")
    digits = (fraction or "")[:9].ljust(9, "0")
    value = value.replace(microsecond=int(digits[:6]))
    if offset and zoned:
        offset = "+00:00" if offset == "Z" else offset
        hours, minutes = int(offset[1:3]), int(offset[-2:])
        sign = -1 if offset[0] == "-" else 1
        value = value.replace(tzinfo=dt.timezone(sign * dt.timedelta(hours=hours, minutes=minutes)))
    return nanos(value) + int(digits[6:])


def _expect(value: Any, kinds: tuple[type, ...], dtype: DType) -> Any:
    if not isinstance(value, kinds) or isinstance(value, bool):
        raise RowError(f"a SQLite value {value!r} does not fit a column of type {dtype}")
    return value


def decoder(dtype: DType) -> Callable[[Any], Any]:
    """From a value SQLite returns to the value Arrow holds for ``dtype``."""
    base = dtype.with_optional(False)
    name = base.name
    convert: Callable[[Any], Any]
    if name in ("int", "str", "bytes"):
        kinds = {"int": (int,), "str": (str,), "bytes": (bytes,)}[name]
        convert = lambda v: _expect(v, kinds, base)  # noqa: E731
    elif name == "float":  # SQLite may keep an integral REAL value as an INTEGER
        convert = lambda v: float(_expect(v, (int, float), base))  # noqa: E731
    elif name == "bool":
        convert = lambda v: bool(_expect(v, (int,), base))  # noqa: E731
    elif name in ("DateTimeNaive", "DateTimeUtc"):
        zoned = name == "DateTimeUtc"
        convert = lambda v: parse_datetime(_expect(v, (str,), base), zoned)  # noqa: E731
    elif name == "Duration":  # nanoseconds, as Pathway writes them
        convert = lambda v: _expect(v, (int,), base)  # noqa: E731
    elif name == "Pointer":
        convert = lambda v: int(v) if isinstance(v, str) else _expect(v, (int,), base)  # noqa: E731
    elif name == "Json":
        convert = lambda v: json.dumps(json.loads(_expect(v, (str,), base)))  # noqa: E731
    elif name == "Array":
        element = base.items[0]
        convert = lambda v: _array(json.loads(_expect(v, (str,), base)), element)  # noqa: E731
    elif name in ("list", "tuple"):
        from_json = json_converter(base)
        convert = lambda v: from_json(json.loads(_expect(v, (str,), base)))  # noqa: E731
    else:  # Any: the pickled object
        convert = lambda v: pickle.dumps(pickle.loads(_expect(v, (bytes,), base)))  # noqa: E731

    def decode(value: Any) -> Any:
        if value is None:
            if dtype.optional:
                return None
            raise RowError(f"NULL in a column of type {dtype}")
        return convert(value)

    return decode


def _array(value: dict[str, Any], element: DType) -> dict[str, Any]:
    return array_from_python(np.array(value["elements"]).reshape(value["shape"]), element)


# ------------------------------------------------------------------------ source


class SqliteSource(Source):
    """Rows of a SQLite table or view, polled; a segment is one poll's difference.

    >>> from sparkway.core.columns import Column
    >>> from sparkway.core import dtypes
    >>> source = SqliteSource("shop.db", "users", {"id": Column("id", dtypes.INT, primary_key=True),
    ...                                            "name": Column("name", dtypes.STR)})
    >>> source.key_columns   # rows are told apart by id, not by rowid
    ['id']
    """

    connector_label = "SqliteReader"

    def __init__(self, path: str | os.PathLike, table_name: str, schema: dict[str, Column], *,
                 autocommit_duration_ms: int | None = 1500, name: str | None = None) -> None:
        self.path = os.fspath(path)
        self.table_name = table_name
        self.schema = schema
        self.columns: dict[str, DType] = {c: col.dtype for c, col in schema.items()}
        self.key_columns = [c for c, col in schema.items() if col.primary_key]
        self.sqlite_names = {c: col.input_name for c, col in schema.items()}  # the table's column names
        self.name = name
        self.poll_interval_s = (autocommit_duration_ms or 0) / 1000
        self.arrow_schema = changes.arrow_schema(self.columns)
        self._decoders = [decoder(d) for d in self.columns.values()]
        self._conn: sqlite3.Connection | None = None

    def open(self, storage: BlobStorage | None) -> None:
        if storage is not None:
            raise SqliteError(
                "persistence is not supported for storage 'Sqlite': a SQLite table keeps no history of its "
                f"changes to resume reading {self.table_name!r} from; run without persistence_config"
            )
        self._conn = connect(self.path, read_only=True)
        obj = describe(self._conn, self.table_name)
        self._check(obj)
        by_rowid = not self.key_columns
        selected = (["_rowid_"] if by_rowid else []) + [quote(c) for c in self.sqlite_names.values()]
        self._select = f"SELECT {', '.join(selected)} FROM {quote(self.table_name)}"
        self._key_positions = [list(self.columns).index(c) for c in self.key_columns]
        self._sent: dict[Any, tuple] = {}  # identity -> row, as sent (committed steps)
        self._pending: tuple[int, pa.Table, dict[Any, tuple]] | None = None
        self._polls = 0
        self._seen_version: int | None = None
        self._last_poll = 0.0

    def _check(self, obj: SqliteObject) -> None:
        where = f"SQLite table {self.table_name!r} of {self.path!r}"
        if obj.kind not in ("table", "view"):
            found = "does not exist" if obj.kind is None else f"is a SQLite {obj.kind}, not a table or view"
            raise SqliteError(f"{where} {found}: check table_name")
        missing = [c for c in self.sqlite_names.values() if c.lower() not in obj.column_names()]
        if missing:
            raise SqliteError(f"pw.Schema references column(s) {missing} that do not exist in {where}; "
                              f"its columns are {[c.name for c in obj.columns]}")
        if self.key_columns:
            key = [self.sqlite_names[c] for c in self.key_columns]
            check_key_constraint(obj, key, "the schema's primary key columns",
                                 "add the constraint in SQLite, or change the schema's primary key")
            return
        if not obj.has_rowid:
            raise SqliteError(
                f"{where} does not expose an implicit `_rowid_` column (it is a view or a WITHOUT ROWID "
                "table), so its rows cannot be told apart between polls. Declare primary key columns in your "
                "pw.Schema: pw.column_definition(primary_key=True)")
        shadowing = [c.name for c in obj.columns if c.name.lower() in ROWID_ALIASES]
        if shadowing:
            raise SqliteError(
                f"column {shadowing[0]!r} of {where} shadows SQLite's implicit rowid alias, so rows cannot be "
                "identified by rowid. Declare primary-key columns in your pw.Schema: "
                "pw.column_definition(primary_key=True)")

    def discover(self) -> list[Segment]:
        if self._pending is not None:  # read but not committed: the same poll again
            return [{"poll": self._pending[0]}]
        now = _time.monotonic()
        if now - self._last_poll < self.poll_interval_s:
            return []
        self._last_poll = now
        assert self._conn is not None, "the source was not opened"
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        if version == self._seen_version:
            return []
        rows = self._poll()
        self._seen_version = version
        table = self._difference(rows)
        if table.num_rows == 0:
            self._sent = rows
            return []
        self._polls += 1
        self._pending = (self._polls, table, rows)
        return [{"poll": self._polls}]

    def _poll(self) -> dict[Any, tuple]:
        """The table's current rows by identity; rows that do not fit are left out."""
        assert self._conn is not None
        current: dict[Any, tuple] = {}
        by_rowid = not self.key_columns
        for record in self._conn.execute(self._select):
            values = record[1:] if by_rowid else record
            try:
                row = tuple(decode(v) for decode, v in zip(self._decoders, values))
            except (RowError, ValueError, TypeError, KeyError) as error:
                log.warning("%s: a row of %r is skipped: %s; the row: %r", self.label, self.table_name, error, record)
                continue
            identity = record[0] if by_rowid else tuple(row[i] for i in self._key_positions)
            if identity in current:
                log.error("%s: rows of %r share the primary key %r (SQLite allows repeated NULLs in a UNIQUE "
                          "column): only the first is read; the row left out: %r",
                          self.label, self.table_name, identity, record)
                continue
            current[identity] = row
        return current

    def _difference(self, current: dict[Any, tuple]) -> pa.Table:
        """Changes from the rows sent to ``current``: retractions, then insertions."""
        removed = [(k, r) for k, r in self._sent.items() if current.get(k, _GONE) != r]
        added = [(k, r) for k, r in current.items() if self._sent.get(k, _GONE) != r]
        entries = removed + added
        diffs = [-1] * len(removed) + [1] * len(added)
        if self.key_columns:
            ids = [0] * len(entries)  # made from the key by the engine (Source.key_columns)
        else:
            ids = record_ids(self.name or "", self.table_name, [k for k, _ in entries])
        rows = [r for _, r in entries]
        arrays = [pa.array(ids, pa.int64())]
        arrays += [pa.array([r[i] for r in rows], d.arrow_type()) for i, d in enumerate(self.columns.values())]
        arrays.append(pa.array(diffs, pa.int64()))
        return pa.Table.from_arrays(arrays, schema=self.arrow_schema)

    def read(self, segments: list[Segment]) -> pa.Table:
        if not segments:
            return self.arrow_schema.empty_table()
        assert self._pending is not None and segments == [{"poll": self._pending[0]}], segments
        return self._pending[1]

    def advance(self, segments: list[Segment]) -> None:
        if segments and self._pending is not None:
            self._sent = self._pending[2]
            self._pending = None

    def position(self) -> dict[str, Any]:
        return {"polls": self._polls}

    def restore(self, position: dict[str, Any]) -> None:
        """Never called: ``open`` refuses persistence."""

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


_GONE = object()


# ------------------------------------------------------------------------ sink


class SqliteSink(Sink):
    """Writes each time's changes, and this sink's progress, in one SQLite transaction.

    >>> from sparkway.core import dtypes
    >>> sink = SqliteSink("shop.db", "counts", {"word": dtypes.STR, "n": dtypes.INT},
    ...                   table_type="snapshot", primary_key=["word"])
    >>> sink.create_table_sql()
    'CREATE TABLE "counts" ("word" TEXT NOT NULL, "n" INTEGER NOT NULL, PRIMARY KEY ("word"))'
    """

    def __init__(self, path: str | os.PathLike, table_name: str, columns: dict[str, DType], *,
                 table_type: str = STREAM_OF_CHANGES, primary_key: list[str] | None = None,
                 init_mode: str = "default", name: str | None = None) -> None:
        self.path = os.fspath(path)
        self.table_name = table_name
        self.columns = dict(columns)
        self.table_type = table_type
        self.primary_key = list(primary_key or [])
        self.init_mode = init_mode
        self.name = name or table_name
        self.progress_id = self.name  # the key of this sink's row in the progress table
        self._encoders = [encoder(t) for t in self.columns.values()]
        self._conn: sqlite3.Connection | None = None

    @property
    def label(self) -> str:
        return f"sqlite table {self.table_name} ({self.path})"

    @property
    def _written_columns(self) -> list[str]:
        return [*self.columns, *META_COLUMNS] if self.table_type == STREAM_OF_CHANGES else list(self.columns)

    # -- set-up ------------------------------------------------------------------------------
    def open(self) -> None:
        self._conn = connect(self.path, read_only=False)
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            self._conn.execute(f"CREATE TABLE IF NOT EXISTS {PROGRESS_TABLE} (sink TEXT PRIMARY KEY, "
                               "time INTEGER NOT NULL)")
            self._prepare_table()
            self._check_table(describe(self._conn, self.table_name))
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise

    def _prepare_table(self) -> None:
        """Applies ``init_mode``.  A table made now starts with no progress recorded."""
        assert self._conn is not None
        obj = describe(self._conn, self.table_name)
        where = f"destination {quote(self.table_name)}"
        if obj.kind == "view":
            raise SqliteError(f"{where} is a SQLite view, which SQLite treats as read-only: write to a table")
        if obj.kind not in (None, "table"):
            raise SqliteError(f"{where} is a SQLite {obj.kind} in the database, not a table: choose another "
                              "table_name")
        if self.init_mode == "replace":
            self._conn.execute(f"DROP TABLE IF EXISTS {quote(self.table_name)}")
        elif obj.kind == "table":
            return
        elif self.init_mode == "default":
            raise SqliteError(f"destination table {quote(self.table_name)} does not exist in {self.path!r}: "
                              "create it, or pass init_mode='create_if_not_exists' to let sparkway create it")
        self._conn.execute(self.create_table_sql())
        self._conn.execute(f"DELETE FROM {PROGRESS_TABLE} WHERE sink = ?", (self.progress_id,))

    def create_table_sql(self) -> str:
        """The CREATE TABLE statement ``init_mode`` runs."""
        definitions = [f"{quote(c)} {sqlite_type(t)}{'' if t.optional else ' NOT NULL'}"
                       for c, t in self.columns.items()]
        if self.table_type == STREAM_OF_CHANGES:
            definitions += ['"time" BIGINT NOT NULL', '"diff" SMALLINT NOT NULL']
        else:
            definitions.append(f"PRIMARY KEY ({', '.join(map(quote, self.primary_key))})")
        return f"CREATE TABLE {quote(self.table_name)} ({', '.join(definitions)})"

    def _check_table(self, obj: SqliteObject) -> None:
        """What would make every write fail, said before the first one."""
        table = f"destination table {quote(self.table_name)}"
        existing = {c.name.lower(): c for c in obj.columns}
        missing = [c for c in self._written_columns if c.lower() not in existing]
        if missing:
            raise SqliteError(f"{table} is missing required column(s) {missing}: add them, or use "
                              "init_mode='replace' to recreate the table")
        generated = [c for c in self.columns if existing[c.lower()].generated]
        if generated:
            raise SqliteError(f"{table} has generated column(s) {generated} (`GENERATED ALWAYS AS ...`) that "
                              "pw.Schema also names: SQLite computes them, so drop them from the written table")
        written = {c.lower() for c in self._written_columns}
        alias = obj.rowid_alias()
        required = [c.name for c in obj.columns
                    if c.name.lower() not in written and c.name.lower() != alias and not c.generated
                    and not c.has_default and (c.not_null or (obj.without_rowid and c.pk_position))]
        if required:
            raise SqliteError(f"{table} has NOT NULL column(s) {required} without a DEFAULT value, which the "
                              "written table does not have: add them to the table written, or give them a DEFAULT")
        optional = [c for c, t in self.columns.items()
                    if t.optional and existing[c.lower()].not_null and c.lower() != alias]
        if optional:
            raise SqliteError(f"pw.Schema declares column(s) {optional} as Optional but the {table} marks them "
                              "NOT NULL: filter the Nones out, fill them in, or drop the constraint")
        if self.table_type == SNAPSHOT:
            check_key_constraint(obj, self.primary_key, "primary_key column(s)",
                                 "Add it in SQLite (a UNIQUE or PRIMARY KEY on exactly these columns), or use "
                                 "init_mode='replace' to let sparkway recreate the table")

    # -- writing -----------------------------------------------------------------------------
    def write(self, batch: OutputBatch) -> None:
        if batch.table.num_rows == 0:
            return
        assert self._conn is not None, "the sink was not opened"
        started = _time.monotonic()
        rows = self._rows(batch)
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            done = self._progress()
            if done is not None and batch.time <= done:
                self._conn.execute("ROLLBACK")
                log.info("SqliteWriter-%s: time %d is already in %r (written up to time %d): skipped",
                         self.name, batch.time, self.table_name, done)
                return
            if self.table_type == SNAPSHOT:
                self._write_snapshot(rows)
            else:
                self._conn.executemany(self._insert_sql(), rows)
            self._conn.execute(f"INSERT INTO {PROGRESS_TABLE} (sink, time) VALUES (?, ?) "
                               "ON CONFLICT (sink) DO UPDATE SET time = excluded.time", (self.progress_id, batch.time))
            self._conn.execute("COMMIT")
        except sqlite3.Error as error:
            self._conn.execute("ROLLBACK")
            raise SqliteError(
                f"SQLite rejected the changes of time {batch.time} written to table {self.table_name!r} of "
                f"{self.path!r} (sink {self.name!r}): {error}. Nothing of this step was written: fix the table "
                "or the data and restart"
            ) from error
        log.info("SqliteWriter-%s: Done writing %d entries, time %d, in %d ms.", self.name, len(rows),
                 batch.time, (_time.monotonic() - started) * 1000)

    def _rows(self, batch: OutputBatch) -> list[tuple]:
        """The batch's rows as SQLite parameters: the columns (by position), then time and diff."""
        table = batch.table
        values = [list(map(enc, table.column(i).to_pylist())) for i, enc in enumerate(self._encoders)]
        values += [[batch.time] * table.num_rows, batch.diffs.to_pylist()]
        return list(zip(*values))

    def _progress(self) -> int | None:
        assert self._conn is not None
        row = self._conn.execute(f"SELECT time FROM {PROGRESS_TABLE} WHERE sink = ?", (self.progress_id,)).fetchone()
        return None if row is None else row[0]

    def _insert_sql(self) -> str:
        columns = ", ".join(map(quote, self._written_columns))
        marks = ", ".join("?" * len(self._written_columns))
        return f"INSERT INTO {quote(self.table_name)} ({columns}) VALUES ({marks})"

    def _write_snapshot(self, rows: list[tuple]) -> None:
        """Per primary key, upsert its insertion, else delete its retraction (an
        insertion and a retraction of one key at one time are an update)."""
        assert self._conn is not None
        positions = [list(self.columns).index(c) for c in self.primary_key]
        final: dict[tuple, tuple] = {}
        for row in rows:
            key = tuple(row[i] for i in positions)
            if row[-1] > 0 or key not in final:
                final[key] = row
        n = len(self.columns)
        deletes = [key for key, row in final.items() if row[-1] < 0]
        upserts = [row[:n] for row in final.values() if row[-1] > 0]
        matches = " AND ".join(f"{quote(c)} = ?" for c in self.primary_key)
        self._conn.executemany(f"DELETE FROM {quote(self.table_name)} WHERE {matches}", deletes)
        updated = [c for c in self.columns if c not in self.primary_key]
        action = ("DO UPDATE SET " + ", ".join(f"{quote(c)} = excluded.{quote(c)}" for c in updated)
                  if updated else "DO NOTHING")
        conflict = f" ON CONFLICT ({', '.join(map(quote, self.primary_key))}) {action}"
        self._conn.executemany(self._insert_sql() + conflict, upserts)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

