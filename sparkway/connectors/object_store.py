"""``ObjectStoreFiles``: the objects under a URL of an fsspec filesystem (``s3://``,
``gs://``, ``abfs://``...), for ``FileSource``.

The driver lists the objects; the file source's change detection, persistence and
retractions work as for local files.  An object is replaced whole, never appended to,
so its ETag (where the store gives one) joins its size and modification time in telling
whether it changed: S3 keeps modification times to the second, and an object rewritten
within a second at the same size would otherwise look unchanged.

The class holds plain values only (a URL and the filesystem's options), so that Spark's
tasks get it with their pieces and fetch the byte ranges they parse from the store
themselves (``FileSource.read_on_executors``).
"""

from __future__ import annotations

import fnmatch
from datetime import datetime
from typing import Any

import fsspec

from sparkway.connectors.files import FileEntry


class ObjectStoreFiles:
    """The objects under ``url`` (an object, or a prefix read as a folder, recursively)
    whose names match ``pattern``, in the filesystem fsspec opens for ``url`` with
    ``options``."""

    #: Spark's tasks can read these objects themselves (given the store's network)
    read_by_tasks = True

    def __init__(self, url: str, options: dict[str, Any] | None = None, pattern: str = "*") -> None:
        self.root = url.rstrip("/")
        self.options = dict(options or {})
        self.pattern = pattern
        self._fs: fsspec.AbstractFileSystem | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_fs": None}

    def __repr__(self) -> str:  # the options may hold secrets
        return f"ObjectStoreFiles({self.root!r})"

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        if self._fs is None:
            # objects change under other writers: a cached listing would hide them
            self._fs, _ = fsspec.core.url_to_fs(self.root, **{**self.options, "use_listings_cache": False})
        return self._fs

    def list(self) -> dict[str, FileEntry]:
        """Objects by key (the name relative to the URL, "/"-separated), sorted by key."""
        root = self.fs._strip_protocol(self.root)
        try:
            found = self.fs.find(root, detail=True)
        except FileNotFoundError:
            return {}
        entries = {}
        for name, info in found.items():
            key = name[len(root) + 1:] if name != root else name.rsplit("/", 1)[-1]
            if info.get("type", "file") != "file" or not self._matches(key):
                continue
            entries[key] = FileEntry(self.fs.unstrip_protocol(name), int(info.get("size") or 0),
                                     _modified_ns(info), _version(info))
        return dict(sorted(entries.items()))

    def _matches(self, key: str) -> bool:
        target = key if "/" in self.pattern else key.rsplit("/", 1)[-1]
        return fnmatch.fnmatchcase(target, self.pattern)

    def exists(self) -> bool:
        return bool(self.fs.exists(self.root))

    def read(self, path: str, start: int = 0, end: int | None = None) -> bytes:
        if end is not None and end <= start:
            return b""
        return self.fs.cat_file(path, start=start, end=end)

    def metadata(self, entry: FileEntry, size: int, seen_at: int) -> dict[str, Any]:
        """``_metadata``: the keys of Pathway's S3 reader, ``path`` the object's key in its
        bucket (an object has no creation time, and a listing names no owner)."""
        key = self.fs._strip_protocol(entry.path).split("/", 1)[-1]
        return {"created_at": None, "modified_at": entry.mtime_ns // 10**9, "owner": None,
                "path": key, "size": size, "seen_at": seen_at}


def _modified_ns(info: dict[str, Any]) -> int:
    """The modification time a listing gives, in ns (its key and type vary by store)."""
    for key in ("LastModified", "mtime", "updated", "last_modified", "created"):
        value = info.get(key)
        if isinstance(value, str):
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        if isinstance(value, datetime):
            return int(value.timestamp() * 10**9)
        if isinstance(value, (int, float)):
            return int(value * 10**9)
    return 0


def _version(info: dict[str, Any]) -> str:
    for key in ("ETag", "etag", "md5Hash", "generation"):
        if info.get(key):
            return str(info[key]).strip('"')
    return ""
