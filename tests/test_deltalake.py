"""``pw.io.deltalake``: real Delta tables in tmp_path, made and checked with the
``deltalake`` package (delta-rs) and with plain PySpark reading the Parquet data files.

Expected rows are worked out by hand from the inputs, never taken from sparkway.  The
Delta types a column gets are Pathway's (its engine's mapping, ``delta_table_type``):
long, double, string, boolean, binary, timestamp_ntz, timestamp (UTC), arrays, structs
with fields ``[0]``, ``[1]``...; durations as microseconds in a long.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

deltalake = pytest.importorskip("deltalake")

import sparkway as pw  # noqa: E402
from sparkway.api.graph import clear  # noqa: E402
from sparkway.connectors.base import OutputBatch  # noqa: E402
from sparkway.connectors.deltalake import (  # noqa: E402
    DeltaChangesSink, DeltaDataFiles, DeltaLakeError, DeltaSink, DeltaSource,
)
from sparkway.core import dtypes  # noqa: E402
from sparkway.errors import PlanError  # noqa: E402
from tests.tables import (  # noqa: E402
    CHANGES, EVERY_TYPE_ROW, EveryType, Subscribed, large_steps, take_with_a_second_attempt,
)

pytestmark = pytest.mark.usefixtures("spark")

WAIT_S = 120


class KV(pw.Schema):
    k: str = pw.column_definition(primary_key=True)
    v: int


class Plain(pw.Schema):
    k: str
    v: int


def append(uri: Path, rows: list[tuple[str, int]]) -> None:
    """One Delta commit adding these rows (a new table at the first call)."""
    data = pa.table({"k": pa.array([k for k, _ in rows], pa.string()), "v": pa.array([v for _, v in rows], pa.int64())})
    deltalake.write_deltalake(str(uri), data, mode="append")


def rows_of(table: Any, columns: list[str]) -> list[tuple]:
    data = table.to_pylist()
    return sorted(tuple(r[c] for c in columns) for r in data)


# ------------------------------------------------------------------ reading


@pytest.mark.parametrize("schema", [KV, Plain], ids=["by_key", "by_file_position"])
def test_a_static_read_gives_the_current_version(tmp_path: Path, schema: type[pw.Schema]) -> None:
    lake = tmp_path / "lake"
    append(lake, [("a", 1), ("b", 2)])
    append(lake, [("c", 3)])
    deltalake.DeltaTable(str(lake)).delete("k = 'b'")  # version 2 rewrites the first file without b
    table = pw.io.deltalake.read(lake, schema, mode="static")
    got = pw.debug.table_to_pandas(table, include_id=False)
    assert sorted(zip(got["k"], got["v"])) == [("a", 1), ("c", 3)]


def test_a_row_with_a_null_in_a_column_that_may_not_hold_none_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    lake = tmp_path / "lake"
    deltalake.write_deltalake(str(lake), pa.table({"k": ["a", "b", "c"], "v": pa.array([1, None, 3], pa.int64())}))
    source = DeltaSource(str(lake), Plain.columns(), autocommit_duration_ms=0, name="kv")
    source.open(None)
    with caplog.at_level(logging.WARNING, logger="sparkway"):
        rows = source.read(source.discover()).to_pylist()
    assert sorted((r["k"], r["v"], r["_diff"]) for r in rows) == [("a", 1, 1), ("c", 3, 1)]
    assert "1 rows of" in caplog.text and "a column that may not hold None holds a null" in caplog.text


def test_the_source_reads_each_version_once_and_continues_after_its_position(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    append(lake, [("a", 1), ("b", 2)])
    source = DeltaSource(str(lake), Plain.columns(), autocommit_duration_ms=0, name="kv")
    source.open(None)

    def step(src: DeltaSource) -> list[tuple[str, int, int]]:
        segments = src.discover()
        rows = src.read(segments).to_pylist()
        src.advance(segments)
        return sorted((r["k"], r["v"], r["_diff"]) for r in rows)

    assert step(source) == [("a", 1, 1), ("b", 2, 1)]
    assert step(source) == []
    append(lake, [("c", 3)])
    deltalake.DeltaTable(str(lake)).delete("k = 'a'")
    first_ids = {r["k"]: r["_id"] for r in source.read([{"version": 0, "snapshot": True}]).to_pylist()}
    retracted = [r for r in source.read([{"version": 2}]).to_pylist() if r["_diff"] == -1]
    assert [r["_id"] for r in retracted if r["k"] == "a"] == [first_ids["a"]], "a retraction has the row's id"
    position = source.position()
    assert step(source) == [("a", 1, -1), ("b", 2, -1), ("b", 2, 1), ("c", 3, 1)]
    assert source.position()["version"] == 2

    append(lake, [("d", 4)])
    restarted = DeltaSource(str(lake), Plain.columns(), autocommit_duration_ms=0, name="kv")
    restarted.open(None)
    restarted.restore(position)  # the position before versions 1 and 2 were read
    assert step(restarted) == [("a", 1, -1), ("b", 2, -1), ("b", 2, 1), ("c", 3, 1), ("d", 4, 1)]
    assert step(restarted) == []


def test_rows_without_a_key_keep_consistent_ids_across_an_optimize(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    append(lake, [("a", 1)])
    append(lake, [("b", 2)])
    source = DeltaSource(str(lake), Plain.columns(), autocommit_duration_ms=0, name="kv")
    source.open(None)
    live: dict[int, tuple] = {}

    def step() -> int:
        segments = source.discover()
        rows = source.read(segments).to_pylist()
        source.advance(segments)
        for r in sorted(rows, key=lambda r: r["_diff"]):  # retractions first
            if r["_diff"] < 0:
                assert live.pop(r["_id"]) == (r["k"], r["v"]), "a retraction of a row not live"
            else:
                assert r["_id"] not in live
                live[r["_id"]] = (r["k"], r["v"])
        return len(rows)

    step()
    assert sorted(live.values()) == [("a", 1), ("b", 2)]
    deltalake.DeltaTable(str(lake)).optimize.compact()  # one file instead of two: dataChange false
    assert step() == 4
    assert sorted(live.values()) == [("a", 1), ("b", 2)]
    deltalake.DeltaTable(str(lake)).delete("k = 'a'")
    step()
    assert sorted(live.values()) == [("b", 2)]

    keyed = DeltaSource(str(lake), KV.columns(), autocommit_duration_ms=0, name="kv")
    keyed.open(None)
    keyed.restore({"uri": str(lake), "version": 1})
    assert [s["version"] for s in keyed.discover()] == [2, 3]
    assert keyed.read([{"version": 2}]).num_rows == 0, "with a key, a rewrite of files is no change"


def test_a_streaming_read_picks_up_appended_versions_and_deletions(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    append(lake, [("a", 1), ("b", 2)])
    changes = Subscribed(pw.io.deltalake.read(lake, KV, autocommit_duration_ms=10), "k", "v", timeout=WAIT_S)

    def edit() -> None:
        changes.wait_for(2)
        append(lake, [("c", 3), ("d", 4)])
        changes.wait_for(4)
        deltalake.DeltaTable(str(lake)).update(updates={"v": "20"}, predicate="k = 'b'")
        changes.wait_for(6)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=edit, daemon=True).start()
    pw.run()
    seen, times = changes.seen, changes.times
    assert sorted(seen[:2]) == [("a", 1, True), ("b", 2, True)]
    assert sorted(seen[2:4]) == [("c", 3, True), ("d", 4, True)]
    # the update rewrote the file holding a and b: only b changed, at one time
    assert sorted(seen[4:]) == [("b", 2, False), ("b", 20, True)]
    assert times[4] == times[5] > times[2]


def test_persistence_continues_after_the_last_version_read(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    out = tmp_path / "out.csv"
    append(lake, [("a", 1)])

    def run(output: Path) -> list[tuple[str, int, int]]:
        clear()
        table = pw.io.deltalake.read(lake, Plain, mode="static", name="kv")
        pw.io.csv.write(table, output)
        pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state")))
        if not output.exists() or not output.read_text().strip():
            return []
        data = pd.read_csv(output)
        return sorted(zip(data["k"], data["v"], data["diff"]))

    assert run(out) == [("a", 1, 1)]
    append(lake, [("b", 2)])
    append(lake, [("c", 3)])
    assert run(tmp_path / "out2.csv") == [("b", 2, 1), ("c", 3, 1)]  # a is not read again
    assert run(tmp_path / "out3.csv") == []


def test_a_table_written_by_sparkway_is_read_without_a_schema(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    t = pw.debug.table_from_markdown("k | v\n x | 1\n y | 2")
    pw.io.deltalake.write(t, lake)
    pw.run()
    clear()
    read = pw.io.deltalake.read(lake, mode="static")
    assert read.column_names() == ["k", "v"]  # time and diff are left out
    got = pw.debug.table_to_pandas(read, include_id=False)
    assert sorted(zip(got["k"], got["v"])) == [("x", 1), ("y", 2)]


def test_a_table_without_a_stored_schema_needs_one(tmp_path: Path) -> None:
    append(tmp_path / "lake", [("a", 1)])
    with pytest.raises(PlanError, match="give schema="):
        pw.io.deltalake.read(tmp_path / "lake", mode="static")
    with pytest.raises(DeltaLakeError, match="no Delta table"):
        pw.io.deltalake.read(tmp_path / "nothing", mode="static")


# ------------------------------------------------------------------ writing




def spark_rows(spark: Any, uris: list[str], columns: list[str]) -> list[tuple]:
    """The rows of the Delta table's current data files, as plain Spark reads Parquet."""
    frame = spark.read.parquet(*uris)
    return sorted(tuple(r[c] for c in columns) for r in frame.collect())


def test_stream_of_changes_has_every_change_with_time_and_diff(tmp_path: Path, spark: Any) -> None:
    lake = tmp_path / "lake"
    pw.io.deltalake.write(pw.debug.table_from_markdown(CHANGES), lake)
    pw.run()
    table = deltalake.DeltaTable(str(lake))
    expected = [("a", 1, 2, 1), ("a", 1, 4, -1), ("a", 3, 4, 1), ("b", 2, 2, 1), ("b", 2, 6, -1), ("c", 5, 4, 1)]
    assert rows_of(table.to_pyarrow_table(), ["k", "v", "time", "diff"]) == expected
    assert spark_rows(spark, table.file_uris(), ["k", "v", "time", "diff"]) == expected
    assert table.version() == 3, "one commit per time, after the table's creation"
    schema = pa.schema(table.schema().to_arrow())
    assert [(f.name, str(f.type), f.nullable) for f in schema] == [
        ("k", "string", False), ("v", "int64", False), ("time", "int64", False), ("diff", "int64", False)]
    assert table.metadata().configuration == {"delta.appendOnly": "true"}
    commits = {h["version"]: h.get("sparkway.time") for h in table.history()}
    assert commits == {0: None, 1: "2", 2: "4", 3: "6"}
    assert table.transaction_version("sparkway-deltalake") == 6


def test_snapshot_keeps_the_live_rows_by_id(tmp_path: Path, spark: Any) -> None:
    lake = tmp_path / "lake"
    pw.io.deltalake.write(pw.debug.table_from_markdown(CHANGES), lake, output_table_type="snapshot",
                          name="snap")
    pw.run()
    table = deltalake.DeltaTable(str(lake))
    assert rows_of(table.to_pyarrow_table(), ["k", "v"]) == [("a", 3), ("c", 5)]
    assert spark_rows(spark, table.file_uris(), ["k", "v"]) == [("a", 3), ("c", 5)]
    ids = table.to_pyarrow_table().column("_id").to_pylist()
    assert len(set(ids)) == 2 and all(i.startswith("^") and len(i) == 17 for i in ids)
    assert table.transaction_version("sparkway-snap") == 6
    # each version is one time: reading version 2 shows the state after time 4 whole
    at_4 = deltalake.DeltaTable(str(lake), version=2).to_pyarrow_table()
    assert rows_of(at_4, ["k", "v"]) == [("a", 3), ("b", 2), ("c", 5)]


KV_COLUMNS = {"k": dtypes.STR, "v": dtypes.INT}


def batch(rows: list[tuple[int, str, int, int]], time: int) -> OutputBatch:
    """(id, k, v, diff) rows as the runner hands them to a sink."""
    data = pa.table({"k": pa.array([r[1] for r in rows]), "v": pa.array([r[2] for r in rows], pa.int64())})
    return OutputBatch(data, time, pa.array([r[3] for r in rows], pa.int64()), ids=pa.array([r[0] for r in rows]))


def kv_sink(lake: str, table_type: str, name: str) -> DeltaSink:
    """The sink ``pw.io.deltalake.write`` makes for an unpartitioned table of this layout."""
    if table_type == "snapshot":
        return DeltaSink(lake, KV_COLUMNS, table_type=table_type, name=name)
    return DeltaChangesSink(lake, KV_COLUMNS, name=name)


@pytest.mark.parametrize("table_type", ["stream_of_changes", "snapshot"])
def test_a_time_replayed_after_a_crash_is_not_written_again(tmp_path: Path, table_type: str) -> None:
    lake = str(tmp_path / "lake")
    first = batch([(1, "a", 1, 1), (2, "b", 2, 1)], time=100)
    update = batch([(1, "a", 1, -1), (1, "a", 9, 1), (2, "b", 2, -1)], time=200)
    sink = kv_sink(lake, table_type, "out")
    sink.open()
    sink.write(first)
    sink.write(update)
    restarted = kv_sink(lake, table_type, "out")  # the process died after the commit
    restarted.open()
    restarted.write(update)  # the replayed step
    restarted.write(first)
    table = deltalake.DeltaTable(lake)
    assert table.version() == 2
    if table_type == "snapshot":
        assert rows_of(table.to_pyarrow_table(), ["k", "v"]) == [("a", 9)]
    else:
        assert rows_of(table.to_pyarrow_table(), ["k", "v", "time", "diff"]) == [
            ("a", 1, 100, 1), ("a", 1, 200, -1), ("a", 9, 200, 1), ("b", 2, 100, 1), ("b", 2, 200, -1)]
    other = kv_sink(lake, table_type, "another")  # its own progress
    other.open()
    other.write(batch([(3, "c", 3, 1)], time=150))
    assert deltalake.DeltaTable(lake).version() == 3


def test_a_persistent_program_restarted_writes_nothing_twice(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    lake = tmp_path / "lake"
    snap = tmp_path / "snap"

    class Words(pw.Schema):
        word: str

    def run() -> None:
        clear()
        words = pw.io.csv.read(tmp_path / "in", schema=Words, mode="static", name="words")
        counts = words.groupby(words.word).reduce(words.word, n=pw.reducers.count())
        pw.io.deltalake.write(counts, lake, name="changes")
        pw.io.deltalake.write(counts, snap, output_table_type="snapshot", name="snap")
        pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state")))

    (tmp_path / "in" / "1.csv").write_text("word\nx\ny\nx\n")
    run()
    run()  # nothing new: nothing written
    (tmp_path / "in" / "2.csv").write_text("word\ny\nz\n")
    run()
    changes = deltalake.DeltaTable(str(lake)).to_pyarrow_table()
    rows = sorted((r["word"], r["n"], r["diff"]) for r in changes.to_pylist())
    assert rows == [("x", 2, 1), ("y", 1, -1), ("y", 1, 1), ("y", 2, 1), ("z", 1, 1)]
    assert len({r["time"] for r in changes.to_pylist()}) == 2
    assert rows_of(deltalake.DeltaTable(str(snap)).to_pyarrow_table(), ["word", "n"]) == [("x", 2), ("y", 2), ("z", 1)]


class Words(pw.Schema):
    word: str


def count_words(folder: Path, lake: Path) -> None:
    """A persistent word count of ``folder/in`` written to ``lake`` as a stream of changes."""
    clear()
    words = pw.io.csv.read(folder / "in", schema=Words, mode="static", name="words")
    counts = words.groupby(words.word).reduce(words.word, n=pw.reducers.count())
    pw.io.deltalake.write(counts, lake, name="counts")
    pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(folder / "state")))


def changes_by_version(lake: Path) -> dict[int, tuple[list[tuple[str, int, int]], int]]:
    """Per version after the table's creation, its rows (word, n, diff) and how many data
    files it added; every row of a version has the time its commit records."""
    table = deltalake.DeltaTable(str(lake))
    times = {h["version"]: h.get("sparkway.time") for h in table.history()}
    versions = {}
    for version in range(1, table.version() + 1):
        before = set(deltalake.DeltaTable(str(lake), version=version - 1).file_uris())
        added = [uri for uri in deltalake.DeltaTable(str(lake), version=version).file_uris() if uri not in before]
        rows = [row for uri in added for row in pq.read_table(uri).to_pylist()]
        assert {str(r["time"]) for r in rows} == {times[version]}, "a version holds its time's rows"
        versions[version] = (sorted((r["word"], r["n"], r["diff"]) for r in rows), len(added))
    return versions


def test_a_large_step_s_data_files_are_written_by_spark_s_tasks_and_committed_in_one_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    words = [f"w{i}" for i in range(40)]
    first = sorted((w, 1, 1) for w in words)
    second = sorted([(w, 1, -1) for w in words[:30]] + [(w, 2, 1) for w in words[:30]])

    def run_twice(folder: Path) -> dict[int, tuple[list[tuple[str, int, int]], int]]:
        (folder / "in").mkdir(parents=True)
        (folder / "in" / "a.csv").write_text("word\n" + "\n".join(words) + "\n")
        count_words(folder, folder / "lake")
        (folder / "in" / "b.csv").write_text("word\n" + "\n".join(words[:30]) + "\n")
        count_words(folder, folder / "lake")
        return changes_by_version(folder / "lake")

    small = run_twice(tmp_path / "small")
    assert {v: rows for v, (rows, _) in small.items()} == {1: first, 2: second}
    written_here = large_steps(monkeypatch, DeltaDataFiles)
    large = run_twice(tmp_path / "large")
    assert {v: rows for v, (rows, _) in large.items()} == {1: first, 2: second}, "one version per time"
    assert all(files > 1 for _, files in large.values()), "a data file per piece"
    assert written_here == [], "the data files were written by the tasks, not by the driver"


class Events(pw.Schema):
    day: str | None
    hot: bool
    at: pw.DateTimeNaive
    n: int


def test_a_partitioned_table_s_data_files_are_written_by_spark_s_tasks_a_file_per_partition_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Partition values that need escaping in a folder name (a space, a slash, an equals
    sign), a null one, booleans and date-times: each data file lies in its partition's
    folder without the partition columns, and delta-rs and sparkway read back the rows."""
    days = ["d 1", "x/y=z", None]
    noon = dt.datetime(2024, 5, 1, 12)
    rows = [(days[i % 3], i % 2 == 0, noon + dt.timedelta(hours=i % 2), i) for i in range(40)]
    written_here = large_steps(monkeypatch, DeltaDataFiles)
    lake = tmp_path / "lake"
    events = pw.debug.table_from_rows(Events, rows)
    pw.io.deltalake.write(events, lake, partition_columns=[events.day, events.at, events.hot])
    pw.run()
    assert written_here == [], "the data files were written by the tasks, not by the driver"

    table = deltalake.DeltaTable(str(lake))
    assert table.version() == 1 and table.metadata().partition_columns == ["day", "at", "hot"]
    back = table.to_pyarrow_table()
    assert sorted((r["day"] or "", r["hot"], r["at"], r["n"], r["diff"]) for r in back.to_pylist()) == \
        sorted((d or "", h, a, n, 1) for d, h, a, n in rows)
    folders = collections.Counter()
    for uri in table.file_uris():
        assert pq.read_table(uri).column_names == ["n", "time", "diff"]
        folders[os.path.relpath(os.path.dirname(uri), lake)] += 1
    assert sorted(folders) == sorted(
        f"day={d}/at=2024-05-01%20{h}%3A00%3A00.000000/hot={hot}"
        for d in ("d%201", "x%2Fy%3Dz", "__HIVE_DEFAULT_PARTITION__") for h, hot in (("12", "true"), ("13", "false")))
    assert sum(folders.values()) > len(folders), "a file per partition value in each piece"
    clear()

    read = pw.io.deltalake.read(lake, Events, mode="static")
    ours = pw.debug.table_to_pandas(read, include_id=False)
    assert sorted((d or "", h, a.to_pydatetime(), n) for d, h, a, n in zip(ours["day"], ours["hot"], ours["at"], ours["n"])) \
        == sorted((d or "", h, a, n) for d, h, a, n in rows)


def test_a_second_attempt_at_a_partitioned_piece_never_shows_up(tmp_path: Path) -> None:
    lake = str(tmp_path / "lake")
    pieces = [batch([(1, "a", 1, 1), (2, "b", 2, 1)], time=100), batch([(3, "a", 3, 1)], time=100)]
    sink = DeltaChangesSink(lake, KV_COLUMNS, partition_columns=["k"], name="out")
    sink.open()
    take_with_a_second_attempt(sink, pieces, 100)
    table = deltalake.DeltaTable(lake)
    on_disk = [os.path.join(folder, name) for folder, _, names in os.walk(lake) for name in names
               if name.endswith(".parquet")]
    assert table.version() == 1 and len(table.file_uris()) == 3 and len(on_disk) == 5
    assert rows_of(table.to_pyarrow_table(), ["k", "v", "time", "diff"]) == [
        ("a", 1, 100, 1), ("a", 3, 100, 1), ("b", 2, 100, 1)]


def test_a_second_attempt_s_data_file_never_shows_up_and_a_replayed_time_is_written_once(tmp_path: Path) -> None:
    lake = str(tmp_path / "lake")
    pieces = [batch([(1, "a", 1, 1)], time=100), batch([(2, "b", 2, 1)], time=100)]
    sink = DeltaChangesSink(lake, KV_COLUMNS, name="out")
    sink.open()
    take_with_a_second_attempt(sink, pieces, 100)
    expected = [("a", 1, 100, 1), ("b", 2, 100, 1)]
    data_files = sorted(name for name in os.listdir(lake) if name.endswith(".parquet"))
    table = deltalake.DeltaTable(lake)
    assert table.version() == 1 and len(table.file_uris()) == 2 and len(data_files) == 3
    assert rows_of(table.to_pyarrow_table(), ["k", "v", "time", "diff"]) == expected
    restarted = DeltaChangesSink(lake, KV_COLUMNS, name="out")  # the process died after the commit
    restarted.open()
    for piece in pieces:  # the replayed step
        restarted.take_piece(100, restarted.piece_writer().write_piece(piece))
    restarted.end_time(100)
    table = deltalake.DeltaTable(lake)
    assert table.version() == 1
    assert rows_of(table.to_pyarrow_table(), ["k", "v", "time", "diff"]) == expected
    assert sorted(name for name in os.listdir(lake) if name.endswith(".parquet")) == data_files, \
        "the replay's files are removed"


def test_a_piece_s_data_file_is_written_to_s3(s3_bucket: Any) -> None:
    """What a task does for a table on S3 (through s3fs); the commit is delta-rs's."""
    uri = f"s3://{s3_bucket.name}/lake"
    files = DeltaChangesSink(uri, KV_COLUMNS, s3_settings=s3_bucket.settings(), name="out").piece_writer()
    (receipt,) = json.loads(files.write_piece(batch([(1, "a", 1, 1), (2, "b", 2, -1)], time=7)).data)
    path = f"{s3_bucket.name}/lake/{receipt['path']}"
    client = s3_bucket.client()
    assert receipt["stats"]["numRecords"] == 2 and client.info(path)["size"] == receipt["size"]
    with client.open(path, "rb") as f:
        assert rows_of(pq.read_table(f), ["k", "v", "time", "diff"]) == [("a", 1, 7, 1), ("b", 2, 7, -1)]


def test_the_pieces_of_a_time_are_committed_once_to_a_partitioned_table_on_s3(s3_bucket: Any) -> None:
    uri = f"s3://{s3_bucket.name}/lake"
    pieces = [batch([(1, "a", 1, 1), (2, "b", 2, 1)], time=100), batch([(3, "a", 3, 1)], time=100)]
    sink = DeltaChangesSink(uri, KV_COLUMNS, partition_columns=["k"], s3_settings=s3_bucket.settings(), name="out")
    sink.open()
    take_with_a_second_attempt(sink, pieces, 100)
    restarted = DeltaChangesSink(uri, KV_COLUMNS, partition_columns=["k"], s3_settings=s3_bucket.settings(),
                                 name="out")
    restarted.open()
    restarted.write(pieces[1])  # a replay of the committed time
    table = deltalake.DeltaTable(uri, storage_options=sink.storage_options)
    assert table.version() == 1 and table.metadata().partition_columns == ["k"]
    assert rows_of(table.to_pyarrow_table(), ["k", "v", "time", "diff"]) == [
        ("a", 1, 100, 1), ("a", 3, 100, 1), ("b", 2, 100, 1)]
    data_files = [p for p in s3_bucket.client().find(f"{s3_bucket.name}/lake") if p.endswith(".parquet")]
    assert len(data_files) == 5 and {p.split("/")[2] for p in data_files} == {"k=a", "k=b"}


def test_values_get_pathways_delta_types_and_read_back_the_same(tmp_path: Path) -> None:
    lake = tmp_path / "lake"

    Values, row = EveryType, EVERY_TYPE_ROW
    t = pw.debug.table_from_rows(Values, [tuple(row.values())])
    pw.io.deltalake.write(t, lake)
    pw.run()
    table = deltalake.DeltaTable(str(lake))
    types = {f.name: (str(f.type), f.nullable) for f in pa.schema(table.schema().to_arrow())}
    assert types == {
        "i": ("int64", False), "f": ("double", False), "s": ("string", False), "b": ("bool", False),
        "raw": ("binary", False), "j": ("string", False), "naive": ("timestamp[us]", False),
        "utc": ("timestamp[us, tz=UTC]", False), "span": ("int64", False), "opt": ("int64", True),
        "ints": ("list<element: int64 not null>", False),
        "pair": ("struct<[0]: string not null, [1]: int64 not null>", False),
        "time": ("int64", False), "diff": ("int64", False)}
    stored = table.to_pyarrow_table().to_pylist()[0]
    assert stored["naive"] == dt.datetime(2026, 1, 15, 10, 30, 45, 123456)
    assert stored["utc"].astimezone(dt.timezone.utc) == dt.datetime(2026, 1, 15, 10, 30, 45, 500000, tzinfo=dt.timezone.utc)
    assert stored["span"] == 1500  # microseconds, as Pathway writes durations
    assert stored["pair"] == {"[0]": "x", "[1]": 7} and stored["ints"] == [1, 2, 3]
    assert stored["j"] == '{"a": 1}' or stored["j"] == '{"a":1}'
    clear()
    back = pw.debug.table_to_pandas(pw.io.deltalake.read(lake, Values, mode="static"), include_id=False)
    got = back.iloc[0].to_dict()
    assert got["naive"] == row["naive"] and got["utc"] == row["utc"] and got["span"] == row["span"]
    assert got["pair"] == ("x", 7) and list(got["ints"]) == [1, 2, 3] and got["j"] == pw.Json({"a": 1})
    assert (got["i"], got["f"], got["s"], got["b"], got["raw"]) == (42, 3.25, "hello", True, b"\x00\xff")
    assert got["opt"] is None or pd.isna(got["opt"])


def added_stats(lake: Path, version: int) -> list[dict[str, Any]]:
    """The statistics of the data files that a version of the table adds, from its log."""
    text = (lake / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(action["add"]["stats"]) for action in map(json.loads, text.splitlines()) if "add" in action]


def test_a_data_file_s_statistics_are_those_delta_rs_keeps_and_readers_skip_files_by_them(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    other = dict(EVERY_TYPE_ROW, i=7, s="abc", utc=pd.Timestamp("2026-02-01 08:00:00.25", tz="UTC"), opt=3)
    t = pw.debug.table_from_rows(EveryType, [tuple(EVERY_TYPE_ROW.values()), tuple(other.values())])
    pw.io.deltalake.write(t, lake)
    pw.run()
    ours = deltalake.DeltaTable(str(lake))
    (uri,) = ours.file_uris()
    deltalake.write_deltalake(str(tmp_path / "theirs"), pq.read_table(uri))  # the same rows, written by delta-rs
    assert added_stats(lake, 1) == added_stats(tmp_path / "theirs", 0)
    assert ours.to_pyarrow_table(filters=[("s", "=", "abc")]).column("i").to_pylist() == [7]
    assert ours.to_pyarrow_table(filters=[("opt", "=", 3)]).column("i").to_pylist() == [7]


def test_partition_columns_make_a_partitioned_table_that_reads_back(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    t = pw.debug.table_from_markdown("day | n\n d1 | 1\n d2 | 2\n d1 | 3")
    pw.io.deltalake.write(t, lake, partition_columns=[t.day])
    pw.run()
    table = deltalake.DeltaTable(str(lake))
    assert table.metadata().partition_columns == ["day"]
    assert sorted(os.path.basename(os.path.dirname(u)) for u in table.file_uris()) == ["day=d1", "day=d2"]
    clear()

    class Days(pw.Schema):
        day: str
        n: int

    back = pw.debug.table_to_pandas(pw.io.deltalake.read(lake, Days, mode="static"), include_id=False)
    assert sorted(zip(back["day"], back["n"])) == [("d1", 1), ("d1", 3), ("d2", 2)]


def test_an_existing_table_of_other_columns_is_refused_at_start(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    append(lake, [("a", 1)])  # k, v: no time and diff
    sink = DeltaChangesSink(str(lake), KV_COLUMNS, name="out")
    with pytest.raises(DeltaLakeError, match=r"columns written that the table does not have: \['time', 'diff'\]"):
        sink.open()


def test_write_refuses_what_it_cannot_write(tmp_path: Path) -> None:
    t = pw.debug.table_from_markdown("time | v\n 1 | 2")
    with pytest.raises(PlanError, match="collide"):
        pw.io.deltalake.write(t, tmp_path / "a")
    with pytest.raises(PlanError, match="output_table_type"):
        pw.io.deltalake.write(t, tmp_path / "a", output_table_type="upsert")
    u = pw.debug.table_from_markdown("v\n 2")
    pw.io.deltalake.write(u, tmp_path / "b")
    with pytest.raises(PlanError, match="two outputs"):
        pw.io.deltalake.write(u, tmp_path / "b", name="other")


def test_a_missing_deltalake_package_is_named_with_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "deltalake", None)  # import deltalake now fails
    t = pw.debug.table_from_markdown("v\n 2")
    with pytest.raises(PlanError, match=r"pip install 'sparkway\[deltalake\]'"):
        pw.io.deltalake.write(t, "lake")
