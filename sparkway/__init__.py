"""sparkway: incremental, persistent, consistent data pipelines on Apache Spark.

The API follows Pathway's, so that ``import sparkway as pw`` runs Pathway programs.
"""

from enum import Enum as _Enum

from sparkway import _deprecated_csv as csv
from sparkway import io, persistence
from sparkway.api import debug, reducers, temporal
from sparkway.api.dtypes import DateTimeNaive, DateTimeUtc, Duration, Json, Pointer
from sparkway.api.functions import (
    apply, apply_with_type, cast, coalesce, if_else, make_tuple, require, udf, unwrap,
)
from sparkway.api.run import MonitoringLevel, run
from sparkway.api.schema import Schema, column_definition, schema_from_types
from sparkway.api.table import GroupedTable, JoinResult, Table
from sparkway.api.thisclass import left, right, this


class JoinMode(_Enum):
    """The kind of a join: ``t.join(other, ..., how=pw.JoinMode.LEFT)``."""

    INNER = "inner"
    LEFT = "left"
    RIGHT = "right"
    OUTER = "outer"


__all__ = [
    "DateTimeNaive", "DateTimeUtc", "Duration", "GroupedTable", "JoinMode", "JoinResult", "Json",
    "MonitoringLevel", "Pointer", "Schema", "Table", "apply", "apply_with_type", "cast", "coalesce",
    "column_definition", "csv", "debug", "if_else", "io", "left", "make_tuple", "persistence",
    "reducers", "require", "right", "run", "schema_from_types", "temporal", "this", "udf", "unwrap",
]
