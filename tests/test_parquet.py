"""Parquet in ``pw.io.fs`` (format="parquet"): files written with pyarrow read back with
the values pyarrow reads; new, modified and deleted files in streaming mode; a directory
written by sparkway read whole by plain PySpark; persistence reads only new files."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sparkway as pw
from sparkway.api.graph import clear
from sparkway.connectors.files import FileSource
from sparkway.connectors.formats.values import SchemaMismatchError
from sparkway.errors import PlanError
from tests.tables import CHANGES, Subscribed

pytestmark = pytest.mark.usefixtures("spark")


@pytest.fixture(autouse=True)
def _fresh() -> None:
    clear()


class Sales(pw.Schema):
    shop: str
    amount: float
    count: int
    at: pw.DateTimeNaive | None
    tags: list[str]


def sales_file(path: Path, rows: list[tuple[str, float, int, dt.datetime | None, list[str]]]) -> pa.Table:
    """A Parquet file of sales, with narrower types than the schema's (int32, float32)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table({
        "shop": pa.array([r[0] for r in rows], pa.string()),
        "amount": pa.array([r[1] for r in rows], pa.float32()),
        "count": pa.array([r[2] for r in rows], pa.int32()),
        "at": pa.array([r[3] for r in rows], pa.timestamp("ms")),
        "tags": pa.array([r[4] for r in rows], pa.list_(pa.string())),
        "ignored": pa.array([0] * len(rows), pa.int8()),
    })
    before = path.stat().st_mtime_ns if path.exists() else 0
    pq.write_table(table, path)
    later = max(before + 1_000_000_000, path.stat().st_mtime_ns)
    os.utime(path, ns=(later, later))
    return table


def expected_rows(*tables: pa.Table) -> list[tuple]:
    """What the files hold, as pyarrow reads them (the Python values sparkway must give)."""
    rows = []
    for table in tables:
        for r in table.to_pylist():
            rows.append((r["shop"], float(r["amount"]), r["count"], r["at"], tuple(r["tags"])))
    return sorted(rows, key=repr)


def collected(table: pw.Table) -> list[tuple]:
    seen: list[tuple] = []

    def on_change(key: Any, row: dict, time: int, is_addition: bool) -> None:
        at = row["at"]
        seen.append((row["shop"], row["amount"], row["count"], None if at is None else at.to_pydatetime(),
                     tuple(row["tags"]), is_addition))

    pw.io.subscribe(table, on_change=on_change)
    pw.run()
    assert all(added for *_, added in seen), seen
    return sorted((r[:-1] for r in seen), key=repr)


def test_a_static_read_gives_the_values_pyarrow_reads(tmp_path: Path, step_path: str) -> None:
    first = sales_file(tmp_path / "in" / "a.parquet", [
        ("north", 2.5, 3, dt.datetime(2024, 1, 2, 3, 4, 5, 678000), ["x", "y"]),
        ("south", 0.25, -7, None, []),
    ])
    second = sales_file(tmp_path / "in" / "sub" / "b.parquet", [("east", 1e10, 2**31 - 1, dt.datetime(1999, 12, 31), ["z"])])
    table = pw.io.fs.read(tmp_path / "in", format="parquet", schema=Sales, mode="static")
    assert collected(table) == expected_rows(first, second)


def test_a_column_of_another_type_is_an_error_naming_the_file_and_the_column(tmp_path: Path) -> None:
    path = tmp_path / "in" / "bad.parquet"
    path.parent.mkdir()
    pq.write_table(pa.table({"shop": ["a"], "amount": [1.0], "count": ["three"], "at": [None],
                             "tags": [["t"]]}), path)
    pw.io.null.write(pw.io.fs.read(tmp_path / "in", format="parquet", schema=Sales, mode="static"))
    with pytest.raises(SchemaMismatchError, match=r"bad\.parquet: column 'count' holds values of type string"):
        pw.run()


def test_a_missing_column_is_an_error_unless_it_has_a_default(tmp_path: Path) -> None:
    class WithDefault(pw.Schema):
        shop: str
        region: str = pw.column_definition(default_value="none")

    path = tmp_path / "in" / "a.parquet"
    path.parent.mkdir()
    pq.write_table(pa.table({"shop": ["a", "b"]}), path)
    seen = []
    table = pw.io.fs.read(tmp_path / "in", format="parquet", schema=WithDefault, mode="static")
    pw.io.subscribe(table, on_change=lambda key, row, time, is_addition: seen.append((row["shop"], row["region"])))
    pw.run()
    assert sorted(seen) == [("a", "none"), ("b", "none")]
    clear()
    pw.io.null.write(pw.io.fs.read(tmp_path / "in", format="parquet", schema=Sales, mode="static"))
    with pytest.raises(SchemaMismatchError, match=r"a\.parquet: the Parquet file lacks column\(s\) 'amount'"):
        pw.run()


# ------------------------------------------------------------------ streaming


def step(source: FileSource) -> list[tuple]:
    segments = source.discover()
    changes = source.read(segments)
    source.advance(segments)
    return sorted(((r["shop"], r["count"], r["_diff"]) for r in changes.to_pylist()), key=repr)


def test_streaming_reads_new_modified_and_deleted_files(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    source = FileSource(str(folder), format="parquet", columns=Sales.columns(), mode="streaming", name="sales")
    source.open(None)
    assert step(source) == []
    sales_file(folder / "a.parquet", [("a", 1.0, 1, None, []), ("b", 1.0, 2, None, [])])
    assert step(source) == [("a", 1, 1), ("b", 2, 1)]
    sales_file(folder / "c.parquet", [("c", 1.0, 3, None, [])])
    assert step(source) == [("c", 3, 1)], "only the new file"
    assert step(source) == []
    sales_file(folder / "a.parquet", [("a", 1.0, 10, None, [])])  # rewritten
    assert step(source) == [("a", 1, -1), ("a", 10, 1), ("b", 2, -1)]
    (folder / "c.parquet").unlink()
    assert step(source) == [("c", 3, -1)]
    assert step(source) == []


def test_a_file_being_written_is_read_once_it_is_complete(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    whole = tmp_path / "whole.parquet"
    sales_file(whole, [("a", 1.0, 1, None, [])])
    data = whole.read_bytes()
    (folder / "a.parquet").write_bytes(data[: len(data) // 2])  # no footer yet
    source = FileSource(str(folder), format="parquet", columns=Sales.columns(), mode="streaming", name="sales")
    source.open(None)
    assert step(source) == []
    (folder / "a.parquet").write_bytes(data)
    os.utime(folder / "a.parquet", ns=(1, 10**18))
    assert step(source) == [("a", 1, 1)]


def test_a_streaming_run_picks_up_a_new_file(tmp_path: Path) -> None:
    import signal
    import threading

    folder = tmp_path / "in"
    sales_file(folder / "a.parquet", [("a", 1.0, 1, None, [])])
    changes = Subscribed(pw.io.fs.read(folder, format="parquet", schema=Sales), "shop")

    def edit() -> None:
        changes.wait_for(1)
        sales_file(folder / "b.parquet", [("b", 1.0, 2, None, [])])
        changes.wait_for(2)
        (folder / "a.parquet").unlink()
        changes.wait_for(3)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=edit, daemon=True).start()
    pw.run()
    assert changes.seen == [("a", True), ("b", True), ("a", False)]


# ------------------------------------------------------------------ writing




def test_written_files_are_read_back_whole_by_plain_pyspark(tmp_path: Path, spark: Any) -> None:
    out = tmp_path / "out"
    pw.io.fs.write(pw.debug.table_from_markdown(CHANGES), out, format="parquet")
    pw.run()
    names = sorted(os.listdir(out))
    assert names == [f"part-{t:020d}-00000.parquet" for t in (2, 4, 6)], "a file per time, nothing else"
    back = spark.read.parquet(str(out))
    assert back.columns == ["k", "v", "time", "diff"]
    rows = sorted(tuple(r) for r in back.collect())
    assert rows == [("a", 1, 2, 1), ("a", 1, 4, -1), ("a", 3, 4, 1), ("b", 2, 2, 1), ("b", 2, 6, -1), ("c", 5, 4, 1)]


def test_written_values_read_back_the_same(tmp_path: Path) -> None:
    first = sales_file(tmp_path / "in" / "a.parquet", [
        ("north", 2.5, 3, dt.datetime(2024, 1, 2, 3, 4, 5, 678000), ["x", "y"]), ("south", 0.5, -7, None, [])])
    pw.io.fs.write(pw.io.fs.read(tmp_path / "in", format="parquet", schema=Sales, mode="static"), tmp_path / "out",
                   format="parquet")
    pw.run()
    written = pq.read_table(tmp_path / "out")
    assert written.schema.field("at").type == pa.timestamp("us")
    again = [(r["shop"], r["amount"], r["count"], r["at"], tuple(r["tags"])) for r in written.to_pylist()]
    assert sorted(again, key=repr) == expected_rows(first)
    assert set(written.column("diff").to_pylist()) == {1}


def test_a_new_run_rewrites_the_directory_and_keeps_other_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "part-00000000000000000001-00000.parquet").write_bytes(b"old run")
    (out / "_notes.txt").write_text("mine")
    pw.io.fs.write(pw.debug.table_from_markdown("k | v\n a | 1"), out, format="parquet")
    pw.run()
    names = sorted(os.listdir(out))
    assert "_notes.txt" in names and "part-00000000000000000001-00000.parquet" not in names
    assert pq.read_table(out).column("k").to_pylist() == ["a"]


def test_a_large_step_s_files_are_written_by_spark_tasks_a_file_per_piece(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In a large step the Parquet files and the CSV lines are made by Spark's tasks (in
    Python workers, not in this process), a Parquet file per piece; together they hold
    every change, and no staged file is left."""
    from sparkway.connectors.writers import ParquetFiles, TextLines

    monkeypatch.setattr("sparkway.engine.runner.LARGE_STEP_ROWS", 0)
    monkeypatch.setattr("sparkway.engine.runner.collect_parts", lambda tables, partitions: 4)
    here: list[str] = []
    monkeypatch.setattr(ParquetFiles, "write_piece", lambda self, batch: here.append("parquet"))
    monkeypatch.setattr(TextLines, "write_piece", lambda self, batch: here.append("csv"))
    words = [f"w{i % 50}" for i in range(400)]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("word\n" + "\n".join(words) + "\n")

    class Words(pw.Schema):
        word: str

    table = pw.io.csv.read(tmp_path / "in", schema=Words, mode="static")
    counts = table.groupby(table.word).reduce(table.word, n=pw.reducers.count())
    pw.io.fs.write(counts, tmp_path / "out", format="parquet")
    pw.io.csv.write(counts, tmp_path / "out.csv")
    pw.run()
    assert here == [], "the driver made no piece"
    names = sorted(os.listdir(tmp_path / "out"))
    assert len(names) > 1 and all(n.startswith("part-") for n in names), names
    expected = sorted((f"w{i}", 8) for i in range(50))
    assert sorted(zip(*pq.read_table(tmp_path / "out", columns=["word", "n"]).to_pydict().values())) == expected
    lines = (tmp_path / "out.csv").read_text().splitlines()
    assert lines[0] == '"word","n","time","diff"' and len(lines) == 51
    assert sorted((w.strip('"'), int(n.strip('"'))) for w, n, _, _ in (line.split(",") for line in lines[1:])) == expected


def test_a_piece_written_twice_is_taken_once(tmp_path: Path) -> None:
    """A task Spark ran twice (a retry, a speculative copy) wrote two staged files for
    one piece; the driver takes the one whose result it got, and the time's end removes
    the other."""
    from sparkway.connectors.base import OutputBatch
    from sparkway.connectors.writers import ParquetSink
    from sparkway.core.dtypes import INT, STR

    sink = ParquetSink(str(tmp_path / "out"), ["k", "v"], dtypes={"k": STR, "v": INT})
    sink.open()
    batch = OutputBatch(pa.table({"k": ["a", "b"], "v": [1, 2]}), 7, pa.array([1, 1]))
    first, second = sink.piece_writer().write_piece(batch), sink.piece_writer().write_piece(batch)
    assert first.data != second.data and len(os.listdir(tmp_path / "out")) == 2
    sink.take_piece(7, second)
    sink.end_time(7)
    assert os.listdir(tmp_path / "out") == [f"part-{7:020d}-00000.parquet"]
    assert pq.read_table(tmp_path / "out").column("k").to_pylist() == ["a", "b"]


def test_a_column_named_time_is_refused() -> None:
    with pytest.raises(PlanError, match="time and diff"):
        pw.io.fs.write(pw.debug.table_from_markdown("time | v\n 1 | 1"), "out", format="parquet")


# ------------------------------------------------------------------ persistence


def test_a_restart_with_persistence_reads_only_new_files(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    sales_file(folder / "a.parquet", [("a", 1.0, 1, None, [])])

    def run(output: Path) -> list[tuple]:
        clear()
        table = pw.io.fs.read(folder, format="parquet", schema=Sales, mode="static", name="sales")
        pw.io.fs.write(table.select(table.shop, table.count), output, format="parquet")
        pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state")))
        if not output.exists() or not os.listdir(output):
            return []
        return sorted((r["shop"], r["count"], r["diff"]) for r in pq.read_table(output).to_pylist())

    assert run(tmp_path / "out1") == [("a", 1, 1)]
    sales_file(folder / "b.parquet", [("b", 1.0, 2, None, [])])
    assert run(tmp_path / "out2") == [("b", 2, 1)], "a.parquet is not read again"
    sales_file(folder / "b.parquet", [("b", 1.0, 20, None, [])])
    assert run(tmp_path / "out3") == [("b", 2, -1), ("b", 20, 1)]
    assert run(tmp_path / "out4") == []
