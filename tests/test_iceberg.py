"""``pw.io.iceberg``: real Iceberg tables in tmp_path, behind pyiceberg's SQL catalog on
SQLite, made and checked with ``pyiceberg`` itself.

Expected rows are worked out by hand from the inputs, never taken from sparkway.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

pyiceberg = pytest.importorskip("pyiceberg")
pytest.importorskip("sqlalchemy")

import sparkway as pw  # noqa: E402
from sparkway.api.graph import clear  # noqa: E402
from sparkway.connectors.base import OutputBatch  # noqa: E402
from sparkway.connectors.iceberg import IcebergError, IcebergSink, IcebergSource  # noqa: E402
from sparkway.core import dtypes  # noqa: E402
from sparkway.errors import PlanError  # noqa: E402
from tests.tables import CHANGES  # noqa: E402

pytestmark = pytest.mark.usefixtures("spark")

WAIT_S = 120
KV_ARROW = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("v", pa.int64(), nullable=False)])


class KV(pw.Schema):
    k: str = pw.column_definition(primary_key=True)
    v: int


class Plain(pw.Schema):
    k: str
    v: int


@pytest.fixture
def catalog(tmp_path: Path) -> pw.io.iceberg.SqlCatalog:
    return pw.io.iceberg.SqlCatalog(uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "warehouse"))


def pyiceberg_table(catalog: pw.io.iceberg.SqlCatalog, name: str = "kv") -> Any:
    """The table as pyiceberg's own catalog loads it (a catalog of the same database)."""
    from pyiceberg.catalog import load_catalog

    other = load_catalog("default", type="sql", uri=catalog.uri, warehouse="file://" + catalog.warehouse)
    return other.load_table(("app", name))


def append(catalog: pw.io.iceberg.SqlCatalog, rows: list[tuple[str, int]], name: str = "kv") -> None:
    """One snapshot adding these rows, written by pyiceberg (a new table at the first call)."""
    py_catalog = catalog.load()
    py_catalog.create_namespace_if_not_exists("app")
    table = py_catalog.create_table_if_not_exists(("app", name), schema=KV_ARROW)
    table.append(pa.table({"k": [k for k, _ in rows], "v": [v for _, v in rows]}, schema=KV_ARROW))


def rows_of(table: pa.Table, columns: list[str]) -> list[tuple]:
    return sorted(tuple(r[c] for c in columns) for r in table.to_pylist())


# ------------------------------------------------------------------ writing


def test_stream_of_changes_has_every_change_with_time_and_diff_one_snapshot_per_time(catalog) -> None:
    pw.io.iceberg.write(pw.debug.table_from_markdown(CHANGES), catalog, ["app"], "kv", name="out")
    pw.run()
    table = pyiceberg_table(catalog)
    expected = [("a", 1, 2, 1), ("a", 1, 4, -1), ("a", 3, 4, 1), ("b", 2, 2, 1), ("b", 2, 6, -1), ("c", 5, 4, 1)]
    assert rows_of(table.scan().to_arrow(), ["k", "v", "time", "diff"]) == expected
    assert [(f.name, str(f.field_type), f.required) for f in table.schema().fields] == [
        ("k", "string", True), ("v", "long", True), ("time", "long", True), ("diff", "long", True)]
    snapshots = table.snapshots()
    assert [s.summary.additional_properties.get("sparkway.time") for s in snapshots] == ["2", "4", "6"]
    assert {s.summary.additional_properties.get("sparkway.sink") for s in snapshots} == {"out"}
    # each snapshot holds one time whole: the rows as of the snapshot of time 4
    at_4 = table.scan(snapshot_id=snapshots[1].snapshot_id).to_arrow()
    assert sorted({r["time"] for r in at_4.to_pylist()}) == [2, 4] and at_4.num_rows == 5


def test_a_table_written_by_sparkway_reads_back_with_the_reader(catalog) -> None:
    pw.io.iceberg.write(pw.debug.table_from_markdown(CHANGES), catalog, ["app"], "kv")
    pw.run()
    clear()

    class Changes(pw.Schema):
        k: str
        v: int
        time: int
        diff: int

    got = pw.debug.table_to_pandas(pw.io.iceberg.read(catalog, ["app"], "kv", Changes, mode="static"),
                                   include_id=False)
    assert sorted(zip(got["k"], got["v"], got["time"], got["diff"])) == [
        ("a", 1, 2, 1), ("a", 1, 4, -1), ("a", 3, 4, 1), ("b", 2, 2, 1), ("b", 2, 6, -1), ("c", 5, 4, 1)]


KV_COLUMNS = {"k": dtypes.STR, "v": dtypes.INT}


def batch(rows: list[tuple[str, int, int]], time: int) -> OutputBatch:
    """(k, v, diff) rows as the runner hands them to a sink."""
    data = pa.table({"k": pa.array([r[0] for r in rows]), "v": pa.array([r[1] for r in rows], pa.int64())})
    return OutputBatch(data, time, pa.array([r[2] for r in rows], pa.int64()))


def test_a_time_replayed_after_a_crash_is_not_written_again(catalog) -> None:
    ident = ("app", "kv")
    first = batch([("a", 1, 1), ("b", 2, 1)], time=100)
    update = batch([("a", 1, -1), ("a", 9, 1), ("b", 2, -1)], time=200)
    sink = IcebergSink(catalog, ident, KV_COLUMNS, name="out")
    sink.open()
    sink.write(first)
    sink.write(update)
    restarted = IcebergSink(catalog, ident, KV_COLUMNS, name="out")  # the process died after the commit
    restarted.open()
    restarted.write(update)  # the replayed step
    restarted.write(first)
    table = pyiceberg_table(catalog)
    assert len(table.snapshots()) == 2
    assert rows_of(table.scan().to_arrow(), ["k", "v", "time", "diff"]) == [
        ("a", 1, 100, 1), ("a", 1, 200, -1), ("a", 9, 200, 1), ("b", 2, 100, 1), ("b", 2, 200, -1)]
    other = IcebergSink(catalog, ident, KV_COLUMNS, name="another")  # its own progress
    other.open()
    other.write(batch([("c", 3, 1)], time=150))
    assert len(pyiceberg_table(catalog).snapshots()) == 3
    again = IcebergSink(catalog, ident, KV_COLUMNS, name="out")  # another writer's snapshot came last
    again.open()
    again.write(update)
    assert len(pyiceberg_table(catalog).snapshots()) == 3


def test_a_persistent_program_restarted_writes_nothing_twice(tmp_path: Path, catalog) -> None:
    (tmp_path / "in").mkdir()

    class Words(pw.Schema):
        word: str

    def run() -> None:
        clear()
        words = pw.io.csv.read(tmp_path / "in", schema=Words, mode="static", name="words")
        counts = words.groupby(words.word).reduce(words.word, n=pw.reducers.count())
        pw.io.iceberg.write(counts, catalog, ["app"], "counts", name="counts")
        pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state")))

    (tmp_path / "in" / "1.csv").write_text("word\nx\ny\nx\n")
    run()
    run()  # nothing new: nothing written
    (tmp_path / "in" / "2.csv").write_text("word\ny\nz\n")
    run()
    changes = pyiceberg_table(catalog, "counts").scan().to_arrow().to_pylist()
    assert sorted((r["word"], r["n"], r["diff"]) for r in changes) == [
        ("x", 2, 1), ("y", 1, -1), ("y", 1, 1), ("y", 2, 1), ("z", 1, 1)]
    assert len({r["time"] for r in changes}) == 2


def test_values_are_written_as_iceberg_types_and_read_back_the_same(catalog) -> None:
    class Values(pw.Schema):
        i: int
        f: float
        s: str
        b: bool
        raw: bytes
        j: pw.Json
        naive: pw.DateTimeNaive
        utc: pw.DateTimeUtc
        span: pw.Duration
        opt: int | None
        ints: list[int]
        pair: tuple[str, int]

    row = {"i": 42, "f": 3.25, "s": "hello", "b": True, "raw": b"\x00\xff", "j": pw.Json({"a": 1}),
           "naive": pd.Timestamp("2026-01-15 10:30:45.123456"),
           "utc": pd.Timestamp("2026-01-15 10:30:45.5", tz="UTC"), "span": pd.Timedelta(microseconds=1500),
           "opt": None, "ints": [1, 2, 3], "pair": ("x", 7)}
    pw.io.iceberg.write(pw.debug.table_from_rows(Values, [tuple(row.values())]), catalog, ["app"], "values")
    pw.run()
    table = pyiceberg_table(catalog, "values")
    types = {f.name: (str(f.field_type), f.required) for f in table.schema().fields}
    assert {c: t for c, t in types.items() if c != "pair"} == {
        "i": ("long", True), "f": ("double", True), "s": ("string", True), "b": ("boolean", True),
        "raw": ("binary", True), "j": ("string", True), "naive": ("timestamp", True),
        "utc": ("timestamptz", True), "span": ("long", True), "opt": ("long", False),
        "ints": ("list<long>", True), "time": ("long", True), "diff": ("long", True)}
    assert types["pair"][0].startswith("struct<")
    stored = table.scan().to_arrow().to_pylist()[0]
    assert stored["naive"] == dt.datetime(2026, 1, 15, 10, 30, 45, 123456)
    assert stored["utc"] == dt.datetime(2026, 1, 15, 10, 30, 45, 500000, tzinfo=dt.timezone.utc)
    assert stored["span"] == 1500  # microseconds, as Pathway writes durations
    assert list(stored["pair"].values()) == ["x", 7] and stored["ints"] == [1, 2, 3] and stored["opt"] is None
    assert stored["j"] in ('{"a": 1}', '{"a":1}')
    clear()
    back = pw.debug.table_to_pandas(pw.io.iceberg.read(catalog, ["app"], "values", Values, mode="static"),
                                    include_id=False)
    got = back.iloc[0].to_dict()
    assert got["naive"] == row["naive"] and got["utc"] == row["utc"] and got["span"] == row["span"]
    assert got["pair"] == ("x", 7) and list(got["ints"]) == [1, 2, 3] and got["j"] == pw.Json({"a": 1})
    assert (got["i"], got["f"], got["s"], got["b"], got["raw"]) == (42, 3.25, "hello", True, b"\x00\xff")
    assert got["opt"] is None or pd.isna(got["opt"])


def test_an_existing_table_of_other_columns_is_refused_at_start(catalog) -> None:
    append(catalog, [("a", 1)])  # k, v: no time and diff
    sink = IcebergSink(catalog, ("app", "kv"), KV_COLUMNS, name="out")
    with pytest.raises(IcebergError, match=r"columns written that the table does not have: \['time', 'diff'\]"):
        sink.open()


def test_write_refuses_what_it_cannot_write(catalog) -> None:
    t = pw.debug.table_from_markdown("time | v\n 1 | 2")
    with pytest.raises(PlanError, match="collide"):
        pw.io.iceberg.write(t, catalog, ["app"], "a")
    u = pw.debug.table_from_markdown("v\n 2")
    pw.io.iceberg.write(u, catalog, ["app"], "b")
    with pytest.raises(PlanError, match="two outputs"):
        pw.io.iceberg.write(u, catalog, ["app"], "b", name="other")
    with pytest.raises(PlanError, match="catalog must be"):
        pw.io.iceberg.write(u, "http://localhost:8181", ["app"], "c")
    with pytest.raises(PlanError, match="namespace"):
        pw.io.iceberg.write(u, catalog, [], "c")
    stamped = pw.debug.table_from_rows(pw.schema_from_types(at=pw.DateTimeNaive), [(pd.Timestamp("2026-01-01"),)])
    with pytest.raises(PlanError, match="timestamp_unit='ns' needs an Iceberg v3 table"):
        pw.io.iceberg.write(stamped, catalog, ["app"], "d", timestamp_unit="ns")


def test_a_missing_pyiceberg_package_is_named_with_the_extra(monkeypatch: pytest.MonkeyPatch, catalog) -> None:
    monkeypatch.setitem(sys.modules, "pyiceberg", None)  # import pyiceberg now fails
    with pytest.raises(PlanError, match=r"pip install 'sparkway\[iceberg\]'"):
        pw.io.iceberg.write(pw.debug.table_from_markdown("v\n 2"), catalog, ["app"], "kv")


def test_importing_sparkway_and_pw_io_does_not_import_pyiceberg() -> None:
    code = ("import sys, sparkway as pw; pw.io.csv; pw.io.iceberg.SqlCatalog('sqlite:///c.db', 'wh'); "
            "print(sorted(m for m in ('pyiceberg', 'sqlalchemy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# ------------------------------------------------------------------ reading


@pytest.mark.parametrize("schema", [KV, Plain], ids=["by_key", "by_file_position"])
def test_a_static_read_gives_the_current_snapshot(catalog, schema: type[pw.Schema]) -> None:
    append(catalog, [("a", 1), ("b", 2)])
    append(catalog, [("c", 3)])
    pyiceberg_table(catalog).delete("k = 'b'")  # rewrites the first file without b
    got = pw.debug.table_to_pandas(pw.io.iceberg.read(catalog, ["app"], "kv", schema, mode="static"),
                                   include_id=False)
    assert sorted(zip(got["k"], got["v"])) == [("a", 1), ("c", 3)]


def step(source: IcebergSource) -> list[tuple[str, int, int]]:
    segments = source.discover()
    rows = source.read(segments).to_pylist()
    source.advance(segments)
    return sorted((r["k"], r["v"], r["_diff"]) for r in rows)


def test_the_source_reads_each_snapshot_once_and_continues_after_its_position(catalog) -> None:
    append(catalog, [("a", 1), ("b", 2)])
    source = IcebergSource(catalog, ("app", "kv"), Plain.columns(), autocommit_duration_ms=0, name="kv")
    source.open(None)
    first = source.discover()
    first_ids = {r["k"]: r["_id"] for r in source.read(first).to_pylist()}
    assert step(source) == [("a", 1, 1), ("b", 2, 1)]
    assert step(source) == []
    position = source.position()
    append(catalog, [("c", 3)])
    pyiceberg_table(catalog).delete("k = 'a'")  # rewrites a's file: b is retracted and inserted again
    segments = source.discover()
    assert len(segments) == 2, "one segment per snapshot"
    retracted = [r for r in source.read(segments[1:]).to_pylist() if r["_diff"] == -1]
    assert sorted(r["_id"] for r in retracted) == sorted(first_ids.values()), "retractions have the rows' ids"
    assert step(source) == [("a", 1, -1), ("b", 2, -1), ("b", 2, 1), ("c", 3, 1)]

    append(catalog, [("d", 4)])
    restarted = IcebergSource(catalog, ("app", "kv"), Plain.columns(), autocommit_duration_ms=0, name="kv")
    restarted.open(None)
    restarted.restore(position)  # the position before the append and the delete were read
    assert step(restarted) == [("a", 1, -1), ("b", 2, -1), ("b", 2, 1), ("c", 3, 1), ("d", 4, 1)]
    assert step(restarted) == []


def test_a_streaming_read_picks_up_appended_snapshots_and_deletions(catalog) -> None:
    append(catalog, [("a", 1), ("b", 2)])
    seen: list[tuple[str, int, bool]] = []
    times: list[int] = []
    changed = threading.Condition()

    def on_change(key: Any, row: dict, time: int, is_addition: bool) -> None:
        with changed:
            seen.append((row["k"], row["v"], is_addition))
            times.append(time)
            changed.notify_all()

    def wait_for(count: int) -> None:
        with changed:
            assert changed.wait_for(lambda: len(seen) >= count, timeout=WAIT_S), seen

    def edit() -> None:
        wait_for(2)
        append(catalog, [("c", 3), ("d", 4)])
        wait_for(4)
        pyiceberg_table(catalog).delete("k = 'c'")  # rewrites the file of c and d
        wait_for(5)
        os.kill(os.getpid(), signal.SIGINT)

    table = pw.io.iceberg.read(catalog, ["app"], "kv", KV, autocommit_duration_ms=10)
    pw.io.subscribe(table, on_change=on_change)
    threading.Thread(target=edit, daemon=True).start()
    pw.run()
    assert sorted(seen[:2]) == [("a", 1, True), ("b", 2, True)]
    assert sorted(seen[2:4]) == [("c", 3, True), ("d", 4, True)]
    assert seen[4:] == [("c", 3, False)], "d, retracted and inserted again at one time, does not change"
    assert times[0] < times[2] < times[4]


def test_persistence_continues_after_the_last_snapshot_read(tmp_path: Path, catalog) -> None:
    append(catalog, [("a", 1)])

    def run(output: Path) -> list[tuple[str, int, int]]:
        clear()
        table = pw.io.iceberg.read(catalog, ["app"], "kv", Plain, mode="static", name="kv")
        pw.io.csv.write(table, output)
        pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state")))
        if not output.exists() or not output.read_text().strip():
            return []
        data = pd.read_csv(output)
        return sorted(zip(data["k"], data["v"], data["diff"]))

    assert run(tmp_path / "out1.csv") == [("a", 1, 1)]
    append(catalog, [("b", 2)])
    append(catalog, [("c", 3)])
    assert run(tmp_path / "out2.csv") == [("b", 2, 1), ("c", 3, 1)]  # a is not read again
    assert run(tmp_path / "out3.csv") == []


def test_a_schema_that_does_not_fit_the_table_stops_the_run_naming_the_column(catalog) -> None:
    append(catalog, [("a", 1)])

    class WrongType(pw.Schema):
        k: int  # a string column in the table
        v: int

    wrong = pw.io.iceberg.read(catalog, ["app"], "kv", WrongType, mode="static")
    with pytest.raises(IcebergError, match=r"column 'k' holds values of type (large_)?string, which cannot be read "
                                           r"as the schema's type int"):
        pw.debug.table_to_pandas(wrong)
    clear()

    class Missing(pw.Schema):
        k: str
        w: int

    missing = pw.io.iceberg.read(catalog, ["app"], "kv", Missing, mode="static")
    with pytest.raises(IcebergError, match=r"names column\(s\) \['w'\] that the Iceberg table 'app.kv' does not"):
        pw.debug.table_to_pandas(missing)
    clear()
    nothing = pw.io.iceberg.read(catalog, ["app"], "nothing", KV, mode="static")
    with pytest.raises(IcebergError, match="there is no Iceberg table 'app.nothing'"):
        pw.debug.table_to_pandas(nothing)
