"""``pw.io.fs``: files in any of the formats csv, json, plaintext, plaintext_by_file, binary,
and parquet (sparkway's own: Pathway 0.33 has no Parquet format)."""

from __future__ import annotations

from typing import Any

from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.io._files import read_files, write_file
from sparkway.errors import traced


@traced
def read(path: Any, *, format: str, schema: type[Schema] | None = None, mode: str = "streaming", **kwargs: Any) -> Table:
    """Rows of the files under ``path`` in the given format.

    ``format="parquet"`` reads Parquet files whole, column by column, and needs a
    ``schema``: its columns are found by name and their values converted to the
    schema's types (a column whose type does not fit is an error naming the file and
    the column).  In streaming mode, as for the other formats, a new file is read, a
    modified file's rows are retracted and the file read again, and a deleted file's
    rows are retracted; a file is read once its footer is written.  With persistence a
    restart reads only the new and changed files.

    A ``path`` that goes missing, or that had files and suddenly lists none (the empty
    mount point of an unmounted disk), retracts nothing: a warning says so, and the rows
    stay until files come back.  ``retract_when_emptied=True`` (sparkway's own keyword,
    taken by every file reader) retracts them instead, as deleting the files one by
    one does.

    A file that does not fit the schema as a whole (a CSV header without a schema
    column) stops a static read with an error naming it; a streaming read logs that
    error and skips the file until it changes, so that one bad file does not stop a
    pipeline that runs for good.  ``on_bad_file="stop"`` (sparkway's own keyword, taken
    by every file reader) stops a streaming read with the error instead.  Rows that do
    not fit are skipped either way, each with a warning naming its file, line and column.

    >>> import sparkway as pw
    >>> pw.io.fs.read("blobs/", format="binary", mode="static").column_names()
    ['data']
    >>> class Sales(pw.Schema):
    ...     shop: str
    ...     amount: float
    >>> pw.io.fs.read("sales/", format="parquet", schema=Sales, mode="static").column_names()
    ['shop', 'amount']
    """
    return read_files("pw.io.fs.read", path, format=format, schema=schema, mode=mode, **kwargs)


@traced
def write(table: Table, filename: Any, *, format: str, **kwargs: Any) -> None:
    """Writes every change of ``table`` as csv or json lines, with ``time`` and ``diff``.

    ``format="parquet"`` writes into the directory ``filename`` one Parquet file per
    time (a large time's output: one per piece of it), ``part-<time>-<piece>.parquet``,
    each written under a hidden name and renamed when complete, with the columns,
    ``time`` and ``diff``; ``spark.read.parquet(filename)`` reads the whole stream of
    changes.  Each run rewrites the directory's ``part-*.parquet`` files.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("shop | amount\\n north | 2.5")
    >>> pw.io.fs.write(t, "sales.csv", format="csv")
    >>> pw.io.fs.write(t, "sales_parquet/", format="parquet")
    """
    write_file("pw.io.fs.write", table, filename, format=format, **kwargs)
