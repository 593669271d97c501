"""``pw.io.spark``: a Spark DataFrame or a table of the Spark catalog as a source, and a
table of the catalog as a sink, in both modes, read back with ``spark.table``."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

import sparkway as pw
from sparkway.api.graph import clear
from sparkway.errors import PlanError
from tests.tables import CHANGES

pytestmark = pytest.mark.usefixtures("spark")


@pytest.fixture(autouse=True)
def _fresh() -> None:
    clear()


@pytest.fixture
def database(spark: Any, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A database of the catalog whose tables are stored under tmp_path (the shared
    session's warehouse directory cannot be changed once it runs)."""
    name = "db_" + request.node.name.replace("[", "_").replace("]", "_").replace("-", "_")[:60]
    spark.sql(f"CREATE DATABASE {name} LOCATION '{tmp_path / 'warehouse'}'")
    yield name
    spark.sql(f"DROP DATABASE {name} CASCADE")


ROWS = [("a", 1, 2.5, dt.datetime(2024, 1, 2, 3, 4, 5, 123456)), ("b", 2, -1.0, None), ("a", 1, 2.5, None)]
DDL = "word string not null, n int not null, x double not null, at timestamp_ntz"


def collected(table: pw.Table, columns: list[str]) -> list[tuple]:
    seen: list[tuple] = []
    pw.io.subscribe(table, on_change=lambda key, row, time, is_addition: seen.append(
        tuple(row[c] for c in columns) + (is_addition,)))
    pw.run()
    assert all(r[-1] for r in seen), seen
    return sorted((r[:-1] for r in seen), key=repr)


def test_a_dataframe_is_read_with_its_own_types(spark: Any) -> None:
    frame = spark.createDataFrame(ROWS, DDL)
    table = pw.io.spark.read(frame)
    assert table.schema.typehints() == {"word": str, "n": int, "x": float, "at": pw.DateTimeNaive | None}
    rows = collected(table, ["word", "n", "x", "at"])
    expected = sorted(ROWS, key=repr)  # the duplicated row is read twice: two rows
    assert [(w, n, x, None if at is None else at.to_pydatetime()) for w, n, x, at in rows] == expected


def test_a_schema_picks_columns_and_its_primary_key_makes_the_ids(spark: Any) -> None:
    class Words(pw.Schema):
        word: str = pw.column_definition(primary_key=True)
        x: float

    frame = spark.createDataFrame([("a", 1, 2.5, None), ("b", 2, -1.0, None)], DDL)
    table = pw.io.spark.read(frame, schema=Words)
    expected_ids = pw.debug.table_from_markdown("word | x\n a | 2.5\n b | -1.0").with_id_from(pw.this.word)
    ids: dict[str, Any] = {}
    pw.io.subscribe(table, on_change=lambda key, row, time, is_addition: ids.setdefault(row["word"], key))
    known: dict[str, Any] = {}
    pw.io.subscribe(expected_ids, on_change=lambda key, row, time, is_addition: known.setdefault(row["word"], key))
    pw.run()
    assert ids == known and len(ids) == 2


def test_a_table_of_the_catalog_is_read_by_name(spark: Any, database: str) -> None:
    class Sales(pw.Schema):  # a table of the catalog has nullable columns: the schema says they are not
        word: str
        x: float

    spark.createDataFrame(ROWS, DDL).write.saveAsTable(f"{database}.sales")
    totals = pw.io.spark.read(f"{database}.sales", schema=Sales).groupby(pw.this.word).reduce(
        pw.this.word, total=pw.reducers.sum(pw.this.x))
    expected: dict[str, float] = {}
    for word, _, x, _ in ROWS:  # computed here, in plain Python
        expected[word] = expected.get(word, 0.0) + x
    assert collected(totals, ["word", "total"]) == sorted(expected.items())


def test_reading_a_table_that_does_not_exist_or_lacks_a_column_is_refused(spark: Any, database: str) -> None:
    with pytest.raises(PlanError, match="no table"):
        pw.io.spark.read(f"{database}.nothing")

    class Needs(pw.Schema):
        price: float

    with pytest.raises(PlanError, match="price"):
        pw.io.spark.read(spark.createDataFrame(ROWS, DDL), schema=Needs)


def test_a_column_of_another_type_is_an_error_naming_it(spark: Any) -> None:
    class Wrong(pw.Schema):
        word: int

    pw.io.null.write(pw.io.spark.read(spark.createDataFrame(ROWS, DDL), schema=Wrong))
    with pytest.raises(Exception, match="column 'word' holds values of type string"):
        pw.run()


def test_a_restart_with_persistence_passes_on_only_what_changed(spark: Any, database: str, tmp_path: Path) -> None:
    spark.createDataFrame([("a", 1), ("b", 2)], "k string not null, v long not null").write.saveAsTable(
        f"{database}.kv")
    seen: list[tuple] = []

    def run() -> list[tuple]:
        clear()
        seen.clear()
        table = pw.io.spark.read(f"{database}.kv", name="kv")
        pw.io.subscribe(table, on_change=lambda key, row, time, is_addition: seen.append(
            (row["k"], row["v"], is_addition)))
        pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state")))
        return sorted(seen)

    assert run() == [("a", 1, True), ("b", 2, True)]
    assert run() == [], "nothing changed"
    spark.createDataFrame([("c", 3)], "k string not null, v long not null").write.mode("append").saveAsTable(
        f"{database}.kv")
    assert run() == [("c", 3, True)]


# ------------------------------------------------------------------ writing




def test_stream_of_changes_appends_every_change_with_time_and_diff(spark: Any, database: str) -> None:
    pw.io.spark.write(pw.debug.table_from_markdown(CHANGES), f"{database}.changes")
    pw.run()
    back = spark.table(f"{database}.changes")
    assert back.columns == ["k", "v", "time", "diff"]
    assert sorted(tuple(r) for r in back.collect()) == [
        ("a", 1, 2, 1), ("a", 1, 4, -1), ("a", 3, 4, 1), ("b", 2, 2, 1), ("b", 2, 6, -1), ("c", 5, 4, 1)]


def test_snapshot_keeps_the_current_result(spark: Any, database: str) -> None:
    pw.io.spark.write(pw.debug.table_from_markdown(CHANGES), f"{database}.snap", mode="snapshot")
    pw.run()
    back = spark.table(f"{database}.snap")
    assert back.columns == ["k", "v", "_id"]
    assert sorted((r["k"], r["v"]) for r in back.collect()) == [("a", 3), ("c", 5)]
    ids = [r["_id"] for r in back.collect()]
    assert len(set(ids)) == 2 and all(i.startswith("^") and len(i) == 17 for i in ids)


def test_a_stream_replayed_is_not_appended_twice(spark: Any, database: str) -> None:
    from sparkway.connectors.base import OutputBatch
    from sparkway.connectors.spark import SparkTableSink
    from sparkway.core import dtypes

    import pyarrow as pa

    def batch(time: int) -> OutputBatch:
        return OutputBatch(pa.table({"k": ["a"], "v": [time]}), time, pa.array([1]), pa.array([time]))

    def sink() -> SparkTableSink:
        made = SparkTableSink(f"{database}.s", {"k": dtypes.STR, "v": dtypes.INT}, session=lambda: spark)
        made.open()
        return made

    first = sink()
    first.write(batch(2))
    first.write(batch(4))
    again = sink()  # a restart replaying time 4
    again.write(batch(4))
    again.write(batch(6))
    assert sorted(r["time"] for r in spark.table(f"{database}.s").collect()) == [2, 4, 6]


def test_write_refuses_an_unknown_mode_and_its_own_column_names() -> None:
    table = pw.debug.table_from_markdown("k | time\n a | 1")
    with pytest.raises(PlanError, match="unknown mode"):
        pw.io.spark.write(table, "t", mode="upsert")
    with pytest.raises(PlanError, match="time, diff"):
        pw.io.spark.write(table, "t")
    pw.io.spark.write(table, "t", mode="snapshot")  # its own column is _id there
