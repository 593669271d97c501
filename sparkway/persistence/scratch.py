"""Scratch folders: a process's temporary files on local disk (the state of a run without
persistence, the input files of kept plans, the spool of an upload to an object store,
the files of the JVM a program starts).

A scratch folder is ``<tmp>/sparkway-<kind>-<random>`` and holds ``owner.lock``, which its
process keeps locked (``flock``) while it uses the folder.  The process deletes the folder
when done; if it cannot (SIGKILL, out of memory, a power cut), the kernel still drops its
lock, so the first scratch folder a later process makes deletes every folder whose lock
it can take.  A lock, unlike a process id in the name, is not fooled by a reused id, nor
by a process of another PID namespace sharing the temporary directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import shutil
import tempfile
import time

PREFIX = "sparkway-"
LOCK = "owner.lock"
#: a folder whose lock file is younger than this is left alone: its process may not have
#: locked it yet
GRACE_S = 60.0


class ScratchFolder:
    """A new folder for this process's temporary files of a ``kind``, deleted by
    ``remove``, or by a later process once this one ended without removing it.

    >>> folder = ScratchFolder("example")
    >>> os.path.basename(folder.path).startswith("sparkway-example-"), os.path.isdir(folder.path)
    (True, True)
    >>> folder.remove()
    >>> os.path.exists(folder.path)
    False
    """

    def __init__(self, kind: str) -> None:
        _remove_abandoned_once()
        self.path = tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-")
        self._lock = open(os.path.join(self.path, LOCK), "w")  # noqa: SIM115 - held until remove()
        fcntl.flock(self._lock, fcntl.LOCK_EX)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        self._lock.close()


def remove_abandoned(grace_s: float = GRACE_S) -> list[str]:
    """Deletes the scratch folders whose process has ended (their lock is free); returns
    their paths.  Folders without a lock file are not scratch folders: left alone."""
    root = tempfile.gettempdir()
    removed = []
    for name in os.listdir(root):
        folder = os.path.join(root, name)
        if name.startswith(PREFIX) and _abandoned(folder, grace_s):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


@functools.cache
def _remove_abandoned_once() -> None:
    remove_abandoned()


def _abandoned(folder: str, grace_s: float) -> bool:
    try:
        lock = open(os.path.join(folder, LOCK))  # noqa: SIM115 - closed below
    except OSError:  # not a scratch folder, or another user's
        return False
    with lock:
        if time.time() - os.fstat(lock.fileno()).st_mtime < grace_s:
            return False
        with contextlib.suppress(BlockingIOError):
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
    return False
