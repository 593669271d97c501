"""``pw.io.fs``: files in any of the formats csv, json, plaintext, plaintext_by_file, binary."""

from __future__ import annotations

from typing import Any

from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.io._files import read_files, write_file
from sparkway.errors import traced


@traced
def read(path: Any, *, format: str, schema: type[Schema] | None = None, mode: str = "streaming", **kwargs: Any) -> Table:
    """Rows of the files under ``path`` in the given format.

    >>> import sparkway as pw
    >>> pw.io.fs.read("blobs/", format="binary", mode="static").column_names()
    ['data']
    """
    return read_files("pw.io.fs.read", path, format=format, schema=schema, mode=mode, **kwargs)


@traced
def write(table: Table, filename: Any, *, format: str, **kwargs: Any) -> None:
    """Writes every change of ``table`` as csv or json lines, with ``time`` and ``diff``."""
    write_file("pw.io.fs.write", table, filename, format=format, **kwargs)
