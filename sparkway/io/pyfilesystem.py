"""``pw.io.pyfilesystem``: the files of a PyFilesystem source (ZIP/TAR archives, FTP, SFTP,
WebDAV, memory or OS folders: anything ``fs.open_fs`` opens), one row per file."""

from __future__ import annotations

import datetime
from typing import Any

from sparkway.api import graph
from sparkway.api.table import Table
from sparkway.connectors.files import FileSource
from sparkway.connectors.pyfilesystem import PyFilesystemFiles
from sparkway.errors import PlanError, traced

__all__ = ["read"]


@traced
def read(
    source: Any,
    *,
    path: str = "",
    refresh_interval: float | datetime.timedelta = 30,
    mode: str = "streaming",
    format: str = "binary",
    with_metadata: bool = False,
    name: str | None = None,
    max_backlog_size: int | None = None,
) -> Table:
    """A row per file under ``path`` in ``source`` (an ``fs.base.FS``), read recursively:
    ``data`` (bytes) and, with ``with_metadata=True``, ``_metadata`` (Json: created_at,
    modified_at, accessed_at, seen_at, size, owner, name, path).

    ``format="only_metadata"`` gives the ``_metadata`` column alone (the files are still
    read, to see changes that keep the size and time).  In ``"streaming"`` mode the
    source is listed again every ``refresh_interval`` seconds: a new file adds a row, a
    changed one replaces its row, a deleted one removes it.  ``max_backlog_size`` is
    accepted and ignored.  Needs the ``fs`` package (``pip install fs``).

    >>> import sparkway as pw
    >>> from fs import open_fs
    >>> folder = open_fs("mem://")
    >>> folder.writebytes("a.txt", b"hello")
    >>> t = pw.io.pyfilesystem.read(folder, mode="static")
    >>> pw.debug.compute_and_print(t, include_id=False)
    data
    b'hello'
    """
    if format not in ("binary", "only_metadata"):
        raise PlanError(f"format={format!r}: use 'binary' (the files' contents) or 'only_metadata'")
    if isinstance(refresh_interval, datetime.timedelta):
        refresh_interval = refresh_interval.total_seconds()
    files = PyFilesystemFiles(source, path, float(refresh_interval))
    only_metadata = format == "only_metadata"
    table = graph.table_from_source(
        FileSource(
            files.root, format="binary", columns={}, mode=mode, name=name,
            with_metadata=with_metadata or only_metadata, connector_label="PyFilesystemReader", files=files,
        )
    )
    if only_metadata:
        return table.select(_metadata=table._metadata)
    # Pathway's reader puts _metadata first
    return table.select(_metadata=table._metadata, data=table.data) if with_metadata else table
