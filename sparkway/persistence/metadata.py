"""The metadata log of a persistent program, modelled on Structured Streaming's offset and
commit logs.

* ``steps/<n>.json`` is written *before* step n runs: its time and the input segments it
  reads.  After a crash, the step is replayed from it: same input, same time.
* ``commits/<n>.json`` is written *after* step n's outputs are durable: its time and every
  source's position after it.
* ``plan.json`` describes the program that wrote the state; a different program is refused.
* ``LOCK`` keeps a second process from using the same storage at the same time.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import uuid
from typing import Any

from sparkway.persistence.storage import BlobStorage

_KEEP = 5  # committed steps whose logs are kept, for inspection


class StorageInUseError(RuntimeError):
    """Another process is running with the same persistence storage."""


class PlanChangedError(RuntimeError):
    """The program differs from the one that wrote the persisted state."""


class MetadataLog:
    def __init__(self, storage: BlobStorage) -> None:
        self.storage = storage
        self._lock_file: Any = None

    # -- exclusive use ------------------------------------------------------------------
    def lock(self) -> None:
        """Takes the storage for this process, or says who has it."""
        if not self.storage.is_local:
            return  # object stores have no locks; issue 3 adds a lease for them
        path = self.storage.path("LOCK")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle = open(path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            owner = handle.read().strip() or "another process"
            handle.close()
            raise StorageInUseError(
                f"the persistence storage {self.storage.root} is in use by {owner}; "
                "two programs cannot share one persistence storage at the same time"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"process {os.getpid()} on {socket.gethostname()}\n")
        handle.flush()
        self._lock_file = handle

    def unlock(self) -> None:
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None

    # -- the program ----------------------------------------------------------------------
    def check_plan(self, description: list[dict], rebuild: bool, partitions: int) -> tuple[dict[str, Any], bool]:
        """Records the plan; returns the stored record and whether the state written by
        another program must be discarded first.

        The record also fixes the number of state partitions: keys are routed to state
        partitions by it, so it must not change when the program moves to other hardware.
        """
        if self.storage.exists("plan.json"):
            stored = json.loads(self.storage.read_bytes("plan.json"))
            if stored["nodes"] == description:
                return stored, False
            if not rebuild:
                raise PlanChangedError(_explain(stored["nodes"], description))
            return self._write_plan(description, partitions), True
        return self._write_plan(description, partitions), False

    def _write_plan(self, description: list[dict], partitions: int) -> dict[str, Any]:
        # a new incarnation: executors' working copies of older state must not be reused
        record = {"nodes": description, "incarnation": uuid.uuid4().hex, "partitions": partitions}
        self.storage.write_bytes("plan.json", json.dumps(record).encode())
        return record

    # -- steps -------------------------------------------------------------------------------
    def last_commit(self) -> dict[str, Any] | None:
        names = self.storage.list("commits")
        return json.loads(self.storage.read_bytes(f"commits/{names[-1]}")) if names else None

    def pending_step(self, after: int) -> dict[str, Any] | None:
        """The step logged after the last commit, if a crash interrupted it."""
        name = f"{after + 1:016d}.json"
        return json.loads(self.storage.read_bytes(f"steps/{name}")) if self.storage.exists(f"steps/{name}") else None

    def log_step(self, step: int, time: int, segments: dict[str, list]) -> None:
        record = {"step": step, "time": time, "segments": segments}
        self.storage.write_bytes(f"steps/{step:016d}.json", json.dumps(record).encode())

    def commit(self, step: int, time: int, positions: dict[str, Any]) -> None:
        record = {"step": step, "time": time, "positions": positions}
        self.storage.write_bytes(f"commits/{step:016d}.json", json.dumps(record).encode())
        for folder in ("steps", "commits"):
            for name in self.storage.list(folder)[:-_KEEP]:
                self.storage.delete(f"{folder}/{name}")

    def clear(self) -> None:
        for folder in ("steps", "commits"):
            self.storage.delete(folder)


def _explain(stored: list[dict], current: list[dict]) -> str:
    lines = [
        "the program's dataflow differs from the one that wrote the persisted state; "
        "restore the program, use another persistence storage, or pass "
        'pw.persistence.Config(..., on_plan_change="rebuild") to start over:'
    ]
    for index in range(max(len(stored), len(current))):
        old = stored[index] if index < len(stored) else None
        new = current[index] if index < len(current) else None
        if old == new:
            continue
        if old is None:
            lines.append(f"  operator #{index} ({new['kind']}) is new")
        elif new is None:
            lines.append(f"  operator #{index} ({old['kind']}) was removed")
        else:
            changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            details = "; ".join(f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in changed)
            lines.append(f"  operator #{index} ({old['kind']}) changed: {details}")
        if len(lines) > 6:
            lines.append("  ...")
            break
    return "\n".join(lines)
