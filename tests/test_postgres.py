"""``pw.io.postgres`` against a real PostgreSQL server (tests/services/postgres.py).

Expected tables are written out by hand from the inputs, never read from sparkway.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pandas as pd
import psycopg
import pyarrow as pa
import pytest

import sparkway as pw
from sparkway.api.graph import clear
from sparkway.connectors.base import OutputBatch
from sparkway.connectors.postgres import PostgresSink, PostgresWriteError
from sparkway.core import dtypes

pytestmark = pytest.mark.usefixtures("spark")


class Words(pw.Schema):
    word: str


def query(settings: dict, text: str, params: tuple = ()) -> list[tuple]:
    with psycopg.connect(**settings) as conn:
        return conn.execute(text, params).fetchall()


def execute(settings: dict, text: str) -> None:
    with psycopg.connect(**settings, autocommit=True) as conn:
        conn.execute(text)


def word_count_run(work: Path, settings: dict, *, key: Any = "word") -> None:
    """One persistent run of a word count, written as changes and as two snapshots."""
    clear()
    words = pw.io.csv.read(work / "in", schema=Words, mode="static", name="words")
    counts = words.groupby(words.word).reduce(words.word, n=pw.reducers.count())
    pw.io.postgres.write(counts, settings, "changes", init_mode="create_if_not_exists")
    pw.io.postgres.write_snapshot(counts, settings, "snap", [key], init_mode="create_if_not_exists")
    pw.io.postgres.write(counts, settings, "snap_this", output_table_type="snapshot",
                         primary_key=[pw.this.word], init_mode="create_if_not_exists")
    pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(work / "state")))


def test_stream_and_snapshot_tables_follow_updates_and_deletions_across_runs(tmp_path: Path, postgres: dict) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("word\nx\ny\nx\n")
    word_count_run(tmp_path, postgres, key="word")  # time 1: x=2, y=1
    (tmp_path / "in" / "b.csv").write_text("word\ny\nz\n")
    word_count_run(tmp_path, postgres)  # time 2: y=2, z=1
    (tmp_path / "in" / "a.csv").unlink()
    word_count_run(tmp_path, postgres)  # time 3: x gone, y=1

    changes = query(postgres, "SELECT word, n, diff, time FROM changes")
    times = sorted({t for *_, t in changes})
    assert len(times) == 3, f"three runs, three times: {changes}"
    t1, t2, t3 = times
    assert sorted(changes) == sorted([
        ("x", 2, 1, t1), ("y", 1, 1, t1),
        ("y", 1, -1, t2), ("y", 2, 1, t2), ("z", 1, 1, t2),
        ("x", 2, -1, t3), ("y", 2, -1, t3), ("y", 1, 1, t3),
    ])
    # the live rows, as Pathway 0.33 keeps them: write_snapshot with the time of each row's
    # last change and diff 1, write(output_table_type="snapshot") with the columns only
    assert sorted(query(postgres, "SELECT * FROM snap")) == [("y", 1, t3, 1), ("z", 1, t2, 1)]
    assert sorted(query(postgres, "SELECT * FROM snap_this")) == [("y", 1), ("z", 1)]
    progress = dict(query(postgres, "SELECT sink, time FROM sparkway_sink_progress"))
    assert progress == {"changes": t3, "snap": t3, "snap_this": t3}


def test_column_types_map_to_postgres_types_and_values(postgres: dict) -> None:
    columns = {
        "i": dtypes.INT, "f": dtypes.FLOAT, "s": dtypes.STR, "b": dtypes.BOOL, "raw": dtypes.BYTES,
        "j": dtypes.JSON, "naive": dtypes.DATE_TIME_NAIVE, "utc": dtypes.DATE_TIME_UTC,
        "span": dtypes.DURATION, "ptr": dtypes.POINTER, "opt": dtypes.INT.with_optional(),
        "ints": dtypes.dtype_of(list[int]), "pair": dtypes.dtype_of(tuple[str, str]),
    }
    when = dt.datetime(2024, 3, 1, 12, 30, 15, 250)
    utc = dt.datetime(2024, 3, 1, 12, 0, tzinfo=dt.timezone.utc)
    row = {"i": 7, "f": 2.5, "s": "it's", "b": True, "raw": b"\x00\xff", "j": '{"a": [1, null]}',
           "naive": when, "utc": utc, "span": dt.timedelta(seconds=3, microseconds=5), "ptr": -12345,
           "opt": None, "ints": [1, 2], "pair": {"_0": "p", "_1": "q"}}
    sink = PostgresSink(postgres, "typed", columns, init_mode="create_if_not_exists")
    sink.open()
    sink.write(batch(columns, [row], time=10))
    sink.close()

    declared = dict(query(postgres, "SELECT column_name, data_type FROM information_schema.columns "
                                    "WHERE table_name = 'typed'"))
    assert declared == {
        "i": "bigint", "f": "double precision", "s": "text", "b": "boolean", "raw": "bytea", "j": "jsonb",
        "naive": "timestamp without time zone", "utc": "timestamp with time zone", "span": "bigint",
        "ptr": "bigint", "opt": "bigint", "ints": "ARRAY", "pair": "ARRAY", "time": "bigint", "diff": "smallint",
    }
    nullable = dict(query(postgres, "SELECT column_name, is_nullable FROM information_schema.columns "
                                    "WHERE table_name = 'typed'"))
    assert nullable["opt"] == "YES" and nullable["i"] == "NO"
    (got,) = query(postgres, "SELECT i, f, s, b, raw, j, naive, utc, span, ptr, opt, ints, pair, time, diff FROM typed")
    assert got == (7, 2.5, "it's", True, b"\x00\xff", {"a": [1, None]}, when, utc, 3_000_005, -12345, None,
                   [1, 2], ["p", "q"], 10, 1)


def test_nanoseconds_are_cut_to_the_microseconds_postgres_keeps(postgres: dict) -> None:
    columns = {"k": dtypes.INT, "a": dtypes.DATE_TIME_NAIVE, "u": dtypes.DATE_TIME_UTC, "d": dtypes.DURATION}
    rows = [
        {"k": 1, "a": pd.Timestamp("2024-03-01T12:30:15.123456789"),
         "u": pd.Timestamp("2024-03-01T12:30:15.123456789", tz="UTC"), "d": pd.Timedelta(3_000_005_999)},
        {"k": 2, "a": pd.Timestamp("1969-12-31T23:59:59.999999999"),
         "u": pd.Timestamp("1969-12-31T23:59:59.999999999", tz="UTC"), "d": pd.Timedelta(-1999)},
        {"k": 3, "a": pd.Timestamp("1999-12-31T23:59:59.999999999"),
         "u": pd.Timestamp("2000-01-01T00:00:00.000000999", tz="UTC"), "d": pd.Timedelta(999)},
    ]
    sink = PostgresSink(postgres, "nanos", columns, init_mode="create_if_not_exists")
    sink.open()
    sink.write(batch(columns, rows, time=10))
    sink.close()
    utc = dt.timezone.utc
    # recorded from Pathway 0.33.0 writing the same rows: date-times are cut toward
    # 2000-01-01 (PostgreSQL's epoch), durations' microseconds toward zero
    assert query(postgres, "SELECT k, a, u, d FROM nanos ORDER BY k") == [
        (1, dt.datetime(2024, 3, 1, 12, 30, 15, 123456), dt.datetime(2024, 3, 1, 12, 30, 15, 123456, tzinfo=utc), 3_000_005),
        (2, dt.datetime(1970, 1, 1), dt.datetime(1970, 1, 1, tzinfo=utc), -1),
        (3, dt.datetime(2000, 1, 1), dt.datetime(2000, 1, 1, tzinfo=utc), 0),
    ]


def batch(columns: dict[str, dtypes.DType], rows: list[dict], *, time: int, diffs: list[int] | None = None) -> OutputBatch:
    """An output batch as the runner hands it to a sink (date-times and durations as
    their nanoseconds)."""
    data = {c: pa.array([_stored(t)(r[c]) for r in rows], t.arrow_type()) for c, t in columns.items()}
    return OutputBatch(pa.table(data), time, pa.array(diffs or [1] * len(rows), pa.int64()))


def _stored(kind: dtypes.DType) -> Any:
    if kind.with_optional(False) in (dtypes.DATE_TIME_NAIVE, dtypes.DATE_TIME_UTC, dtypes.DURATION):
        return dtypes.from_python(kind)
    return lambda v: v


KV = {"k": dtypes.STR, "v": dtypes.INT}


def kv_sink(settings: dict, table: str = "kv", **kwargs: Any) -> PostgresSink:
    sink = PostgresSink(settings, table, KV, **kwargs)
    sink.open()
    return sink


def test_default_init_mode_needs_the_table_and_names_it(postgres: dict) -> None:
    with pytest.raises(PostgresWriteError, match="'missing' does not exist.*create_if_not_exists"):
        kv_sink(postgres, "missing")


def test_default_init_mode_appends_to_a_table_the_user_made(postgres: dict) -> None:
    execute(postgres, "CREATE TABLE mine (id SERIAL PRIMARY KEY, k TEXT, v INTEGER, time BIGINT, diff SMALLINT)")
    execute(postgres, "INSERT INTO mine (k, v, time, diff) VALUES ('old', 0, 1, 1)")
    sink = kv_sink(postgres, "mine")
    sink.write(batch(KV, [{"k": "a", "v": 1}], time=5))
    assert query(postgres, "SELECT id, k, v, time, diff FROM mine ORDER BY id") == [(1, "old", 0, 1, 1), (2, "a", 1, 5, 1)]


def test_a_table_without_a_needed_column_is_refused_at_start(postgres: dict) -> None:
    execute(postgres, "CREATE TABLE kv (k TEXT, time BIGINT, diff SMALLINT)")
    with pytest.raises(PostgresWriteError, match=r"'kv' has no column\(s\) \['v'\]"):
        kv_sink(postgres)


def test_create_if_not_exists_keeps_rows_and_replace_drops_them(postgres: dict) -> None:
    kv_sink(postgres, init_mode="create_if_not_exists").write(batch(KV, [{"k": "a", "v": 1}], time=5))
    kv_sink(postgres, init_mode="create_if_not_exists").write(batch(KV, [{"k": "b", "v": 2}], time=6))
    assert sorted(query(postgres, "SELECT k, v, time FROM kv")) == [("a", 1, 5), ("b", 2, 6)]
    # replace: a new table, and the old progress (time 6) no longer holds back time 3
    kv_sink(postgres, init_mode="replace").write(batch(KV, [{"k": "c", "v": 3}], time=3))
    assert query(postgres, "SELECT k, v, time FROM kv") == [("c", 3, 3)]


def test_a_replayed_batch_is_written_once(postgres: dict) -> None:
    stream = kv_sink(postgres, "changes", init_mode="create_if_not_exists")
    snapshot = kv_sink(postgres, "snap", init_mode="create_if_not_exists", table_type="snapshot", primary_key=["k"])
    first = batch(KV, [{"k": "a", "v": 1}, {"k": "b", "v": 2}], time=100)
    update = batch(KV, [{"k": "a", "v": 1}, {"k": "a", "v": 5}], time=200, diffs=[-1, 1])
    for sink in (stream, snapshot):
        sink.write(first)
        sink.write(update)
        sink.write(update)  # the step replayed after a crash that followed its commit
        sink.write(first)  # older still
    assert sorted(query(postgres, "SELECT k, v, time, diff FROM changes")) == [
        ("a", 1, 100, 1), ("a", 1, 200, -1), ("a", 5, 200, 1), ("b", 2, 100, 1)]
    assert sorted(query(postgres, "SELECT k, v, time FROM snap")) == [("a", 5, 200), ("b", 2, 100)]


def test_max_batch_size_splits_statements_not_the_transaction(postgres: dict) -> None:
    execute(postgres, "CREATE TABLE kv (k TEXT, v BIGINT CHECK (v < 5), time BIGINT, diff SMALLINT)")
    sink = kv_sink(postgres, max_batch_size=2)
    sink.write(batch(KV, [{"k": str(v), "v": v} for v in range(5)], time=1))
    assert sorted(query(postgres, "SELECT v FROM kv")) == [(v,) for v in range(5)]
    with pytest.raises(PostgresWriteError):
        sink.write(batch(KV, [{"k": "ok", "v": 1}, {"k": "ok", "v": 2}, {"k": "bad", "v": 9}], time=2))
    assert len(query(postgres, "SELECT v FROM kv")) == 5, "the chunks before the rejected one must be rolled back too"
    assert query(postgres, "SELECT time FROM sparkway_sink_progress") == [(1,)]


def test_a_rejected_row_stops_the_run_and_the_fixed_restart_replays_the_step(tmp_path: Path, postgres: dict) -> None:
    execute(postgres, "CREATE TABLE counts (word TEXT, n BIGINT CHECK (n < 3), time BIGINT, diff SMALLINT)")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("word\nok\nbusy\nbusy\nbusy\n")

    def run() -> None:
        clear()
        words = pw.io.csv.read(tmp_path / "in", schema=Words, mode="static", name="words")
        counts = words.groupby(words.word).reduce(words.word, n=pw.reducers.count())
        pw.io.postgres.write(counts, postgres, "counts")
        pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state")))

    with pytest.raises(PostgresWriteError) as failure:
        run()
    message = str(failure.value)
    assert "'counts'" in message and "word='busy', n=3" in message, message
    assert 'violates check constraint "counts_n_check"' in message, message
    assert query(postgres, "SELECT * FROM counts") == [], "a rejected step writes nothing"

    execute(postgres, "ALTER TABLE counts DROP CONSTRAINT counts_n_check")
    run()
    assert sorted(query(postgres, "SELECT word, n, diff FROM counts")) == [("busy", 3, 1), ("ok", 1, 1)]


def test_a_value_postgres_cannot_take_is_reported_with_its_row(postgres: dict) -> None:
    execute(postgres, "CREATE TABLE kv (k TEXT, v INTEGER, time BIGINT, diff SMALLINT)")
    sink = kv_sink(postgres)
    with pytest.raises(PostgresWriteError, match=r"'kv'.*k='big', v=5000000000.*integer out of range"):
        sink.write(batch(KV, [{"k": "small", "v": 1}, {"k": "big", "v": 5_000_000_000}], time=1))


def test_bad_arguments_are_refused_when_the_output_is_defined(postgres: dict) -> None:
    t = pw.debug.table_from_markdown("k | time\n a | 1")
    with pytest.raises(ValueError, match="collide with the 'time' and 'diff'"):
        pw.io.postgres.write(t, postgres, "t")
    u = pw.debug.table_from_markdown("k | v\n a | 1")
    with pytest.raises(ValueError, match="needs primary_key"):
        pw.io.postgres.write(u, postgres, "t", output_table_type="snapshot")
    with pytest.raises(ValueError, match="'nope' is not a column"):
        pw.io.postgres.write_snapshot(u, postgres, "t", ["nope"])
    pw.io.postgres.write(u, postgres, "t")
    with pytest.raises(ValueError, match="distinct name="):
        pw.io.postgres.write(u, postgres, "t")
