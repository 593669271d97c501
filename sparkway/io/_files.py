"""What the file connectors of ``pw.io`` share: building a FileSource, adding a file sink."""

from __future__ import annotations

from typing import Any

from sparkway.api.debug import table_from_source
from sparkway.api.graph import add_output
from sparkway.api.schema import Column, Schema
from sparkway.api.table import Table
from sparkway.connectors.files import FileSource
from sparkway.connectors.formats import CsvParserSettings
from sparkway.connectors.writers import CsvSink, JsonLinesSink, NullSink
from sparkway.io._common import persistent_name
from sparkway.plan import nodes as n

_LABELS = {
    "csv": "CsvFilesystemReader",
    "json": "JsonLinesReader",
    "plaintext": "PlaintextReader",
    "plaintext_by_file": "PlaintextReader",
    "binary": "BinaryReader",
}


def read_files(
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
    **ignored: Any,
) -> Table:
    """A table fed by the files under ``path``; see ``pw.io.fs.read``."""
    if format in ("csv", "json") and schema is None:
        raise ValueError(f"reading {format} files needs schema=: a pw.Schema subclass naming the columns")
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
        connector_label=_LABELS[format],
    )
    return table_from_source(source, source.columns)


def write_file(table: Table, filename: str | Any, *, format: str, name: str | None = None, **ignored: Any) -> None:
    """Every change of ``table`` appended to a file, with ``time`` and ``diff``."""
    sinks = {"csv": CsvSink, "json": JsonLinesSink}
    if format not in sinks:
        raise ValueError(f"cannot write format {format!r}; use 'csv' or 'json'")
    sink = sinks[format](str(filename), table.column_names(), dtypes=table.typehints(), name=name)
    add_output(n.Output(dict(table._node.columns), table._node, sink))


def write_null(table: Table, **ignored: Any) -> None:
    add_output(n.Output(dict(table._node.columns), table._node, NullSink()))


__all__ = ["read_files", "write_file", "write_null"]
