"""A folder of blobs in a filesystem or object store, reached through fsspec.

The driver and the executors both use it, so it must be picklable: it carries only
its URL and options, and opens the filesystem lazily in each process.
"""

from __future__ import annotations

import io
import os
import uuid
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.ipc as ipc


class BlobStorage:
    """Files under one root.  Writes are atomic: a reader sees the old or the new blob."""

    def __init__(self, root: str, options: dict[str, Any] | None = None) -> None:
        self.root = root.rstrip("/")
        self.options = dict(options or {})
        self._fs: fsspec.AbstractFileSystem | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root, "options": self.options, "_fs": None}

    def __repr__(self) -> str:
        return f"BlobStorage({self.root!r})"

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        if self._fs is None:
            self._fs, _ = fsspec.core.url_to_fs(self.root, **self.options)
        return self._fs

    @property
    def is_local(self) -> bool:
        return "file" in _protocols(self.fs)

    def path(self, relative: str) -> str:
        return f"{self._root_path()}/{relative}" if relative else self._root_path()

    def _root_path(self) -> str:
        return self.fs._strip_protocol(self.root)

    def child(self, relative: str) -> "BlobStorage":
        return BlobStorage(f"{self.root}/{relative}", self.options)

    def write_bytes(self, relative: str, data: bytes) -> None:
        target = self.path(relative)
        if self.is_local:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            tmp = f"{target}.tmp-{uuid.uuid4().hex}"
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        else:
            with self.fs.open(target, "wb") as f:  # an object store's PUT is atomic
                f.write(data)

    def read_bytes(self, relative: str) -> bytes:
        with self.fs.open(self.path(relative), "rb") as f:
            return f.read()

    def exists(self, relative: str) -> bool:
        return self.fs.exists(self.path(relative))

    def list(self, relative: str = "") -> list[str]:
        """Names directly under a folder, sorted; an absent folder is empty."""
        try:
            entries = self.fs.ls(self.path(relative), detail=False)
        except FileNotFoundError:
            return []
        return sorted(e.rstrip("/").rsplit("/", 1)[-1] for e in entries if ".tmp-" not in e)

    def delete(self, relative: str) -> None:
        if self.fs.exists(self.path(relative)):
            self.fs.rm(self.path(relative), recursive=True)

    def write_arrow(self, relative: str, table: pa.Table) -> None:
        sink = io.BytesIO()
        with ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        self.write_bytes(relative, sink.getvalue())

    def read_arrow(self, relative: str) -> pa.Table:
        return ipc.open_file(pa.BufferReader(self.read_bytes(relative))).read_all()


def _protocols(fs: fsspec.AbstractFileSystem) -> tuple[str, ...]:
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)
