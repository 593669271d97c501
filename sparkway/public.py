"""The names of ``import sparkway as pw``: Pathway's API, gathered from the layers.

``sparkway/__init__.py`` loads this module on the first use of one of its names, so that
Spark's Python workers, which import only the engine's kernels, never load it.
"""

from sparkway import errors, io, persistence
from sparkway.api import debug, reducers, temporal, udfs, universes
from sparkway.api.async_transformer import AsyncTransformer
from sparkway.api.config import set_license_key, set_monitoring_config
from sparkway.api.functions import (
    apply, apply_with_type, cast, coalesce, declare_type, fill_error, if_else, make_tuple, require, unwrap,
)
from sparkway.api.graph import global_error_log, local_error_log
from sparkway.api.iterate import iterate, iterate_universe
from sparkway.api.row_transformer import (
    ClassArg, attribute, input_attribute, input_method, method, output_attribute, transformer,
)
from sparkway.api.run import MonitoringLevel, run, run_all
from sparkway.api.schema import (
    Schema, SchemaProperties, assert_table_has_schema, column_definition, schema_builder, schema_from_csv,
    schema_from_dict, schema_from_types, table_transformer,
)
from sparkway.api.sql import sql
from sparkway.api.table import (
    GroupedTable, JoinMode, JoinResult, Table, groupby, join, join_inner, join_left, join_outer, join_right,
)
from sparkway.api.thisclass import left, right, this
from sparkway.api.reducers import BaseCustomAccumulator
from sparkway.api.udfs import UDF, apply_async, udf
from sparkway.api.yaml_config import load_yaml
from sparkway.core.expression import ColumnRef as ColumnReference, Expr as ColumnExpression
from sparkway.core.dtypes import DateTimeNaive, DateTimeUtc, Duration, Json, Pointer, PyObjectWrapper, wrap_py_object
from sparkway.io import demo
from sparkway.persistence import PersistenceMode
from sparkway.io import moved_csv as csv
from sparkway import stdlib
from sparkway.stdlib import indexing, ml, utils
from sparkway.stdlib.utils.pandas_transformer import pandas_transformer
from sparkway.stdlib import statistical
from sparkway.stdlib import time_utils as _time_utils
from sparkway.stdlib import viz as _viz

# Pathway's temporal utilities that read the clock are methods of tables, and in pw.temporal
Table.inactivity_detection = _time_utils.inactivity_detection
Table.add_update_timestamp_utc = _time_utils.add_update_timestamp_utc
Table.interpolate = statistical.interpolate
Table.plot = _viz.plot
Table.show = _viz.show
temporal.utc_now = _time_utils.utc_now
temporal.inactivity_detection = _time_utils.inactivity_detection
temporal.add_update_timestamp_utc = _time_utils.add_update_timestamp_utc

__all__ = [
    "apply", "apply_async", "apply_with_type", "assert_table_has_schema", "AsyncTransformer", "attribute",
    "BaseCustomAccumulator", "cast", "ClassArg", "coalesce", "column_definition", "ColumnExpression",
    "ColumnReference", "csv", "DateTimeNaive", "DateTimeUtc", "debug", "declare_type", "demo", "Duration", "errors",
    "fill_error", "global_error_log", "groupby", "GroupedTable", "if_else", "input_attribute", "input_method", "io",
    "indexing", "iterate", "iterate_universe", "join", "join_inner", "join_left", "join_outer", "join_right", "JoinMode",
    "JoinResult", "Json", "left", "load_yaml", "local_error_log", "make_tuple", "method", "ml", "MonitoringLevel",
    "output_attribute", "pandas_transformer", "persistence", "PersistenceMode", "Pointer", "PyObjectWrapper",
    "reducers", "require", "right", "run", "run_all", "Schema", "schema_builder", "schema_from_csv",
    "schema_from_dict", "schema_from_types", "SchemaProperties", "set_license_key", "set_monitoring_config", "sql",
    "statistical", "stdlib", "Table", "table_transformer", "temporal", "this",
    "transformer", "UDF", "udf", "udfs", "universes", "unwrap", "utils", "wrap_py_object",
]
