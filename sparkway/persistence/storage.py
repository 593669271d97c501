"""A folder of blobs in a filesystem or object store, reached through fsspec.

The driver and the executors both use it, so it must be picklable: it carries only
its URL and options, and opens the filesystem lazily in each process.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, BinaryIO

import fsspec
import fsspec.asyn
import pyarrow as pa
import pyarrow.ipc as ipc

from sparkway.errors import PersistenceError
from sparkway.persistence.faults import fault_point
from sparkway.persistence.scratch import ScratchFolder


@contextlib.contextmanager
def spooled() -> Iterator[str]:
    """A local file to write before its one upload to an object store, in a scratch
    folder of its own, which is removed with it (or, after a crash, by a later process)."""
    folder = ScratchFolder("spool")
    try:
        yield os.path.join(folder.path, "upload")
    finally:
        folder.remove()


class BlobStorage:
    """Files under one root.  Writes are atomic: a reader sees the old or the new blob.
    On a filesystem they are durable too (fsynced), unless not ``synced``: a storage
    that no later run reads (the state of a run without persistence) needs no fsync,
    which cost a streaming step of 1,000 rows a dozen of them."""

    def __init__(self, root: str, options: dict[str, Any] | None = None, synced: bool = True) -> None:
        self.root = root.rstrip("/")
        self.options = dict(options or {})
        self.synced = synced
        self._fs: fsspec.AbstractFileSystem | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root, "options": self.options, "synced": self.synced, "_fs": None}

    def __repr__(self) -> str:
        return f"BlobStorage({self.root!r})"

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        if self._fs is None:
            # Other processes (executors, the next run) change these folders: a cached
            # listing would hide their steps, commits and changelogs.
            options = {**self.options, "use_listings_cache": False}
            self._fs, _ = fsspec.core.url_to_fs(self.root, **options)
        return self._fs

    @property
    def is_local(self) -> bool:
        return "file" in _protocols(self.fs)

    def path(self, relative: str) -> str:
        return f"{self._root_path()}/{relative}" if relative else self._root_path()

    def _root_path(self) -> str:
        return self.fs._strip_protocol(self.root)

    def child(self, relative: str) -> "BlobStorage":
        return BlobStorage(f"{self.root}/{relative}", self.options, self.synced)

    def write_bytes(self, relative: str, data: bytes) -> None:
        target = self.path(relative)
        if self.is_local:
            with durably_replacing(target, "storage.bytes.synced", self.synced) as f:
                f.write(data)
        else:
            # one PUT (a multipart upload above 100 MB): readers see all of it or none
            self.fs.pipe_file(target, data)

    def read_bytes(self, relative: str) -> bytes:
        return self.fs.cat_file(self.path(relative))

    def read_json(self, relative: str) -> Any:
        """A JSON blob; one that does not parse is an error naming it (a damaged storage
        is never taken for an empty one)."""
        data = self.read_bytes(relative)
        try:
            return json.loads(data)
        except ValueError as error:  # not JSON, or not UTF-8
            raise damaged(self.path(relative), error) from None

    def exists(self, relative: str) -> bool:
        return self.fs.exists(self.path(relative))

    def list(self, relative: str = "") -> list[str]:
        """Names directly under a folder, sorted; an absent folder is empty."""
        try:
            entries = self.fs.ls(self.path(relative), detail=False)
        except FileNotFoundError:
            return []
        return sorted(e.rstrip("/").rsplit("/", 1)[-1] for e in entries if ".tmp-" not in e)

    def remove_temporary_files(self) -> int:
        """Deletes the temporary files that writes interrupted by a crash left behind (a
        local storage; an object store has none: a blob is one upload).  Call it only
        while holding the storage: another process's writes in progress use such files
        too.  Returns how many were deleted."""
        if not self.is_local or not os.path.isdir(self._root_path()):
            return 0
        removed = 0
        for folder, _, names in os.walk(self._root_path()):
            for name in names:
                if ".tmp-" in name:
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(os.path.join(folder, name))
                        removed += 1
        return removed

    def delete(self, relative: str, durable: bool = False) -> None:
        """Deletes a blob (or folder); ``durable``: on a filesystem, its folder is fsynced
        after, so that a power loss cannot bring it back (an object store's delete is)."""
        if self.fs.exists(self.path(relative)):
            self.fs.rm(self.path(relative), recursive=True)
            if durable and self.is_local:
                fsync_folder(os.path.dirname(self.path(relative)))

    def write_arrow(self, relative: str, table: pa.Table, compression: str | None = None) -> None:
        """An Arrow IPC file (``compression``: its buffers' codec, e.g. "zstd")."""
        with self.arrow_writer(relative, table.schema, compression) as writer:
            writer.write_table(table)

    @contextlib.contextmanager
    def arrow_writer(
        self, relative: str, schema: pa.Schema, compression: str | None = None,
    ) -> Iterator[ipc.RecordBatchFileWriter]:
        """An Arrow IPC file written batch by batch, so that a large table need not be
        held whole; it appears when the block ends without an exception, whole or not at
        all (local: a temporary file renamed; an object store: one upload at the end)."""
        target = self.path(relative)
        options = ipc.IpcWriteOptions(compression=compression)
        if self.is_local:
            with durably_replacing(target, "storage.arrow.synced", self.synced) as f:
                with ipc.new_file(f, schema, options=options) as writer:
                    yield writer
            return
        with spooled() as tmp, writing_through(target, tmp):
            with open(tmp, "wb") as f, ipc.new_file(f, schema, options=options) as writer:
                yield writer
            self.fs.put_file(tmp, target)

    def read_arrow(self, relative: str) -> pa.Table:
        return self.open_arrow(relative).read_all()

    def open_arrow(self, relative: str) -> ipc.RecordBatchFileReader:
        """An Arrow IPC file; one that does not parse is an error naming it."""
        try:
            return ipc.open_file(pa.BufferReader(self.read_bytes(relative)))
        except pa.ArrowInvalid as error:
            raise damaged(self.path(relative), error) from None

    # -- conditional writes (object stores), for the lease of metadata.py -----------------
    def read_versioned(self, relative: str) -> "Versioned | None":
        """The blob with its version tag and age, or None when it does not exist."""
        bucket, key = self._bucket_key(relative)
        try:
            return fsspec.asyn.sync(self.fs.loop, _get_versioned, self.fs, bucket, key)
        except FileNotFoundError:
            if not self.fs.exists(bucket):
                raise
            return None

    def create(self, relative: str, data: bytes) -> str | None:
        """Writes a blob that must not exist yet (``If-None-Match: *``): its version tag,
        or None when the blob exists."""
        bucket, key = self._bucket_key(relative)
        try:
            return self.fs.call_s3("put_object", Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")["ETag"]
        except OSError as exc:
            if _lost_race(exc):
                return None
            raise

    def replace(self, relative: str, data: bytes, tag: str) -> str | None:
        """Overwrites a blob unless it changed since version ``tag`` (``If-Match``): the
        new version tag, or None when it changed or is gone."""
        bucket, key = self._bucket_key(relative)
        try:
            return self.fs.call_s3("put_object", Bucket=bucket, Key=key, Body=data, IfMatch=tag)["ETag"]
        except OSError as exc:
            if _lost_race(exc):
                return None
            raise

    def delete_if(self, relative: str, tag: str) -> bool:
        """Deletes a blob if it is still at version ``tag``."""
        bucket, key = self._bucket_key(relative)
        try:
            self.fs.call_s3("delete_object", Bucket=bucket, Key=key, IfMatch=tag)
        except OSError as exc:
            if _lost_race(exc):
                return False
            raise
        return True

    def _bucket_key(self, relative: str) -> tuple[str, str]:
        if "s3" not in _protocols(self.fs):
            raise NotImplementedError(f"conditional writes are implemented for S3 only, not for {self.root}")
        bucket, key, _ = self.fs.split_path(self.path(relative))
        return bucket, key


@dataclass(frozen=True)
class Versioned:
    data: bytes
    tag: str  # the ETag: changes with every write of different content
    age_s: float  # since the last write, measured by the store's clock (1 s resolution)


async def _get_versioned(fs: Any, bucket: str, key: str) -> Versioned:
    response = await fs._call_s3("get_object", Bucket=bucket, Key=key)
    try:
        data = await response["Body"].read()
    finally:
        response["Body"].close()
    # both times come from the server: the reader's own clock does not matter
    now = parsedate_to_datetime(response["ResponseMetadata"]["HTTPHeaders"]["date"])
    return Versioned(data, response["ETag"], (now - response["LastModified"]).total_seconds())


def _lost_race(exc: OSError) -> bool:
    """A conditional request that failed because the blob is not as expected."""
    response = getattr(exc.__cause__, "response", None) or {}
    code = response.get("Error", {}).get("Code")
    return code in ("PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey", "412", "409")


def _protocols(fs: fsspec.AbstractFileSystem) -> tuple[str, ...]:
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


def damaged(path: str, error: Exception) -> PersistenceError:
    """The error for a file of a persistence storage that cannot be read."""
    return PersistenceError(
        f"cannot read {path} ({error}): the persisted state was damaged; restore it from a backup, "
        "or delete the persistence folder to compute the state again from the input"
    )


@contextlib.contextmanager
def durably_replacing(target: str, synced_point: str, synced: bool = True) -> Iterator[BinaryIO]:
    """A local file, written to a temporary file that replaces ``target`` whole once
    closed, and durable then (unless not ``synced``): the temporary file is fsynced
    before the rename (the fault point ``synced_point`` is between the two), and the
    folder after it, since the new name is an entry of the folder, which a power loss
    may lose with it; folders made for it are fsynced into their parents likewise.
    Every write of a local storage goes through here."""
    folder = os.path.dirname(target)
    tmp = f"{target}.tmp-{uuid.uuid4().hex}"
    with writing_through(target, tmp):
        if synced:
            make_folders(folder)
        else:
            os.makedirs(folder, exist_ok=True)
        with open(tmp, "wb") as f:
            yield f
            if synced:
                f.flush()
                os.fsync(f.fileno())
        fault_point(synced_point)
        os.replace(tmp, target)
        if synced:
            fsync_folder(folder)


def make_folders(folder: str) -> None:
    """Makes ``folder`` and the missing folders above it, each fsynced into its parent
    (``os.makedirs``, durable)."""
    missing = []
    while not os.path.isdir(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile (another task): synced again, cheaply
            os.mkdir(path)
        fsync_folder(os.path.dirname(path))


def fsync_folder(folder: str) -> None:
    """Makes the entries of a folder (names created, renamed) durable."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    except OSError as error:
        if error.errno != errno.EINVAL:  # a filesystem that cannot sync folders: nothing to do
            raise
    finally:
        os.close(fd)


@contextlib.contextmanager
def writing_through(target: str, tmp: str) -> Iterator[None]:
    """Writing ``target`` through the temporary file ``tmp``, which is removed if the
    write fails; a full disk is an error that names the file and what to do."""
    try:
        yield
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise PersistenceError(
                f"no space left to write {target}: the step was not committed; free some space and "
                "run the program again, which continues from its last committed step"
            ) from error
        raise
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
