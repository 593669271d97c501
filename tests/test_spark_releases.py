"""Each way of ``core/spark_releases.py`` gives the same values on the installed Spark,
whichever release it is: ``scripts/test.sh`` runs these on 4.3 and again on 3.5 and 4.0,
where the older releases' ways are taken.  Expected values are written here from the
inputs, never read back from the code under test."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkway.core import spark_releases

pytestmark = [pytest.mark.usefixtures("spark"), pytest.mark.releases]

BIG = 2**62 + 1  # an integer a float cannot hold
SCHEMA = T.StructType([
    T.StructField("i", T.LongType()), T.StructField("f", T.DoubleType()), T.StructField("s", T.StringType()),
    T.StructField("t", T.TimestampType()), T.StructField("a", T.ArrayType(T.LongType())),
])
ROWS = [
    {"i": BIG, "f": float("nan"), "s": "x", "t": datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=datetime.UTC),
     "a": [1, None]},
    {"i": None, "f": None, "s": None, "t": None, "a": None},
]


def _table() -> pa.Table:
    return pa.Table.from_pylist(ROWS, schema=spark_releases.arrow_schema(SCHEMA))


def _values(table: pa.Table) -> list[dict]:
    """Rows, with NaN as a string: NaN is not equal to itself."""
    return [{k: ("nan" if isinstance(v, float) and v != v else v) for k, v in row.items()} for row in table.to_pylist()]


def test_an_arrow_table_goes_to_spark_and_back_unchanged(spark) -> None:
    frame = spark_releases.frame_from_arrow(spark, _table(), SCHEMA)
    back = spark_releases.collect_arrow(frame.orderBy(F.col("i").asc_nulls_last()))
    assert back.schema == spark_releases.arrow_schema(SCHEMA)
    assert _values(back) == _values(_table())


def test_a_frame_from_arrow_in_batches_of_the_rows_asked_has_every_row(spark) -> None:
    table = pa.table({"n": pa.array(range(10), pa.int64())})
    frame = spark_releases.frame_from_arrow(spark, table, T.StructType([T.StructField("n", T.LongType())]),
                                            rows_per_partition=4)
    assert sorted(spark_releases.collect_arrow(frame).column("n").to_pylist()) == list(range(10))


def test_an_arrow_function_gets_arrays_of_the_arguments_own_types(spark) -> None:
    def describe(i: pa.Array, f: pa.Array, s: pa.Array) -> pa.Array:
        return pa.array([f"{type(a).__name__}:{a!r}|{type(b).__name__}|{c!r}"
                         for a, b, c in zip(i.to_pylist(), f.to_pylist(), s.to_pylist())])

    udf = spark_releases.arrow_udf(describe, "string", [pa.int64(), pa.float64(), pa.string()])
    frame = spark_releases.frame_from_arrow(spark, _table(), SCHEMA)
    got = spark_releases.collect_arrow(frame.select(udf(F.col("i"), F.col("f"), F.col("s")).alias("d")))
    assert sorted(got.column("d").to_pylist()) == sorted([f"int:{BIG}|float|'x'", "NoneType:None|NoneType|None"])


def test_an_arrow_function_returns_integers_with_nulls_and_structs_exactly(spark) -> None:
    def halves(i: pa.Array) -> pa.Array:
        values = [None if v is None else v // 2 for v in i.to_pylist()]
        return pa.StructArray.from_arrays([pa.array(values, pa.int64()), pa.array(["a", None])], ["value", "error"])

    udf = spark_releases.arrow_udf(halves, "struct<value: bigint, error: string>", [pa.int64()])
    frame = spark_releases.frame_from_arrow(spark, _table().slice(0, 2), SCHEMA).coalesce(1)
    got = spark_releases.collect_arrow(frame.select(udf(F.col("i")).alias("h"))).column("h").to_pylist()
    assert got == [{"value": BIG // 2, "error": "a"}, {"value": None, "error": None}]


def test_a_python_function_gets_python_values_none_included(spark) -> None:
    # (sparkway's date-times are integers of nanoseconds in Spark: no Spark time stamp
    # reaches a function of sparkway's)
    udf = spark_releases.python_udf(lambda i, a: f"{type(i).__name__}:{i}|{type(a).__name__}:{a}", "string")
    frame = spark_releases.frame_from_arrow(spark, _table(), SCHEMA)
    got = spark_releases.collect_arrow(frame.select(udf(F.col("i"), F.col("a")).alias("d")))
    assert sorted(got.column("d").to_pylist()) == sorted([f"int:{BIG}|list:[1, None]", "NoneType:None|NoneType:None"])


def test_try_cast_gives_null_where_a_text_is_no_number(spark) -> None:
    frame = spark.createDataFrame([(" 12",), ("x",), ("1e3",), (None,)], "s string")
    got = spark_releases.collect_arrow(frame.select(
        spark_releases.try_cast(F.trim(F.col("s")), "bigint").alias("i"),
        spark_releases.try_cast(F.trim(F.col("s")), "double").alias("f")))
    assert got.column("i").to_pylist() == [12, None, None, None]
    assert got.column("f").to_pylist() == [12.0, None, 1000.0, None]


def test_json_array_items_are_json_texts(spark) -> None:
    frame = spark.createDataFrame([('[1, "a", {"b": [true, null]}]',), ('{"a": 1}',), (None,)], "j string")
    got = spark_releases.collect_arrow(frame.select(spark_releases.json_array_items(F.col("j")).alias("items")))
    assert got.column("items").to_pylist() == [["1", '"a"', '{"b":[true,null]}'], None, None]


def test_map_in_arrow_runs_a_function_made_once_over_any_frame(spark) -> None:
    schema = T.StructType([T.StructField("doubled", T.LongType())])

    def double(batches):
        for batch in batches:
            yield pa.RecordBatch.from_pydict({"doubled": [2 * v for v in batch.column(0).to_pylist()]})

    function = spark_releases.map_function(double, schema)
    for n in (3, 5):
        got = spark_releases.collect_arrow(spark_releases.map_in_arrow(spark.range(n), function))
        assert sorted(got.column("doubled").to_pylist()) == [2 * i for i in range(n)]


def test_a_feature_of_a_newer_spark_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spark_releases, "SPARK", (3, 5))
    with pytest.raises(spark_releases.SparkError, match=r"^a feature needs Spark 4\.1 or newer; this is Spark \S+ "
                                                          r"\(pip install 'pyspark>=4\.1'\)$"):
        spark_releases.require("a feature", (4, 1))
