"""``pw.io.csv``: CSV files in, updates with ``time`` and ``diff`` out."""

from __future__ import annotations

from typing import Any

from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.connectors.formats.csv import CsvParserSettings
from sparkway.io._files import read_files, write_file
from sparkway.errors import traced

__all__ = ["read", "write", "CsvParserSettings"]


@traced
def read(path: Any, *, schema: type[Schema], mode: str = "streaming", csv_settings: CsvParserSettings | None = None, **kwargs: Any) -> Table:
    """Rows of the CSV files under ``path`` (a file or a directory); the header names columns.

    ``mode="static"`` reads what is there and finishes; ``"streaming"`` keeps polling, each
    new file (or appended lines) a transaction.  ``name=`` (or ``persistent_id=``) names the
    source for persistence.

    >>> import sparkway as pw
    >>> class S(pw.Schema):
    ...     word: str
    >>> pw.io.csv.read("inputs/", schema=S, mode="static").column_names()
    ['word']
    """
    return read_files("pw.io.csv.read", path, format="csv", schema=schema, mode=mode, csv_settings=csv_settings, **kwargs)


@traced
def write(table: Table, filename: Any, **kwargs: Any) -> None:
    """Writes every change of ``table`` to a CSV file: its columns, then ``time`` and ``diff``.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a\\n1")
    >>> pw.io.csv.write(t, "out.csv")
    """
    write_file("pw.io.csv.write", table, filename, format="csv", **kwargs)
