"""``pw.io.iceberg``: real Iceberg tables in tmp_path, behind pyiceberg's SQL catalog on
SQLite, made and checked with ``pyiceberg`` itself.

Expected rows are worked out by hand from the inputs, never taken from sparkway.
"""

from __future__ import annotations

import collections
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
from sparkway.connectors.iceberg import (  # noqa: E402
    IcebergChangesSink, IcebergDataFiles, IcebergError, IcebergSink, IcebergSource,
)
from sparkway.core import dtypes  # noqa: E402
from sparkway.errors import PlanError  # noqa: E402
from tests.tables import (  # noqa: E402
    CHANGES, EVERY_TYPE_ROW, EveryType, Subscribed, large_steps, take_with_a_second_attempt,
)

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
    sink = IcebergChangesSink(catalog, ident, KV_COLUMNS, name="out")
    sink.open()
    sink.write(first)
    sink.write(update)
    restarted = IcebergChangesSink(catalog, ident, KV_COLUMNS, name="out")  # the process died after the commit
    restarted.open()
    restarted.write(update)  # the replayed step
    restarted.write(first)
    table = pyiceberg_table(catalog)
    assert len(table.snapshots()) == 2
    assert rows_of(table.scan().to_arrow(), ["k", "v", "time", "diff"]) == [
        ("a", 1, 100, 1), ("a", 1, 200, -1), ("a", 9, 200, 1), ("b", 2, 100, 1), ("b", 2, 200, -1)]
    other = IcebergChangesSink(catalog, ident, KV_COLUMNS, name="another")  # its own progress
    other.open()
    other.write(batch([("c", 3, 1)], time=150))
    assert len(pyiceberg_table(catalog).snapshots()) == 3
    again = IcebergChangesSink(catalog, ident, KV_COLUMNS, name="out")  # another writer's snapshot came last
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
        pw.io.iceberg.write(counts, catalog, ["app"], "live", name="live", output_table_type="snapshot")
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
    live = pyiceberg_table(catalog, "live")
    assert rows_of(live.scan().to_arrow(), ["word", "n"]) == [("x", 2), ("y", 2), ("z", 1)]
    assert len(live.snapshots()) == 2


class Words(pw.Schema):
    word: str


def changes_by_snapshot(catalog: pw.io.iceberg.SqlCatalog, name: str) -> list[tuple[list[tuple], int]]:
    """Per snapshot, the rows (word, n, diff) it added and how many data files; every row
    a snapshot adds has the time its summary records."""
    table = pyiceberg_table(catalog, name)
    seen: collections.Counter = collections.Counter()
    found = []
    for snapshot in table.snapshots():
        rows = collections.Counter(tuple(r.values()) for r in table.scan(
            snapshot_id=snapshot.snapshot_id, selected_fields=("word", "n", "time", "diff")).to_arrow().to_pylist())
        added = rows - seen
        assert sum(added.values()) == rows.total() - seen.total(), "a snapshot only adds rows"
        assert {t for _, _, t, _ in added} == {int(snapshot.summary["sparkway.time"])}
        found.append((sorted((w, n, d) for w, n, _, d in added.elements()), int(snapshot.summary["added-data-files"])))
        seen = rows
    return found


def test_a_large_step_s_data_files_are_written_by_spark_s_tasks_and_committed_in_one_snapshot(
    tmp_path: Path, catalog, monkeypatch: pytest.MonkeyPatch,
) -> None:
    words = [f"w{i}" for i in range(40)]
    first = sorted((w, 1, 1) for w in words)
    second = sorted([(w, 1, -1) for w in words[:30]] + [(w, 2, 1) for w in words[:30]])

    def run_twice(name: str) -> list[tuple[list[tuple], int]]:
        folder = tmp_path / name
        (folder / "in").mkdir(parents=True)
        for number, text in enumerate(["word\n" + "\n".join(words) + "\n", "word\n" + "\n".join(words[:30]) + "\n"]):
            (folder / "in" / f"{number}.csv").write_text(text)
            clear()
            counts = pw.io.csv.read(folder / "in", schema=Words, mode="static", name="words")
            counts = counts.groupby(counts.word).reduce(counts.word, n=pw.reducers.count())
            pw.io.iceberg.write(counts, catalog, ["app"], name, name=name)
            pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(folder / "state")))
        return changes_by_snapshot(catalog, name)

    assert [rows for rows, _ in run_twice("small")] == [first, second]
    written_here = large_steps(monkeypatch, IcebergDataFiles)
    large = run_twice("large")
    assert [rows for rows, _ in large] == [first, second], "one snapshot per time"
    assert all(files > 1 for _, files in large), "data files per piece"
    assert written_here == [], "the data files were written by the tasks, not by the driver"


def data_files(catalog: pw.io.iceberg.SqlCatalog) -> list[str]:
    return sorted(str(path) for path in Path(catalog.warehouse).rglob("*.parquet"))


def test_a_second_attempt_s_data_file_never_shows_up_and_a_replayed_time_is_written_once(catalog) -> None:
    ident = ("app", "kv")
    pieces = [batch([("a", 1, 1)], time=100), batch([("b", 2, 1)], time=100)]
    sink = IcebergChangesSink(catalog, ident, KV_COLUMNS, name="out")
    sink.open()
    take_with_a_second_attempt(sink, pieces, 100)
    expected = [("a", 1, 100, 1), ("b", 2, 100, 1)]
    table = pyiceberg_table(catalog)
    on_disk = data_files(catalog)
    assert len(table.snapshots()) == 1 and len(on_disk) == 3
    assert table.current_snapshot().summary["added-data-files"] == "2"
    assert rows_of(table.scan().to_arrow(), ["k", "v", "time", "diff"]) == expected
    restarted = IcebergChangesSink(catalog, ident, KV_COLUMNS, name="out")  # the process died after the commit
    restarted.open()
    for piece in pieces:  # the replayed step
        restarted.take_piece(100, restarted.piece_writer().write_piece(piece))
    restarted.end_time(100)
    table = pyiceberg_table(catalog)
    assert len(table.snapshots()) == 1
    assert rows_of(table.scan().to_arrow(), ["k", "v", "time", "diff"]) == expected
    assert data_files(catalog) == on_disk, "the replay's files are removed"


def test_values_are_written_as_iceberg_types_and_read_back_the_same(catalog) -> None:
    Values, row = EveryType, EVERY_TYPE_ROW
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


# ------------------------------------------------------------------ writing a snapshot

#: inserts, updates (an id retracted and inserted at one time), deletes, and a deleted id
#: inserted again, over five times
SNAPSHOT_CHANGES = """
  id | k | v  | __time__ | __diff__
  1  | a | 1  | 2        | 1
  2  | b | 2  | 2        | 1
  3  | c | 3  | 2        | 1
  1  | a | 1  | 4        | -1
  1  | a | 10 | 4        | 1
  2  | b | 2  | 4        | -1
  4  | d | 4  | 4        | 1
  3  | c | 3  | 6        | -1
  3  | c | 30 | 6        | 1
  2  | b | 20 | 6        | 1
  4  | d | 4  | 8        | -1
  1  | a | 10 | 8        | -1
  5  | e | 5  | 10       | 1
"""


def live_rows_by_time(markdown: str) -> dict[int, list[tuple]]:
    """Per time of the input, its live (k, v) rows after that time: the input's changes
    replayed by hand, by their id, retractions of a time before its insertions."""
    lines = [line.split("|") for line in markdown.strip().splitlines()[1:]]
    changes = sorted((int(t), int(d), int(i), k.strip(), int(v)) for i, k, v, t, d in lines)
    live: dict[int, tuple] = {}
    states = {}
    for time, diff, row_id, k, v in changes:
        if diff < 0:
            assert live.pop(row_id) == (k, v)
        else:
            live[row_id] = (k, v)
        states[time] = sorted(live.values())
    return states


def sink_snapshots(table: Any, sink: str) -> list[Any]:
    """The snapshots of ``sink``, oldest first."""
    return [s for s in table.snapshots() if s.summary.additional_properties.get("sparkway.sink") == sink]


def test_the_expected_states_are_the_inputs_replayed() -> None:
    # the expectation, checked by hand once: the replay is the test's, not sparkway's
    assert live_rows_by_time(SNAPSHOT_CHANGES) == {
        2: [("a", 1), ("b", 2), ("c", 3)], 4: [("a", 10), ("c", 3), ("d", 4)],
        6: [("a", 10), ("b", 20), ("c", 30), ("d", 4)], 8: [("b", 20), ("c", 30)],
        10: [("b", 20), ("c", 30), ("e", 5)]}


def test_snapshot_keeps_the_live_rows_by_id_and_each_snapshot_holds_a_whole_time(catalog) -> None:
    pw.io.iceberg.write(pw.debug.table_from_markdown(SNAPSHOT_CHANGES), catalog, ["app"], "kv", name="snap",
                        output_table_type="snapshot")
    pw.run()
    expected = live_rows_by_time(SNAPSHOT_CHANGES)
    table = pyiceberg_table(catalog)
    assert rows_of(table.scan().to_arrow(), ["k", "v"]) == expected[10]
    assert [(f.name, str(f.field_type), f.required) for f in table.schema().fields] == [
        ("k", "string", True), ("v", "long", True), ("_id", "string", True)]
    snapshots = sink_snapshots(table, "snap")
    assert len(snapshots) == len(table.snapshots()) == len(expected), "one snapshot per time, all the sink's"
    ids = {}
    for snapshot in snapshots:
        time = int(snapshot.summary.additional_properties["sparkway.time"])
        rows = table.scan(snapshot_id=snapshot.snapshot_id).to_arrow()
        assert rows_of(rows, ["k", "v"]) == expected[time], f"the snapshot of time {time}"
        for row in rows.to_pylist():
            assert ids.setdefault(row["k"], row["_id"]) == row["_id"], "a row keeps its id across updates"
    assert len(set(ids.values())) == 5 and all(i.startswith("^") and len(i) == 17 for i in ids.values())


def test_a_reader_of_the_snapshot_table_gets_each_time_as_one_transaction(catalog) -> None:
    pw.io.iceberg.write(pw.debug.table_from_markdown(SNAPSHOT_CHANGES), catalog, ["app"], "kv", name="snap",
                        output_table_type="snapshot")
    pw.run()
    expected = live_rows_by_time(SNAPSHOT_CHANGES)
    source = IcebergSource(catalog, ("app", "kv"), KV.columns(), autocommit_duration_ms=0, name="kv")
    source.open(None)
    source.advance([{"snapshot": sink_snapshots(pyiceberg_table(catalog), "snap")[0].snapshot_id}])
    segments = source.discover()
    assert len(segments) == len(expected) - 1
    live = collections.Counter(expected[2])
    for segment, time in zip(segments, sorted(expected)[1:]):
        for row in source.read([segment]).to_pylist():
            live[(row["k"], row["v"])] += row["_diff"]
        assert all(n in (0, 1) for n in live.values()), f"time {time}: a row retracted twice, or inserted twice"
        assert sorted(+live) == expected[time], f"the snapshot of time {time}, read as one transaction"


def keyed_batch(rows: list[tuple[int, str, int, int]], time: int) -> OutputBatch:
    """(id, k, v, diff) rows as the runner hands them to a sink, with their row ids."""
    plain = batch([(k, v, diff) for _, k, v, diff in rows], time)
    return OutputBatch(plain.table, time, plain.diffs, ids=pa.array([r[0] for r in rows], pa.int64()))


def test_a_snapshot_time_replayed_after_a_crash_is_not_written_again(catalog) -> None:
    ident = ("app", "kv")
    first = keyed_batch([(1, "a", 1, 1), (2, "b", 2, 1)], time=100)
    update = keyed_batch([(1, "a", 1, -1), (1, "a", 9, 1), (2, "b", 2, -1), (3, "c", 3, 1)], time=200)
    sink = IcebergSink(catalog, ident, KV_COLUMNS, name="out")
    sink.open()
    sink.write(first)
    sink.write(update)
    restarted = IcebergSink(catalog, ident, KV_COLUMNS, name="out")  # died after the commit
    restarted.open()
    restarted.write(update)  # the replayed step
    restarted.write(first)  # an older one: applied again, it would bring b back
    table = pyiceberg_table(catalog)
    assert len(table.snapshots()) == 2
    assert rows_of(table.scan().to_arrow(), ["k", "v", "_id"]) == [
        ("a", 9, "^0000000000000001"), ("c", 3, "^0000000000000003")]
    other = IcebergSink(catalog, ident, KV_COLUMNS, name="another")  # its own progress
    other.open()
    other.write(keyed_batch([(4, "d", 4, 1)], time=150))
    again = IcebergSink(catalog, ident, KV_COLUMNS, name="out")  # another's snapshot last
    again.open()
    again.write(first)
    table = pyiceberg_table(catalog)
    assert len(table.snapshots()) == 3
    assert rows_of(table.scan().to_arrow(), ["k", "v"]) == [("a", 9), ("c", 3), ("d", 4)]
    again.write(keyed_batch([(3, "c", 3, -1), (9, "x", 0, -1)], time=300))  # x: retracted, never written
    assert rows_of(pyiceberg_table(catalog).scan().to_arrow(), ["k", "v"]) == [("a", 9), ("d", 4)]


def test_a_snapshot_rewrite_keeps_the_other_rows_values(catalog) -> None:
    """The rows left in a data file that a time rewrites are written back as they were."""
    columns = {"s": dtypes.STR, "utc": dtypes.DATE_TIME_UTC, "span": dtypes.DURATION,
               "ints": dtypes.DType("list", (dtypes.INT,)), "pair": dtypes.DType("tuple", (dtypes.STR, dtypes.INT)),
               "opt": dtypes.DType("int", optional=True)}
    ns = 1_768_473_045_500_000_000  # 2026-01-15 10:30:45.5 UTC

    def changes(rows: list[tuple[int, str, int]], time: int) -> OutputBatch:
        data = pa.table({"s": [r[1] for r in rows], "utc": pa.array([ns] * len(rows), pa.int64()),
                         "span": pa.array([1_500_000] * len(rows), pa.int64()),
                         "ints": pa.array([[1, 2]] * len(rows), pa.list_(pa.int64())),
                         "pair": pa.array([{"0": "x", "1": 7}] * len(rows),
                                          pa.struct([("0", pa.string()), ("1", pa.int64())])),
                         "opt": pa.array([None] * len(rows), pa.int64())})
        return OutputBatch(data, time, pa.array([r[2] for r in rows], pa.int64()),
                           ids=pa.array([r[0] for r in rows], pa.int64()))

    sink = IcebergSink(catalog, ("app", "values"), columns, name="values")
    sink.open()
    sink.write(changes([(1, "kept", 1), (2, "gone", 1)], time=1))  # one data file of both rows
    sink.write(changes([(2, "gone", -1)], time=2))  # rewrites it with "kept" alone
    table = pyiceberg_table(catalog, "values")
    assert table.snapshots()[-1].summary["deleted-data-files"] == "1"
    (kept,) = table.scan().to_arrow().to_pylist()
    assert kept["s"] == "kept" and kept["utc"] == dt.datetime(2026, 1, 15, 10, 30, 45, 500000, tzinfo=dt.timezone.utc)
    assert kept["span"] == 1500 and kept["ints"] == [1, 2] and list(kept["pair"].values()) == ["x", 7]
    assert kept["opt"] is None and kept["_id"] == "^0000000000000001"


def test_a_table_of_the_other_layout_is_refused_saying_which_it_is(catalog) -> None:
    stream = IcebergChangesSink(catalog, ("app", "changes"), KV_COLUMNS, name="out")
    stream.open()
    as_snapshot = IcebergSink(catalog, ("app", "changes"), KV_COLUMNS, name="out")
    with pytest.raises(IcebergError, match=r"\(snapshot\): columns written that the table does not have: \['_id'\]; "
                                           r"columns of the table that are not written: \['time', 'diff'\]\. "
                                           r"The table holds a stream of changes"):
        as_snapshot.open()
    IcebergSink(catalog, ("app", "live"), KV_COLUMNS, name="out").open()
    with pytest.raises(IcebergError, match="The table holds a snapshot .* write it with output_table_type='snapshot'"):
        IcebergChangesSink(catalog, ("app", "live"), KV_COLUMNS, name="out").open()
    append(catalog, [("a", 1)])  # k, v: no _id
    with pytest.raises(IcebergError, match=r"columns written that the table does not have: \['_id'\]\. Write"):
        IcebergSink(catalog, ("app", "kv"), KV_COLUMNS, name="out").open()


def test_an_existing_table_of_other_columns_is_refused_at_start(catalog) -> None:
    append(catalog, [("a", 1)])  # k, v: no time and diff
    sink = IcebergChangesSink(catalog, ("app", "kv"), KV_COLUMNS, name="out")
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
    with pytest.raises(PlanError, match=r"column\(s\) \['_id'\] collide"):
        pw.io.iceberg.write(pw.debug.table_from_markdown("_id | v\n 1 | 2"), catalog, ["app"], "e",
                            output_table_type="snapshot")
    with pytest.raises(PlanError, match="output_table_type must be 'stream_of_changes' or 'snapshot'"):
        pw.io.iceberg.write(u, catalog, ["app"], "f", output_table_type="upsert")
    pw.io.iceberg.write(t, catalog, ["app"], "g", output_table_type="snapshot")  # time is a column like others
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
    changes = Subscribed(pw.io.iceberg.read(catalog, ["app"], "kv", KV, autocommit_duration_ms=10), "k", "v",
                         timeout=WAIT_S)

    def edit() -> None:
        changes.wait_for(2)
        append(catalog, [("c", 3), ("d", 4)])
        changes.wait_for(4)
        pyiceberg_table(catalog).delete("k = 'c'")  # rewrites the file of c and d
        changes.wait_for(5)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=edit, daemon=True).start()
    pw.run()
    seen, times = changes.seen, changes.times
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
