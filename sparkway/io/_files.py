"""What the file connectors of ``pw.io`` share: building a FileSource, adding a file sink."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sparkway.api import graph
from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.connectors.files import FileSource
from sparkway.connectors.formats.csv import CsvParserSettings
from sparkway.connectors.writers import CsvSink, JsonLinesSink, NullSink, ParquetSink
from sparkway.core.columns import Column
from sparkway.errors import PlanError
from sparkway.io._common import persistent_name, refuse_unknown_options

_LABELS = {
    "csv": "CsvFilesystemReader",
    "json": "JsonLinesReader",
    "plaintext": "PlaintextReader",
    "plaintext_by_file": "PlaintextReader",
    "binary": "BinaryReader",
    "parquet": "ParquetReader",
}


# options of Pathway's file readers that change nothing here: commits follow the files,
# and the backlog is bounded by a step's files
_IGNORED_READ_OPTIONS = ("autocommit_duration_ms", "max_backlog_size", "debug_data")


def read_files(
    function: str,
    path: str | Any,
    *,
    format: str,
    schema: type[Schema] | None,
    mode: str = "streaming",
    csv_settings: CsvParserSettings | None = None,
    persistent_id: str | None = None,
    name: str | None = None,
    with_metadata: bool = False,
    object_pattern: str = "*",
    json_field_paths: dict[str, str] | None = None,
    retract_when_emptied: bool = False,
    on_bad_file: str = "skip",
    files: Any = None,
    **options: Any,
) -> Table:
    """A table fed by the files under ``path``; see ``pw.io.fs.read``.  ``function`` is the
    public name, for messages; ``files`` lists and reads them where they are not local
    (``connectors.object_store``)."""
    refuse_unknown_options(function, options, _IGNORED_READ_OPTIONS)
    if json_field_paths:
        raise PlanError(f"{function}: json_field_paths is not supported by the file readers yet: "
                        "read the JSON objects whole (a pw.Json column) and select the fields")
    if format in ("csv", "json", "parquet") and schema is None:
        raise PlanError(f"reading {format} files needs schema=: a pw.Schema subclass naming the columns")
    columns: dict[str, Column] = schema.columns() if schema is not None else {}
    source = FileSource(
        str(path),
        format=format,
        columns=columns,
        mode=mode,
        name=persistent_name(name, persistent_id),
        with_metadata=with_metadata,
        csv_settings=csv_settings,
        object_pattern=object_pattern,
        connector_label=_LABELS.get(format, "FileReader"),
        retract_when_emptied=retract_when_emptied,
        on_bad_file=on_bad_file,
        files=files,
    )
    return graph.table_from_source(source)


def write_file(
    function: str, table: Table, filename: str | Any, *, format: str, name: str | None = None,
    sort_by: Iterable[Any] | None = None, **options: Any,
) -> None:
    """Every change of ``table`` appended to a file (Parquet: files in a directory), with
    ``time`` and ``diff``."""
    refuse_unknown_options(function, options)
    sinks = {"csv": CsvSink, "json": JsonLinesSink, "parquet": ParquetSink}
    if format not in sinks:
        raise PlanError(f"cannot write format {format!r}; use 'csv', 'json' or 'parquet'")
    sink = sinks[format](str(filename), table.column_names(), dtypes=table.schema._dtypes(), name=name)
    graph.write_to_sink(table, sink, sort_by)


def write_null(table: Table, **options: Any) -> None:
    refuse_unknown_options("pw.io.null.write", options, ("name", "sort_by"))  # nothing is written
    graph.write_to_sink(table, NullSink())


__all__ = ["read_files", "write_file", "write_null"]
