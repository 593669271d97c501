"""What differs between the Spark releases sparkway runs on (3.5 to 4.3), in one place.

The rest of the package calls these functions and never looks at a version: each uses a
newer release's faster path where the installed pyspark has it, and otherwise does the
same thing the way the older release can.  It lives in ``core``, not ``engine``, because
``core.changes`` and the connectors convert schemas and collect frames too.

What an older release lacks, and what is done instead (docs/spark-releases.md has the
table):

- ``DataFrame.toArrow`` and ``createDataFrame`` of an Arrow table (4.0): the Arrow
  batches pyspark's pandas conversions exchange with the JVM, without pandas.
- ``to_arrow_type(timezone=, prefers_large_types=)`` (after 4.0): 3.5 and 4.0 give UTC time
  stamps and no large types by default, which is what sparkway asks for.
- ``arrow_udf`` (4.1), Python functions of whole Arrow arrays: a pandas UDF that turns
  its pandas series back into Arrow arrays of the arguments' own types.  Numbers go with
  their nulls beside them, since pandas would make an integer column with nulls floats.
- Arrow-batched Python functions of rows without pandas (4.1): pickled rows before.
- ``Column.try_cast`` (4.0): the JVM's cast in its TRY mode; Spark's variant type (4.0)
  for JSON arrays: a Python function.
- the JVM's ``mapInArrow`` with a profile (4.0), or with an expression (3.5).
- a Connect client told a job's observed metrics (4.0): without them, a program
  attached to a Connect server reads its input itself (``engine.executor_reads``).
- a Connect client's session settings read and set in one request each (4.0): one
  request per setting before.

A feature that has no fallback on an older release is refused by ``require`` in one
line naming it and the release it needs.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyspark
from pyspark.sql import types as T
from pyspark.sql.pandas import types as arrow_types

from sparkway.errors import SparkError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


def release(version: str) -> tuple[int, int]:
    """The (major, minor) release of a pyspark version.

    >>> release("3.5.8"), release("4.1.0.dev1")
    ((3, 5), (4, 1))
    """
    match = re.match(r"(\d+)\.(\d+)", version)
    if match is None:
        raise ValueError(f"not a Spark version: {version!r}")
    return int(match.group(1)), int(match.group(2))


#: the release of the installed pyspark
SPARK = release(pyspark.__version__)


def require(feature: str, needed: tuple[int, int]) -> None:
    """Refuses ``feature`` on a Spark older than ``needed``, in one line.

    >>> require("a feature of Spark 3.0", (3, 0))
    """
    if SPARK < needed:
        raise SparkError(
            f"{feature} needs Spark {needed[0]}.{needed[1]} or newer; this is Spark {pyspark.__version__} "
            f"(pip install 'pyspark>={needed[0]}.{needed[1]}')"
        )


def arrow_type(spark_type: T.DataType) -> pa.DataType:
    """The Arrow type of a Spark type's values as Spark hands them to Python: time stamps
    in UTC, no large types (the defaults of 3.5 and 4.0, which take no time zone).

    >>> arrow_type(T.TimestampType())
    TimestampType(timestamp[us, tz=UTC])
    """
    if _TAKES_TIME_ZONE:
        return arrow_types.to_arrow_type(spark_type, timezone="UTC", prefers_large_types=False)
    return arrow_types.to_arrow_type(spark_type)


_TAKES_TIME_ZONE = "timezone" in inspect.signature(arrow_types.to_arrow_type).parameters


def arrow_schema(schema: T.StructType) -> pa.Schema:
    """The Arrow schema of a Spark schema's rows as Spark hands them to Python
    (``mapInArrow``, ``toArrow``)."""
    return pa.schema([pa.field(f.name, arrow_type(f.dataType), nullable=f.nullable) for f in schema])


def collect_arrow(frame: DataFrame) -> pa.Table:
    """``frame.toArrow()``: its rows on the driver as an Arrow table."""
    if SPARK >= (4, 0):
        return frame.toArrow()
    if _is_remote(frame.sparkSession):  # Spark Connect's client collects Arrow batches itself
        client = frame.sparkSession.client
        return client.to_table(frame._plan.to_proto(client))[0]
    batches = frame._collect_as_arrow()
    return pa.Table.from_batches(batches, schema=arrow_schema(frame.schema))


def frame_from_arrow(spark: SparkSession, table: pa.Table, schema: T.StructType | None = None,
                     rows_per_partition: int | None = None) -> DataFrame:
    """``spark.createDataFrame(table, schema)`` (by default the Spark schema of the
    table's), a partition per ``rows_per_partition`` rows (by default Spark's
    ``arrow.maxRecordsPerBatch``)."""
    if SPARK >= (4, 0) or _is_remote(spark):
        if rows_per_partition is None:
            return spark.createDataFrame(table, schema=schema)
        key = "spark.sql.execution.arrow.maxRecordsPerBatch"
        before = spark.conf.get(key)
        spark.conf.set(key, str(rows_per_partition))
        try:
            return spark.createDataFrame(table, schema=schema)
        finally:
            spark.conf.set(key, before)
    if schema is None:
        schema = arrow_types.from_arrow_schema(table.schema)
    return _frame_from_batches(spark, table.cast(arrow_schema(schema)), schema, rows_per_partition)


def _frame_from_batches(spark: SparkSession, table: pa.Table, schema: T.StructType,
                        rows_per_partition: int | None) -> DataFrame:
    """What Spark 3.5's ``createDataFrame`` of a pandas frame does once it has Arrow
    batches: a partition per batch, read by the JVM from a file or a local socket."""
    from pyspark.sql import DataFrame
    from pyspark.sql.pandas.serializers import ArrowStreamSerializer

    if rows_per_partition is None:
        rows_per_partition = int(spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch"))
    batches = table.to_batches(max_chunksize=max(1, rows_per_partition)) or [
        pa.RecordBatch.from_pylist([], schema=table.schema)]
    jvm = spark._jvm
    stream = spark.sparkContext._serialize_to_jvm(
        batches, ArrowStreamSerializer(), jvm.PythonSQLUtils.readArrowStreamFromFile, jvm.ArrowIteratorServer)
    frame = DataFrame(jvm.PythonSQLUtils.toDataFrame(stream, schema.json(), spark._jsparkSession), spark)
    frame._schema = schema
    return frame


def map_function(function: Callable[..., Any], schema: T.StructType) -> Any:
    """The Python function of a ``mapInArrow`` giving rows of ``schema``, made once and
    given to ``map_in_arrow`` for every frame it maps."""
    from pyspark.sql.pandas.functions import pandas_udf

    try:
        from pyspark.util import PythonEvalType
    except ImportError:  # 3.5
        from pyspark.rdd import PythonEvalType  # type: ignore[attr-defined,no-redef]
    return pandas_udf(function, returnType=schema, functionType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF)


def map_in_arrow(frame: DataFrame, function: Any) -> DataFrame:
    """``frame.mapInArrow`` by a ``map_function``, without making the function anew as
    pyspark's own ``mapInArrow`` does on each call (some 50 py4j calls)."""
    from pyspark.sql import DataFrame

    column = function(*[frame[name] for name in frame.columns])
    if SPARK < (4, 0):
        mapped = frame._jdf.pythonMapInArrow(column._jc.expr(), False)
    else:
        mapped = frame._jdf.mapInArrow(column._jc, False, None)
    return DataFrame(mapped, frame.sparkSession)


def python_udf(function: Callable[..., Any], return_type: T.DataType | str) -> Callable[..., Column]:
    """A Spark function calling ``function`` with each row's arguments as Python values.

    Spark sends them in Arrow batches from 4.1 on; before, its Arrow-batched functions
    pass the values through pandas, where an integer column with a null becomes floats,
    so the rows go pickled, as Spark's classic Python functions do."""
    from pyspark.sql import functions as F

    return F.udf(function, return_type, useArrow=SPARK >= (4, 1))


def try_cast(column: Column, ddl: str) -> Column:
    """``column.try_cast(ddl)``: null where a value does not convert.  3.5's Python
    Column lacks the method, but its JVM has the cast it makes."""
    if SPARK >= (4, 0):
        return column.try_cast(ddl)
    if not hasattr(column, "_jc"):
        require("Parsing text (str.parse_int, str.parse_float) through Spark Connect", (4, 0))
    from pyspark.sql import Column, SparkSession

    jvm = SparkSession.getActiveSession()._jvm
    expressions = jvm.org.apache.spark.sql.catalyst.expressions
    mode = getattr(expressions, "EvalMode$").__getattr__("MODULE$").TRY()
    cast = expressions.Cast(column._jc.expr(), jvm.org.apache.spark.sql.types.DataType.fromDDL(ddl),
                            jvm.scala.Option.apply("UTC"), mode)
    return Column(jvm.org.apache.spark.sql.Column(cast))


def json_array_items(texts: Column) -> Column:
    """The elements of each JSON array text of ``texts``, each as JSON text (a string
    element keeps its quotes, which ``from_json`` to ``array<string>`` would drop);
    null where the text is not an array.  Through Spark's variant (4.0), else a Python
    function."""
    from pyspark.sql import functions as F

    if SPARK >= (4, 0):
        return F.transform(F.try_variant_get(F.parse_json(texts), "$", "array<variant>"), lambda item: F.to_json(item))
    return python_udf(_json_items, "array<string>")(texts)


def _json_items(text: str | None) -> list[str] | None:
    """
    >>> _json_items('[1, "a", {"b": [true]}]'), _json_items('{"a": 1}')
    (['1', '"a"', '{"b":[true]}'], None)
    """
    value = None if text is None else json.loads(text)
    if not isinstance(value, list):
        return None
    return [json.dumps(item, separators=(",", ":"), ensure_ascii=False) for item in value]


def arrow_udf(function: Callable[..., pa.Array], return_type: T.DataType | str,
              argument_types: Sequence[pa.DataType]) -> Callable[..., Column]:
    """A Spark function calling ``function`` with each Arrow batch's arguments as Arrow
    arrays (``argument_types``, as Spark hands them to Python); it returns an Arrow array."""
    from pyspark.sql import functions as F

    if SPARK >= (4, 1):
        return F.arrow_udf(function, return_type)
    return _ArrowThroughPandas(function, return_type, list(argument_types))


class _ArrowThroughPandas:
    """``arrow_udf`` where Spark has none: a pandas UDF whose pandas values are turned
    back into Arrow arrays of the arguments' types.  A number goes with a flag of its
    nulls, and a null as a zero, so that no integer passes through a float."""

    def __init__(self, function: Callable[..., pa.Array], return_type: T.DataType | str,
                 argument_types: list[pa.DataType]) -> None:
        from pyspark.sql.functions import pandas_udf

        flagged = [_is_number(t) for t in argument_types]

        def through_pandas(*series):  # type: ignore[no-untyped-def] # no hints: a scalar pandas UDF
            values = iter(series)
            arrays = []
            for arrow, with_nulls in zip(argument_types, flagged):
                value = next(values)
                nulls = next(values).to_numpy(dtype=bool) if with_nulls else None
                arrays.append(_from_pandas(value, arrow, nulls))
            return _to_pandas(function(*arrays))

        self.udf = pandas_udf(through_pandas, return_type)  # type: ignore[call-overload]
        self.flagged = flagged

    def __call__(self, *columns: Column) -> Column:
        from pyspark.sql import functions as F

        arguments: list[Column] = []
        for column, with_nulls in zip(columns, self.flagged):
            arguments += [F.coalesce(column, F.lit(0)), column.isNull()] if with_nulls else [column]
        return self.udf(*arguments)


def _is_number(arrow: pa.DataType) -> bool:
    return pa.types.is_integer(arrow) or pa.types.is_floating(arrow)


def _from_pandas(values: Any, arrow: pa.DataType, nulls: Any) -> pa.Array:
    import pandas as pd

    if isinstance(values, pd.DataFrame):  # a struct argument
        return pa.StructArray.from_arrays([_from_pandas(values[f.name], f.type, None) for f in arrow],
                                          fields=list(arrow), mask=pa.array(values.isna().all(axis=1).to_numpy()))
    if nulls is not None:
        return pa.array(values.to_numpy(), arrow, mask=nulls)
    return pa.array(values, arrow, from_pandas=True)


def _to_pandas(array: pa.Array | pa.ChunkedArray) -> Any:
    """An Arrow result as the pandas value a pandas UDF returns, without a float for an
    integer with nulls: a frame for a struct, else a series backed by Arrow."""
    import pandas as pd

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_struct(array.type):
        return pd.DataFrame({f.name: _to_pandas(array.field(i)) for i, f in enumerate(array.type)})
    return pd.Series(pd.arrays.ArrowExtensionArray(array))


def observation() -> Any:
    """A Spark Connect ``Observation`` (metrics a job gathers in its tasks and the
    server sends back with its result), or None where the Connect client does not
    report them back (3.5's)."""
    if SPARK < (4, 0):
        return None
    from pyspark.sql.connect.observation import Observation

    return Observation()


def settings_of(spark: SparkSession, keys: Sequence[str]) -> dict[str, str | None]:
    """The session's values of ``keys`` (None: not set).  Through Spark Connect each
    request is a round trip to the server."""
    if _is_remote(spark) and SPARK >= (4, 0):
        values = spark.conf.getAll
        return {key: values.get(key) for key in keys}
    return {key: spark.conf.get(key, None) for key in keys}


def set_settings(spark: SparkSession, settings: dict[str, str]) -> None:
    """Sets the session's ``settings``."""
    if _is_remote(spark) and SPARK >= (4, 0):
        spark.conf._set_all(settings, silent=False)  # one request (the client's own batch of `set`)
        return
    for key, value in settings.items():
        spark.conf.set(key, value)


def _is_remote(spark: SparkSession) -> bool:
    return not hasattr(spark, "_jsparkSession")
