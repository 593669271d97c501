"""The storage of ``pw.udfs.DiskCache``: UDF results kept across runs, in the
persistence storage (``<root>/runtime_calls/<cache name>``, as Pathway keeps them).

The run tells the workers where that storage is (``active_root``, set around every call
of a user function); each cache is an SQLite database there, shared by the Python worker
processes of the machine, whose least recently used results are dropped when the results
exceed the cache's size limit.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as root:
...     store = DiskStore(root, "double", size_limit=1 << 20)
...     store.put("k", 42)
...     store.get("k"), store.get("missing")
((True, 42), (False, None))
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sqlite3
import threading
import time
from typing import Any

#: the folder a run keeps UDF results in (``<storage>/runtime_calls``), None when it has
#: no filesystem persistence; set by the engine in the process calling the functions
_ROOT: dict[str, str | None] = {"root": None}


def set_active_root(root: str | None) -> None:
    """Where the functions called next in this process keep their disk caches."""
    _ROOT["root"] = root


def active_root() -> str | None:
    return _ROOT["root"]


def key_of(args: tuple, kwargs: dict[str, Any] | None = None) -> str:
    """A cache key for a call's arguments (values of any column type, hashable or not)."""
    payload = pickle.dumps((args, sorted((kwargs or {}).items())), protocol=5)
    return hashlib.sha256(payload).hexdigest()


class DiskStore:
    """Results by key in an SQLite file, at most ``size_limit`` bytes of them (a result
    takes the bytes of its key and of its pickled value)."""

    def __init__(self, root: str, name: str, size_limit: int) -> None:
        os.makedirs(root, exist_ok=True)
        self.path = os.path.join(root, f"{_file_name(name)}.sqlite")
        self.name = name
        self.size_limit = size_limit
        self._lock = threading.Lock()  # calls of a sync function may run in threads
        self._db = sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value BLOB, size INTEGER, used REAL)"
        )

    def get(self, key: str) -> tuple[bool, Any]:
        with self._lock:
            row = self._db.execute("SELECT value FROM results WHERE key = ?", (key,)).fetchone()
            if row is None:
                return False, None
            self._db.execute("UPDATE results SET used = ? WHERE key = ?", (time.time(), key))
        return True, pickle.loads(row[0])

    def put(self, key: str, value: Any) -> None:
        """Stores a result, dropping the least recently used ones beyond the size limit;
        a result larger than the limit cannot be kept (a KeyError, as Pathway's cache
        fails to read it back)."""
        blob = pickle.dumps(value, protocol=5)
        size = len(key) + len(blob)
        if size > self.size_limit:
            raise KeyError(
                f"DiskCache {self.name!r}: a result of {size} bytes does not fit in its "
                f"size_limit of {self.size_limit} bytes; give the cache a larger size_limit"
            )
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?)", (key, blob, size, time.time())
                )
                self._evict()
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def _evict(self) -> None:
        (total,) = self._db.execute("SELECT COALESCE(SUM(size), 0) FROM results").fetchone()
        if total <= self.size_limit:
            return
        over = total - self.size_limit
        dropped = []
        for key, size in self._db.execute("SELECT key, size FROM results ORDER BY used"):
            if over <= 0:
                break
            dropped.append((key,))
            over -= size
        self._db.executemany("DELETE FROM results WHERE key = ?", dropped)

    def close(self) -> None:
        self._db.close()


def _file_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
