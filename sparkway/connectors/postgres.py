"""PostgreSQL sink: a table's changes, or its live snapshot, in a PostgreSQL table.

Exactly once: each batch (one time's changes) is written in one transaction that also
records, in ``sparkway_sink_progress``, the time this sink has written up to.  A batch
whose time is not above the recorded one is skipped: after a crash the runner replays
the interrupted step with the same time, and if that step's transaction had committed,
the replay writes nothing.

Two table types:

* ``stream_of_changes``: every change is a row, ``<columns>, time, diff``;
* ``snapshot``: one row per primary key, the latest value; a key retracted and not
  inserted again in a batch is deleted.  The table has the table's columns only
  (Pathway's ``write(..., output_table_type="snapshot")``), or also ``time`` (of the
  row's last change) and ``diff`` (1) with ``with_time_columns`` (Pathway's older
  ``write_snapshot``).

A row PostgreSQL rejects rolls the whole batch back; the error names the table, the
row and PostgreSQL's reason.  The runner has not committed the step, so a restart
replays it once the cause is fixed.
"""

from __future__ import annotations

import datetime as dt
import logging
import time as _time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from sparkway.connectors.base import META_COLUMNS, SNAPSHOT, STREAM_OF_CHANGES, OutputBatch, Sink
from sparkway.core.dtypes import DType
from sparkway.errors import ConnectorError, PlanTypeError

log = logging.getLogger("sparkway")

INIT_MODES = ("default", "create_if_not_exists", "replace")
PROGRESS_TABLE = "sparkway_sink_progress"

_SQL_TYPES = {
    "int": "BIGINT",
    "float": "DOUBLE PRECISION",
    "str": "TEXT",
    "bool": "BOOLEAN",
    "bytes": "BYTEA",
    "Json": "JSONB",
    "DateTimeNaive": "TIMESTAMP",
    "DateTimeUtc": "TIMESTAMPTZ",
    "Duration": "BIGINT",  # microseconds (cut toward zero), as Pathway writes durations there
    "Pointer": "BIGINT",  # sparkway's row ids are 64-bit integers
    "Any": "BYTEA",  # the pickled object
}


class PostgresWriteError(ConnectorError):
    """PostgreSQL refused a batch; nothing of it was written."""


def sql_type(dtype: DType) -> str:
    """The PostgreSQL column type a sparkway column is created with.

    >>> from sparkway.core import dtypes
    >>> sql_type(dtypes.dtype_of(list[int]))
    'BIGINT[]'
    """
    base = dtype.with_optional(False)
    if base.name in _SQL_TYPES:
        return _SQL_TYPES[base.name]
    items = set(base.items)
    if base.name in ("list", "tuple") and len(items) == 1:
        item = sql_type(items.pop())
        if not item.endswith("[]"):
            return item + "[]"
    raise PlanTypeError(
        f"a column of type {dtype} cannot be written to PostgreSQL: use a simple type, or a list "
        "(or a tuple of one item type) of a simple type"
    )


def _converter(dtype: DType) -> Callable[[Any], Any]:
    """From the Python value Arrow gives to the value handed to psycopg."""
    base = dtype.with_optional(False)
    if base.name == "Duration":
        convert: Callable[[Any], Any] = _micros_toward_zero
    elif base.name in ("DateTimeNaive", "DateTimeUtc"):
        zone = dt.timezone.utc if base.name == "DateTimeUtc" else None
        convert = lambda v: _postgres_timestamp(v, zone)  # noqa: E731
    elif base.name in ("list", "tuple"):
        item = _converter(base.items[0])
        convert = lambda v: [item(x) for x in (v.values() if isinstance(v, dict) else v)]  # noqa: E731
    else:
        return lambda v: v  # JSON text, bytes, datetimes... psycopg adapts them as they are
    return lambda v: None if v is None else convert(v)


def _micros_toward_zero(count: int) -> int:
    """Nanoseconds as whole microseconds, cut toward zero (PostgreSQL keeps microseconds;
    Pathway writes a duration's microseconds so)."""
    return count // 1000 if count >= 0 else -(-count // 1000)


_POSTGRES_EPOCH = 946_684_800 * 10**9  # 2000-01-01, PostgreSQL's epoch, in nanoseconds since 1970


def _postgres_timestamp(count: int, zone: dt.timezone | None) -> dt.datetime:
    """A date-time in nanoseconds as a datetime of microseconds, as PostgreSQL keeps it:
    cut toward its epoch (2000-01-01), as Pathway's PostgreSQL driver cuts them.

    >>> _postgres_timestamp(1_704_067_200_000_001_999, None)  # 2024-01-01 00:00:00.000001999
    datetime.datetime(2024, 1, 1, 0, 0, 0, 1)
    """
    since = _micros_toward_zero(count - _POSTGRES_EPOCH)
    return dt.datetime(2000, 1, 1, tzinfo=zone) + dt.timedelta(microseconds=since)


def conninfo(settings: dict[str, Any]) -> str:
    """A libpq connection string from Pathway's settings dict.

    >>> conninfo({"host": "localhost", "port": 5432, "dbname": "db"})
    'host=localhost port=5432 dbname=db'
    """
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in settings.items()})


@dataclass
class _Statement:
    """One row's statement, used to find the row PostgreSQL rejects."""

    query: sql.Composable
    params: tuple
    row: dict[str, Any]


class PostgresSink(Sink):
    """Writes each batch, and this sink's progress, in one PostgreSQL transaction.

    >>> from sparkway.core import dtypes
    >>> sink = PostgresSink({"host": "localhost", "dbname": "db"}, "counts",
    ...                     {"word": dtypes.STR, "count": dtypes.INT},
    ...                     table_type="snapshot", primary_key=["word"])   # doctest: +SKIP
    >>> sink.open()   # connects, prepares the table and the progress table   # doctest: +SKIP
    """

    def __init__(self, settings: dict[str, Any], table_name: str, columns: dict[str, DType], *,
                 table_type: str = STREAM_OF_CHANGES, primary_key: list[str] | None = None,
                 init_mode: str = "default", max_batch_size: int | None = None,
                 name: str | None = None, with_time_columns: bool = True) -> None:
        self.settings = dict(settings)
        self.table_name = table_name
        self.columns = dict(columns)
        self.table_type = table_type
        self.with_time_columns = with_time_columns or table_type == STREAM_OF_CHANGES
        self.primary_key = list(primary_key or [])
        self.init_mode = init_mode
        self.max_batch_size = max_batch_size
        self.name = name or table_name
        self.progress_id = self.name  # the key of this sink's row in the progress table
        self._converters = {c: _converter(t) for c, t in self.columns.items()}
        self._conn: psycopg.Connection | None = None
        self._total_ms = 0.0

    @property
    def label(self) -> str:
        return f"postgres table {self.table_name}"

    # -- names ------------------------------------------------------------------------------
    @property
    def _table(self) -> sql.Identifier:
        return sql.Identifier(self.table_name)

    @property
    def _all_columns(self) -> list[str]:
        """The columns of the PostgreSQL table: the table's, then time and diff when kept."""
        return [*self.columns, *META_COLUMNS] if self.with_time_columns else [*self.columns]

    def _identifiers(self, names: list[str]) -> sql.Composed:
        return sql.SQL(", ").join(map(sql.Identifier, names))

    # -- set-up ------------------------------------------------------------------------------
    def open(self) -> None:
        # autocommit: the only transactions are the explicit ones, never one left open between steps
        self._conn = psycopg.connect(conninfo(self.settings), application_name=f"sparkway:{self.name}",
                                     autocommit=True)
        with self._conn.transaction():
            self._conn.execute(sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (sink TEXT PRIMARY KEY, time BIGINT NOT NULL)"
            ).format(sql.Identifier(PROGRESS_TABLE)))
            self._prepare_table()
            self._check_columns()

    def _table_exists(self) -> bool:
        assert self._conn is not None
        quoted = self._table.as_string(self._conn)
        return self._conn.execute("SELECT to_regclass(%s)", (quoted,)).fetchone()[0] is not None

    def _prepare_table(self) -> None:
        """Applies ``init_mode``.  A table made now starts with no progress recorded."""
        assert self._conn is not None
        if self.init_mode == "replace":
            self._conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self._table))
        elif self._table_exists():
            return
        elif self.init_mode == "default":
            raise PostgresWriteError(
                f"PostgreSQL table {self.table_name!r} does not exist: create it, or pass "
                "init_mode='create_if_not_exists' to let sparkway create it"
            )
        self._conn.execute(self.create_table_sql())
        self._conn.execute(sql.SQL("DELETE FROM {} WHERE sink = %s").format(sql.Identifier(PROGRESS_TABLE)),
                           (self.progress_id,))

    def create_table_sql(self) -> sql.Composed:
        """The CREATE TABLE statement ``init_mode`` runs."""
        definitions = [
            sql.SQL("{} {}{}").format(sql.Identifier(c), sql.SQL(sql_type(t)),
                                      sql.SQL("" if t.optional else " NOT NULL"))
            for c, t in self.columns.items()
        ]
        if self.with_time_columns:
            definitions += [sql.SQL('"time" BIGINT NOT NULL'), sql.SQL('"diff" SMALLINT NOT NULL')]
        if self.table_type == SNAPSHOT:
            definitions.append(sql.SQL("PRIMARY KEY ({})").format(self._identifiers(self.primary_key)))
        return sql.SQL("CREATE TABLE {} ({})").format(self._table, sql.SQL(", ").join(definitions))

    def _check_columns(self) -> None:
        assert self._conn is not None
        rows = self._conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
            (self._table.as_string(self._conn),),
        ).fetchall()
        missing = [c for c in self._all_columns if c not in {r[0] for r in rows}]
        if missing:
            raise PostgresWriteError(
                f"PostgreSQL table {self.table_name!r} has no column(s) {missing}; it needs "
                f"{self._all_columns}: add them, or use init_mode='replace' to recreate the table"
            )

    # -- writing -----------------------------------------------------------------------------
    def write(self, batch: OutputBatch) -> None:
        if batch.table.num_rows == 0:
            return
        assert self._conn is not None, "the sink was not opened"
        started = _time.monotonic()
        rows = self._rows(batch)
        try:
            with self._conn.transaction():
                done = self._progress()
                if done is not None and batch.time <= done:
                    log.info("PostgresWriter-%s: time %d is already in %r (written up to time %d): skipped",
                             self.name, batch.time, self.table_name, done)
                    return
                if self.table_type == SNAPSHOT:
                    self._write_snapshot(rows)
                else:
                    self._write_stream(rows)
                self._set_progress(batch.time)
        except psycopg.Error as error:
            raise self._rejected(error, rows, batch.time) from error
        took = (_time.monotonic() - started) * 1000
        self._total_ms += took
        log.info("PostgresWriter-%s: Done writing %d entries, time %d. Current batch writes took: %d ms. "
                 "All writes so far took: %d ms.", self.name, len(rows), batch.time, took, self._total_ms)

    def _rows(self, batch: OutputBatch) -> list[dict[str, Any]]:
        """The batch's rows as psycopg parameters: the columns, then time and diff."""
        values = {c: list(map(self._converters[c], batch.table.column(c).to_pylist())) for c in self.columns}
        values["time"] = [batch.time] * batch.table.num_rows
        values["diff"] = batch.diffs.to_pylist()
        return [dict(zip(values, row)) for row in zip(*values.values())]

    def _chunks(self, items: list) -> Iterator[list]:
        size = self.max_batch_size or len(items) or 1
        for start in range(0, len(items), size):
            yield items[start:start + size]

    def _progress(self) -> int | None:
        assert self._conn is not None
        row = self._conn.execute(
            sql.SQL("SELECT time FROM {} WHERE sink = %s FOR UPDATE").format(sql.Identifier(PROGRESS_TABLE)),
            (self.progress_id,),
        ).fetchone()
        return None if row is None else row[0]

    def _set_progress(self, time: int) -> None:
        assert self._conn is not None
        self._conn.execute(
            sql.SQL("INSERT INTO {} (sink, time) VALUES (%s, %s) ON CONFLICT (sink) DO UPDATE SET time = EXCLUDED.time")
            .format(sql.Identifier(PROGRESS_TABLE)),
            (self.progress_id, time),
        )

    def _write_stream(self, rows: list[dict[str, Any]]) -> None:
        assert self._conn is not None
        copy = sql.SQL("COPY {} ({}) FROM STDIN").format(self._table, self._identifiers(self._all_columns))
        with self._conn.cursor() as cursor:
            for chunk in self._chunks(rows):
                with cursor.copy(copy) as stream:
                    for row in chunk:
                        stream.write_row(self._params(row))

    def _write_snapshot(self, rows: list[dict[str, Any]]) -> None:
        upserts, deletes = self._snapshot_changes(rows)
        assert self._conn is not None
        with self._conn.cursor() as cursor:
            for chunk in self._chunks(deletes):
                cursor.executemany(self._delete_sql(), [self._key_params(r) for r in chunk])
            for chunk in self._chunks(upserts):
                cursor.executemany(self._upsert_sql(), [self._params(r) for r in chunk])

    def _params(self, row: dict[str, Any]) -> tuple:
        return tuple(row[c] for c in self._all_columns)

    def _snapshot_changes(self, rows: list[dict[str, Any]]) -> tuple[list[dict], list[dict]]:
        """Per primary key, the row to upsert, or else the retraction that deletes it:
        an insertion wins over a retraction of the same key (an update)."""
        final: dict[tuple, dict[str, Any]] = {}
        for row in rows:
            key = tuple(row[c] for c in self.primary_key)
            if row["diff"] > 0 or key not in final:
                final[key] = row
        upserts = [r for r in final.values() if r["diff"] > 0]
        deletes = [r for r in final.values() if r["diff"] < 0]
        return upserts, deletes

    def _upsert_sql(self) -> sql.Composed:
        updated = [c for c in self._all_columns if c not in self.primary_key]
        return sql.SQL(
            "INSERT INTO {table} ({columns}) VALUES ({values}) ON CONFLICT ({key}) {action}"
        ).format(
            table=self._table,
            columns=self._identifiers(self._all_columns),
            values=sql.SQL(", ").join(sql.Placeholder() * len(self._all_columns)),
            key=self._identifiers(self.primary_key),
            action=sql.SQL("DO UPDATE SET {}").format(
                sql.SQL(", ").join(sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(c)) for c in updated)
            ) if updated else sql.SQL("DO NOTHING"),
        )

    def _delete_sql(self) -> sql.Composed:
        matches = [sql.SQL("{} = %s").format(sql.Identifier(c)) for c in self.primary_key]
        return sql.SQL("DELETE FROM {} WHERE {}").format(self._table, sql.SQL(" AND ").join(matches))

    def _key_params(self, row: dict[str, Any]) -> tuple:
        return tuple(row[c] for c in self.primary_key)

    # -- errors ------------------------------------------------------------------------------
    def _rejected(self, error: psycopg.Error, rows: list[dict[str, Any]], time: int) -> PostgresWriteError:
        """The error to stop the run with, naming the first row PostgreSQL refuses alone."""
        culprit = self._find_rejected_row(rows)
        row, reason = culprit if culprit is not None else (None, error)
        shown = "" if row is None else "; the row: " + ", ".join(f"{c}={v!r}" for c, v in row.items())
        return PostgresWriteError(
            f"PostgreSQL rejected a change written to table {self.table_name!r} (sink {self.name!r}, "
            f"time {time}){shown}; reason: {_reason(reason)}. Nothing of this step was written: fix the "
            "table or the data and restart, the step is then replayed"
        )

    def _find_rejected_row(self, rows: list[dict[str, Any]]) -> tuple[dict, psycopg.Error] | None:
        """Tries each row alone, in a transaction rolled back at the end."""
        if self._conn is None or self._conn.closed:
            return None
        try:
            with self._conn.transaction(force_rollback=True):
                for statement in self._statements(rows):
                    try:
                        with self._conn.transaction():
                            self._conn.execute(statement.query, statement.params)
                    except psycopg.Error as error:
                        if isinstance(error, psycopg.OperationalError):
                            return None
                        return statement.row, error
        except psycopg.Error:
            return None
        return None

    def _statements(self, rows: list[dict[str, Any]]) -> Iterator[_Statement]:
        if self.table_type == SNAPSHOT:
            upserts, deletes = self._snapshot_changes(rows)
            for row in deletes:
                yield _Statement(self._delete_sql(), self._key_params(row), row)
            for row in upserts:
                yield _Statement(self._upsert_sql(), self._params(row), row)
            return
        insert = sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
            self._table, self._identifiers(self._all_columns),
            sql.SQL(", ").join(sql.Placeholder() * len(self._all_columns)))
        for row in rows:
            yield _Statement(insert, self._params(row), row)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _reason(error: psycopg.Error) -> str:
    """PostgreSQL's message, with its detail when it gives one."""
    diag = error.diag
    text = diag.message_primary or str(error).strip()
    return f"{text} ({diag.message_detail})" if diag.message_detail else text
