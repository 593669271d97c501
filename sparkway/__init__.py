"""sparkway: incremental, persistent, consistent data pipelines on Apache Spark.

The API follows Pathway's, so that ``import sparkway as pw`` runs Pathway programs.
"""

from sparkway import errors, io, persistence
from sparkway.api import debug, reducers, temporal, udfs, universes
from sparkway.api.async_transformer import AsyncTransformer
from sparkway.api.functions import (
    apply, apply_with_type, cast, coalesce, declare_type, fill_error, if_else, make_tuple, require, unwrap,
)
from sparkway.api.graph import global_error_log, local_error_log
from sparkway.api.iterate import iterate, iterate_universe
from sparkway.api.run import MonitoringLevel, run, run_all
from sparkway.api.schema import (
    Schema, SchemaProperties, assert_table_has_schema, column_definition, schema_builder, schema_from_csv,
    schema_from_dict, schema_from_types,
)
from sparkway.api.sql import sql
from sparkway.api.table import GroupedTable, JoinMode, JoinResult, Table
from sparkway.api.thisclass import left, right, this
from sparkway.api.reducers import BaseCustomAccumulator
from sparkway.api.udfs import UDF, apply_async, udf
from sparkway.core.expression import ColumnRef as ColumnReference, Expr as ColumnExpression
from sparkway.core.dtypes import DateTimeNaive, DateTimeUtc, Duration, Json, Pointer
from sparkway.io import demo
from sparkway.io import moved_csv as csv

__all__ = [
    "AsyncTransformer", "BaseCustomAccumulator", "ColumnExpression", "ColumnReference", "DateTimeNaive", "DateTimeUtc", "Duration", "GroupedTable", "JoinMode", "JoinResult",
    "Json", "MonitoringLevel", "Pointer", "Schema", "SchemaProperties", "Table", "UDF", "apply", "apply_async",
    "apply_with_type", "assert_table_has_schema", "cast", "coalesce", "column_definition", "csv", "debug", "declare_type", "demo", "errors",
    "fill_error", "global_error_log", "if_else", "io", "iterate", "iterate_universe", "left", "local_error_log", "make_tuple", "persistence",
    "reducers", "require", "right", "run", "run_all", "schema_builder", "schema_from_csv", "schema_from_dict",
    "schema_from_types", "sql", "temporal", "this", "udf", "udfs",
    "universes", "unwrap",
]
