"""``pw.io.jsonlines``: one JSON object per line, in and out."""

from __future__ import annotations

from typing import Any

from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.io._files import read_files, write_file
from sparkway.errors import traced


@traced
def read(path: Any, *, schema: type[Schema], mode: str = "streaming", **kwargs: Any) -> Table:
    """Rows of the JSON-lines files under ``path``; object keys name the columns.

    >>> import sparkway as pw
    >>> class S(pw.Schema):
    ...     word: str
    >>> pw.io.jsonlines.read("inputs/", schema=S, mode="static").column_names()
    ['word']
    """
    return read_files("pw.io.jsonlines.read", path, format="json", schema=schema, mode=mode, **kwargs)


@traced
def write(table: Table, filename: Any, **kwargs: Any) -> None:
    """Writes every change as a JSON object with the columns, ``diff`` and ``time``.

    >>> import sparkway as pw
    >>> pw.io.jsonlines.write(pw.debug.table_from_markdown("a\\n1"), "out.jsonl")
    """
    write_file("pw.io.jsonlines.write", table, filename, format="json", **kwargs)
