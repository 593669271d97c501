"""``pw.io.sqlite``: real SQLite files in tmp_path.

Expected rows and messages are worked out by hand from the inputs (messages are the
parts Pathway's own tests match); the value encodings were recorded from Pathway 0.33
(``/tmp/pwvenv``) writing the same values, as noted where used.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import sparkway as pw
from sparkway.connectors.base import OutputBatch
from sparkway.connectors.sqlite import SqliteError, SqliteSink, SqliteSource
from sparkway.core import dtypes
from tests.tables import Subscribed

pytestmark = pytest.mark.usefixtures("spark")

WAIT_S = 120


def execute(db: Path, *statements: str) -> None:
    """Runs the statements in one transaction of a connection of their own."""
    conn = sqlite3.connect(db)
    with conn:
        for statement in statements:
            conn.execute(statement)
    conn.close()


def query(db: Path, text: str) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(text).fetchall()
    finally:
        conn.close()


class User(pw.Schema):
    id: int
    name: str


class KeyedUser(pw.Schema):
    id: int = pw.column_definition(primary_key=True)
    name: str


# ------------------------------------------------------------------ the source, poll by poll


def opened(db: Path, schema: type[pw.Schema], table: str = "users") -> SqliteSource:
    source = SqliteSource(db, table, schema.columns(), autocommit_duration_ms=0, name="users")
    source.open(None)
    return source


def poll(source: SqliteSource) -> list[tuple[dict, int]]:
    """One step's changes (row without id, diff), committed; retractions first."""
    segments = source.discover()
    table = source.read(segments)
    source.advance(segments)
    rows = table.to_pylist()
    as_python = {name: _time_value(kind) for name, kind in source.columns.items()}
    changes = [({k: as_python[k](v) for k, v in r.items() if k not in ("_id", "_diff")}, r["_diff"]) for r in rows]
    return sorted(changes, key=lambda change: (change[1], str(change[0])))


@pytest.mark.parametrize("schema", [User, KeyedUser], ids=["by_rowid", "by_primary_key"])
def test_each_poll_gives_inserts_updates_and_deletes_as_changes(tmp_path: Path, schema) -> None:
    db = tmp_path / "app.db"
    execute(db, "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)",
            "INSERT INTO users VALUES (1, 'Alice'), (2, 'Bob')")
    source = opened(db, schema)
    assert poll(source) == [({"id": 1, "name": "Alice"}, 1), ({"id": 2, "name": "Bob"}, 1)]
    assert poll(source) == []  # nothing changed
    execute(db, "INSERT INTO users VALUES (3, 'Charlie')")
    assert poll(source) == [({"id": 3, "name": "Charlie"}, 1)]
    execute(db, "UPDATE users SET name = 'Bob Smith' WHERE id = 2")
    assert poll(source) == [({"id": 2, "name": "Bob"}, -1), ({"id": 2, "name": "Bob Smith"}, 1)]
    execute(db, "DELETE FROM users WHERE id = 3")
    assert poll(source) == [({"id": 3, "name": "Charlie"}, -1)]


def test_an_update_keeps_the_row_id_and_a_poll_not_committed_is_given_again(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    execute(db, "CREATE TABLE users (id INTEGER, name TEXT)", "INSERT INTO users VALUES (1, 'Alice')")
    source = opened(db, User)
    first = source.read(source.discover())
    again = source.discover()  # the step was not committed: the same poll
    assert source.read(again).to_pylist() == first.to_pylist()
    source.advance(again)
    execute(db, "UPDATE users SET name = 'Alicia'")
    update = source.read(source.discover()).to_pylist()
    assert [r["_diff"] for r in update] == [-1, 1]
    assert update[0]["_id"] == update[1]["_id"] == first.to_pylist()[0]["_id"]


def test_integers_in_a_real_column_and_sql_datetimes_are_read(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    execute(db, "CREATE TABLE t (k INTEGER PRIMARY KEY, price REAL, at DATETIME)",
            "INSERT INTO t VALUES (1, 1.5, '2026-04-23 15:05:00'), (2, 2, '2026-04-23T15:05:01.123')")

    class S(pw.Schema):
        k: int = pw.column_definition(primary_key=True)
        price: float
        at: pw.DateTimeNaive

    assert poll(opened(db, S, "t")) == [
        ({"k": 1, "price": 1.5, "at": dt.datetime(2026, 4, 23, 15, 5, 0)}, 1),
        ({"k": 2, "price": 2.0, "at": dt.datetime(2026, 4, 23, 15, 5, 1, 123000)}, 1),
    ]


def test_rows_repeating_a_unique_key_are_left_out_but_the_first(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    execute(db, "CREATE TABLE t (k INTEGER UNIQUE, v TEXT)",
            "INSERT INTO t VALUES (1, 'alpha'), (NULL, 'beta'), (NULL, 'gamma')")

    class S(pw.Schema):
        k: int | None = pw.column_definition(primary_key=True)
        v: str

    assert poll(opened(db, S, "t")) == [({"k": 1, "v": "alpha"}, 1), ({"k": None, "v": "beta"}, 1)]


class KV(pw.Schema):
    k: int
    v: str


class KeyedKV(pw.Schema):
    k: int = pw.column_definition(primary_key=True)
    v: str


class WithMissingColumn(pw.Schema):
    k: int
    nope: int


@pytest.mark.parametrize("ddl, schema, message", [
    ("CREATE TABLE t (k INTEGER, v TEXT)", WithMissingColumn,
     r"pw\.Schema references column\(s\) \['nope'\] that do not exist"),
    ("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT) WITHOUT ROWID", KV,
     r"does not expose an implicit `_rowid_` column.*Declare primary key columns in your pw\.Schema"),
    ('CREATE TABLE t ("RowID" TEXT, k INTEGER, v TEXT)', KV,
     r"shadows SQLite's implicit rowid alias.*Declare primary-key columns in your pw\.Schema"),
    ("CREATE TABLE t (k INTEGER, v TEXT)", KeyedKV, r"do not correspond to any UNIQUE or PRIMARY KEY constraint"),
])
def test_a_table_the_schema_does_not_fit_is_refused_when_the_run_starts(
        tmp_path: Path, ddl: str, schema: type[pw.Schema], message: str) -> None:
    db = tmp_path / "app.db"
    execute(db, ddl)
    with pytest.raises(SqliteError, match=message):
        opened(db, schema, "t")


def test_a_view_is_read_by_the_schemas_key_matched_without_case(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    execute(db, "CREATE TABLE base (k INTEGER, v TEXT)", "INSERT INTO base VALUES (1, 'hello')",
            "CREATE VIEW vw AS SELECT k, v FROM base")

    class S(pw.Schema):
        K: int = pw.column_definition(primary_key=True)
        v: str

    assert poll(opened(db, S, "VW")) == [({"K": 1, "v": "hello"}, 1)]


def test_paths_that_are_not_databases_are_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database" * 100)
    with pytest.raises(SqliteError, match="not a valid SQLite 3 database"):
        opened(junk, User)
    with pytest.raises(ValueError, match="is an existing directory, not a SQLite database file"):
        pw.io.sqlite.read(tmp_path, "users", User)


def test_persistence_is_refused_for_the_reader(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    execute(db, "CREATE TABLE users (id INTEGER, name TEXT)")
    pw.io.subscribe(pw.io.sqlite.read(db, "users", User, name="users"), on_change=lambda **_: None)
    config = pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state"))
    with pytest.raises(Exception, match="persistence is not supported for storage 'Sqlite'"):
        pw.run(persistence_config=config)


def test_a_streaming_read_follows_the_table_until_interrupted(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    execute(db, "CREATE TABLE users (id INTEGER, name TEXT)", "INSERT INTO users VALUES (1, 'Alice'), (2, 'Bob')")
    users = pw.io.sqlite.read(db, "users", User, autocommit_duration_ms=10)
    changes = Subscribed(users.select(name=pw.this.name), "name", timeout=WAIT_S)

    def edit() -> None:
        changes.wait_for(2)
        execute(db, "UPDATE users SET name = 'Bob Smith' WHERE id = 2")
        changes.wait_for(4)
        execute(db, "DELETE FROM users WHERE id = 1")
        changes.wait_for(5)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=edit, daemon=True).start()
    pw.run()
    seen = changes.seen
    assert sorted(seen[:2]) == [("Alice", True), ("Bob", True)]
    assert sorted(seen[2:4]) == [("Bob", False), ("Bob Smith", True)]
    assert seen[4:] == [("Alice", False)]


# ------------------------------------------------------------------ the sink


KV_COLUMNS = {"k": dtypes.INT, "v": dtypes.STR}


def _time_value(kind: dtypes.DType) -> Any:
    """Date-times and durations, stored as nanoseconds, as Python's values (others as stored)."""
    if kind.with_optional(False) in (dtypes.DATE_TIME_NAIVE, dtypes.DATE_TIME_UTC, dtypes.DURATION):
        return dtypes.to_python(kind)
    return lambda v: v


def _time_stored(kind: dtypes.DType) -> Any:
    if kind.with_optional(False) in (dtypes.DATE_TIME_NAIVE, dtypes.DATE_TIME_UTC, dtypes.DURATION):
        return dtypes.from_python(kind)
    return lambda v: v


def batch(columns: dict[str, dtypes.DType], rows: list[dict], *, time: int, diffs: list[int] | None = None) -> OutputBatch:
    """An output batch as the runner hands it to a sink."""
    data = {c: pa.array([_time_stored(t)(r[c]) for r in rows], t.arrow_type()) for c, t in columns.items()}
    return OutputBatch(pa.table(data), time, pa.array(diffs or [1] * len(rows), pa.int64()))


def sink(db: Path, table: str = "kv", columns: dict | None = None, **kwargs: Any) -> SqliteSink:
    opened_sink = SqliteSink(db, table, columns or KV_COLUMNS, **kwargs)
    opened_sink.open()
    return opened_sink


def test_stream_and_snapshot_tables_and_a_replayed_time_written_once(tmp_path: Path) -> None:
    db = tmp_path / "out.db"
    stream = sink(db, "changes", init_mode="create_if_not_exists")
    snapshot = sink(db, "snap", init_mode="create_if_not_exists", table_type="snapshot", primary_key=["k"])
    first = batch(KV_COLUMNS, [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}], time=100)
    update = batch(KV_COLUMNS, [{"k": 1, "v": "a"}, {"k": 1, "v": "z"}, {"k": 2, "v": "b"}], time=200, diffs=[-1, 1, -1])
    for s in (stream, snapshot):
        s.write(first)
        s.write(update)
        s.write(update)  # the step replayed after a crash that followed its commit
    assert sorted(query(db, "SELECT k, v, time, diff FROM changes")) == [
        (1, "a", 100, 1), (1, "a", 200, -1), (1, "z", 200, 1), (2, "b", 100, 1), (2, "b", 200, -1)]
    assert query(db, "SELECT * FROM snap") == [(1, "z")]
    assert dict(query(db, "SELECT sink, time FROM sparkway_sink_progress")) == {"changes": 200, "snap": 200}


def test_a_rejected_time_writes_nothing_of_it(tmp_path: Path) -> None:
    db = tmp_path / "out.db"
    execute(db, "CREATE TABLE kv (k INTEGER CHECK (k < 5), v TEXT, time INTEGER, diff INTEGER)")
    out = sink(db)
    with pytest.raises(SqliteError, match="CHECK constraint failed"):
        out.write(batch(KV_COLUMNS, [{"k": 1, "v": "ok"}, {"k": 9, "v": "bad"}], time=1))
    assert query(db, "SELECT * FROM kv") == []


def test_values_are_stored_as_pathway_stores_them(tmp_path: Path) -> None:
    db = tmp_path / "out.db"
    columns = {"i": dtypes.INT, "f": dtypes.FLOAT, "s": dtypes.STR, "b": dtypes.BOOL, "raw": dtypes.BYTES,
               "j": dtypes.JSON, "naive": dtypes.DATE_TIME_NAIVE, "utc": dtypes.DATE_TIME_UTC,
               "span": dtypes.DURATION, "opt": dtypes.INT.with_optional(), "ints": dtypes.dtype_of(list[int]),
               "pair": dtypes.dtype_of(tuple[str, int])}
    row = {"i": 42, "f": 3.25, "s": "hello", "b": True, "raw": b"\x00\x01\xff", "j": '{"a": 1}',
           "naive": dt.datetime(2026, 1, 15, 10, 30, 45), "utc": dt.datetime(2026, 1, 15, 10, 30, 45, tzinfo=dt.timezone.utc),
           "span": dt.timedelta(days=1), "opt": None, "ints": [1, 2, 3], "pair": {"_0": "hello", "_1": 7}}
    sink(db, "t", columns, init_mode="create_if_not_exists").write(batch(columns, [row], time=5))
    # recorded from Pathway 0.33 writing the same values (sqlite3's typeof and value)
    got = query(db, "SELECT i, f, s, b, raw, j, naive, utc, span, opt, ints, pair FROM t")[0]
    assert got == (42, 3.25, "hello", 1, b"\x00\x01\xff", '{"a":1}', "2026-01-15T10:30:45.000000000",
                   "2026-01-15T10:30:45.000000000+0000", 86_400_000_000_000, None, "[1,2,3]", '["hello",7]')


@pytest.mark.parametrize("table_type", ["stream_of_changes", "snapshot"])
def test_a_written_table_reads_back_the_same(tmp_path: Path, table_type: str) -> None:
    db = tmp_path / "out.db"
    columns = {"k": dtypes.INT, "f": dtypes.FLOAT, "raw": dtypes.BYTES, "b": dtypes.BOOL,
               "at": dtypes.DATE_TIME_UTC, "span": dtypes.DURATION, "ints": dtypes.dtype_of(list[int])}
    row = {"k": 1, "f": 2.0, "raw": b"\xff", "b": False, "at": dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone.utc),
           "span": dt.timedelta(microseconds=7), "ints": [4, 5]}
    key = ["k"] if table_type == "snapshot" else []
    sink(db, "t", columns, init_mode="create_if_not_exists", table_type=table_type, primary_key=key).write(
        batch(columns, [row], time=5))

    class Values(pw.Schema):
        f: float
        raw: bytes
        b: bool
        at: pw.DateTimeUtc
        span: pw.Duration
        ints: list[int]

    class Keyed(Values):
        k: int = pw.column_definition(primary_key=True)

    class ByRowid(Values):  # a change stream has no constraint on k
        k: int

    schema = Keyed if table_type == "snapshot" else ByRowid
    assert poll(opened(db, schema, "t")) == [(row, 1)]


@pytest.mark.parametrize("init_mode", ["default", "create_if_not_exists", "replace"])
def test_init_modes(tmp_path: Path, init_mode: str) -> None:
    db = tmp_path / "out.db"
    if init_mode == "default":
        execute(db, "CREATE TABLE kv (k INTEGER, v TEXT, time INTEGER, diff INTEGER)")
    elif init_mode == "replace":
        execute(db, "CREATE TABLE kv (stale TEXT)", "INSERT INTO kv VALUES ('old')")
    sink(db, init_mode=init_mode).write(batch(KV_COLUMNS, [{"k": 1, "v": "hello"}], time=3))
    assert query(db, "SELECT k, v FROM kv") == [(1, "hello")]


@pytest.mark.parametrize("ddl, columns, kwargs, message", [
    (None, KV_COLUMNS, {}, r'destination table "kv" does not exist'),
    ("CREATE TABLE kv (k INTEGER, v TEXT)", KV_COLUMNS, {}, r'"kv" is missing required column\(s\) \[\'time\', \'diff\'\]'),
    ("CREATE TABLE kv (k INTEGER, v TEXT, w TEXT GENERATED ALWAYS AS (upper(v)) STORED, time INTEGER, diff INTEGER)",
     {**KV_COLUMNS, "w": dtypes.STR}, {}, r"has generated column\(s\) \['w'\]"),
    ("CREATE TABLE kv (a INTEGER NOT NULL, b INTEGER, v TEXT, time INTEGER, diff INTEGER, PRIMARY KEY (a, b))",
     {"v": dtypes.STR}, {}, r"NOT NULL column\(s\) \['a'\] without a DEFAULT value"),
    ("CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT NOT NULL, time INTEGER, diff INTEGER)",
     {"k": dtypes.INT, "v": dtypes.STR.with_optional()}, {}, r"declares column\(s\) \['v'\] as Optional but"),
    ("CREATE TABLE kv (k INTEGER, v TEXT)", KV_COLUMNS, {"table_type": "snapshot", "primary_key": ["k"]},
     r"do not correspond to any UNIQUE or PRIMARY KEY constraint"),
    ("CREATE TABLE kv (k INTEGER, v TEXT); CREATE UNIQUE INDEX kv_k ON kv(k) WHERE v IS NOT NULL", KV_COLUMNS,
     {"table_type": "snapshot", "primary_key": ["k"]}, r"do not correspond to any UNIQUE or PRIMARY KEY constraint"),
    ("CREATE TABLE base (k INTEGER); CREATE VIEW kv AS SELECT * FROM base", KV_COLUMNS, {},
     r'destination "kv" is a SQLite view, which SQLite treats as read-only'),
    ("CREATE TABLE base (k INTEGER); CREATE INDEX KV ON base(k)", KV_COLUMNS, {},
     r'destination "kv" is a SQLite index in the database, not a table'),
])
def test_a_destination_that_cannot_take_the_writes_is_refused_at_start(
        tmp_path: Path, ddl: str | None, columns: dict, kwargs: dict, message: str) -> None:
    db = tmp_path / "out.db"
    if ddl:
        execute(db, *ddl.split("; "))
    with pytest.raises(SqliteError, match=message):
        sink(db, "kv", columns, **kwargs)


def test_snapshot_key_matches_a_constraint_without_case(tmp_path: Path) -> None:
    db = tmp_path / "out.db"
    execute(db, "CREATE TABLE t (id INTEGER UNIQUE, v TEXT)")
    columns = {"ID": dtypes.INT, "v": dtypes.STR}
    out = sink(db, "t", columns, table_type="snapshot", primary_key=["ID"])
    out.write(batch(columns, [{"ID": 1, "v": "a"}], time=1))
    out.write(batch(columns, [{"ID": 1, "v": "a"}, {"ID": 1, "v": "b"}], time=2, diffs=[-1, 1]))
    assert query(db, "SELECT id, v FROM t") == [(1, "b")]


@pytest.mark.parametrize("columns, kwargs, message", [
    ("k | time\n1 | 2", {}, r"collide with the 'time' and 'diff' metadata columns appended in stream_of_changes mode"),
    ("A | a\n1 | 2", {}, r"column names that differ only in case"),
    ("k | v\n1 | 2", {"output_table_type": "snapshot", "primary_key": ["k", "k"]},
     r"primary_key contains duplicate column\(s\) \['k'\]"),
])
def test_write_refuses_tables_sqlite_cannot_hold(tmp_path: Path, columns: str, kwargs: dict, message: str) -> None:
    table = pw.debug.table_from_markdown(columns)
    with pytest.raises(ValueError, match=message):
        pw.io.sqlite.write(table, tmp_path / "out.db", "t", init_mode="create_if_not_exists", **kwargs)


def test_two_outputs_to_one_table_need_distinct_names(tmp_path: Path) -> None:
    db = tmp_path / "out.db"
    first, second = pw.debug.table_from_markdown("k\n1"), pw.debug.table_from_markdown("k\n2")
    pw.io.sqlite.write(first, db, "t", init_mode="create_if_not_exists")
    with pytest.raises(ValueError, match="both named 't': give each a distinct name="):
        pw.io.sqlite.write(second, db, "t", init_mode="create_if_not_exists")
    pw.io.sqlite.write(second, db, "t", init_mode="create_if_not_exists", name="second")
    pw.run()
    assert sorted(query(db, "SELECT k FROM t")) == [(1,), (2,)]


def test_snapshot_refuses_a_nullable_key(tmp_path: Path) -> None:
    table = pw.debug.table_from_markdown("k | v\n1 | 2").select(k=pw.if_else(pw.this.v > 1, None, pw.this.k), v=pw.this.v)
    with pytest.raises(ValueError, match=r"primary_key column 'k' is declared nullable.*must be non-nullable in snapshot"):
        pw.io.sqlite.write(table, tmp_path / "out.db", "t", output_table_type="snapshot", primary_key=[table.k])


def test_a_program_writes_its_result_through_pw_run(tmp_path: Path) -> None:
    db = tmp_path / "out.db"
    words = pw.debug.table_from_markdown("word\na\nb\na")
    counts = words.groupby(words.word).reduce(words.word, n=pw.reducers.count())
    pw.io.sqlite.write(counts, db, "counts", output_table_type="snapshot", primary_key=[counts.word],
                       init_mode="create_if_not_exists")
    pw.io.sqlite.write(counts, db, "my-changes", init_mode="create_if_not_exists")
    pw.run()
    assert sorted(query(db, "SELECT word, n FROM counts")) == [("a", 2), ("b", 1)]
    assert sorted(query(db, 'SELECT word, n, diff FROM "my-changes"')) == [("a", 2, 1), ("b", 1, 1)]


def test_a_snapshot_may_have_a_column_named_time(tmp_path: Path) -> None:
    db = tmp_path / "out.db"
    events = pw.debug.table_from_markdown("pkey | time\n1 | 100\n2 | 200")
    pw.io.sqlite.write(events, db, "events", output_table_type="snapshot", primary_key=[events.pkey],
                       init_mode="create_if_not_exists")
    pw.run()
    assert query(db, "SELECT pkey, time FROM events ORDER BY pkey") == [(1, 100), (2, 200)]
