"""``PyFilesystemFiles``: the files of a PyFilesystem (``fs``) object, for ``FileSource``.

PyFilesystem puts ZIP and TAR archives, FTP, SFTP, WebDAV, memory and OS folders behind
one interface (``fs.base.FS``); this class lists and reads them the way ``LocalFiles``
does for the local disk, so that the file source's change detection, persistence and
retractions work unchanged.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from sparkway.connectors.files import FileEntry


class PyFilesystemFiles:
    """The files under ``path`` in the filesystem ``source`` (listed recursively, at
    most once per ``refresh_interval`` seconds: listing a remote filesystem is slow)."""

    #: an FS object lives in this process: Spark's tasks cannot open its files
    read_by_tasks = False

    def __init__(self, source: Any, path: str = "", refresh_interval: float = 30.0) -> None:
        self.source = source
        self.root = "/" + path.strip("/")
        self.refresh_interval = refresh_interval
        self._listed_at: float | None = None
        self._listing: dict[str, FileEntry] = {}
        self._infos: dict[str, Any] = {}

    def list(self) -> dict[str, FileEntry]:
        """Files by key (path relative to ``path``), sorted by key."""
        now = time.monotonic()
        if self._listed_at is not None and now - self._listed_at < self.refresh_interval:
            return self._listing
        self._listed_at = now
        if not self.exists():
            self._listing, self._infos = {}, {}
            return {}
        from fs.walk import Walker

        infos = {}
        for folder, info in Walker().info(self.source, self.root, namespaces=["details", "access"]):
            if not info.is_dir:
                infos[folder] = info
        self._infos = infos
        self._listing = {
            path[len(self.root) :].lstrip("/"): FileEntry(path, info.size or 0, _ns(info.modified))
            for path, info in sorted(infos.items())
        }
        return self._listing

    def exists(self) -> bool:
        return bool(self.source.exists(self.root))

    def read(self, path: str, start: int = 0, end: int | None = None) -> bytes:
        from fs.errors import FSError

        try:
            with self.source.openbin(path) as f:
                if start:
                    f.seek(start)
                return f.read() if end is None else f.read(max(end - start, 0))
        except FSError as exc:  # the file source skips (and logs) files it cannot read
            raise OSError(str(exc)) from exc

    def metadata(self, entry: FileEntry, size: int, seen_at: int) -> dict[str, Any]:
        """``_metadata``: the keys and order of Pathway's PyFilesystem reader; times in
        whole seconds, None when the filesystem does not keep them."""
        info = self._infos.get(entry.path)
        return {
            "created_at": _seconds(info.created if info else None),
            "modified_at": entry.mtime_ns // 10**9 if entry.mtime_ns else None,
            "accessed_at": _seconds(info.accessed if info else None),
            "seen_at": seen_at,
            "size": size,
            "owner": _owner(info),
            "name": entry.path.rsplit("/", 1)[-1],
            "path": entry.path.lstrip("/"),
        }


def _ns(moment: datetime | None) -> int:
    return 0 if moment is None else int(moment.timestamp() * 10**9)


def _seconds(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp())


def _owner(info: Any) -> str | None:
    if info is None or not info.has_namespace("access"):
        return None  # a memory or archive filesystem keeps no owner
    return info.user
