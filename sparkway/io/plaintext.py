"""``pw.io.plaintext``: a row (column ``data``) per line of text files."""

from __future__ import annotations

from typing import Any

from sparkway.api.table import Table
from sparkway.io._files import read_files
from sparkway.errors import traced


@traced
def read(path: Any, *, mode: str = "streaming", **kwargs: Any) -> Table:
    """One row per line, in a ``data: str`` column.

    >>> import sparkway as pw
    >>> pw.io.plaintext.read("notes/", mode="static").column_names()
    ['data']
    """
    return read_files("pw.io.plaintext.read", path, format="plaintext", schema=None, mode=mode, **kwargs)
