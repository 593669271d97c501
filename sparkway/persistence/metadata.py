"""The metadata log of a persistent program, modelled on Structured Streaming's offset and
commit logs.

* ``steps/<n>.json`` is written *before* step n runs: its time and the input segments it
  reads.  After a crash, the step is replayed from it: same input, same time.
* ``commits/<n>.json`` is written *after* step n's outputs are durable: its time and every
  source's position after it (and the state of the input synchronization groups).  A
  position that grows with the input's history (a file source's, an entry per file) is
  stored as layers under ``positions/`` that the record names (``persistence/index.py``),
  so that a commit writes what its step changed, not every file ever read.
* ``plan.json`` describes the program that wrote the state; a different program is refused.
* ``LOCK`` (a filesystem) or ``LEASE`` (an object store) keeps a second process from using
  the same storage at the same time.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import threading
import time
import uuid
from typing import Any

from sparkway.errors import PersistenceError
from sparkway.persistence.faults import fault_point
from sparkway.persistence.index import FOLDER as POSITIONS, IndexedPosition, Layer, PositionIndex, layers_of
from sparkway.persistence.storage import BlobStorage, damaged, make_folders

log = logging.getLogger("sparkway")

_KEEP = 5  # committed steps whose logs are kept, for inspection
#: the layout of the state (the operators', the sources' positions): state written in a
#: layout this version does not read is refused; 3: positions as indexes (``index.py``)
STATE_FORMAT = 3
#: layouts continued: format 2 differs only in its commit records, which held every
#: position whole, and are still read (plan.json is then rewritten with format 3, so that
#: an older sparkway refuses the storage instead of reading an indexed position as empty)
CONTINUED_FORMATS = (2, STATE_FORMAT)
LEASE_TTL_S = 30.0  # an object-store lease not renewed for this long may be taken over


class StorageInUseError(PersistenceError):
    """Another process is running with the same persistence storage."""


class PlanChangedError(PersistenceError):
    """The program differs from the one that wrote the persisted state."""


#: present while a rebuild discards the state of another program (``check_plan``)
REBUILDING = "REBUILDING"


class MetadataLog:
    def __init__(self, storage: BlobStorage, lease_ttl_s: float = LEASE_TTL_S) -> None:
        self.storage = storage
        self.lease_ttl_s = lease_ttl_s
        self._lock_file: Any = None
        self._lease: Lease | None = None
        self.index = PositionIndex(storage)
        #: per indexed source, the layers the last commit names (None: not read yet)
        self._layers: dict[str, list[Layer]] | None = None
        self._pruned: set[str] = set()  # the sources whose layers this process pruned

    # -- exclusive use ------------------------------------------------------------------
    def lock(self) -> None:
        """Takes the storage for this process, or says who has it."""
        if self.storage.is_local:
            self._flock()
        else:
            self._lease = Lease(self.storage, self.lease_ttl_s)
            self._lease.acquire()

    def _flock(self) -> None:
        path = self.storage.path("LOCK")
        make_folders(os.path.dirname(path))  # durably: the folder of every later commit
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
        # ours now: what a crashed run's interrupted writes left is of no use
        removed = self.storage.remove_temporary_files()
        if removed:
            log.info("Removed %d temporary file(s) of writes a crash interrupted from %s", removed, self.storage.root)

    def unlock(self) -> None:
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    def _check_held(self) -> None:
        """Stops a process that lost its lease before it writes the log again."""
        if self._lease is not None and self._lease.lost is not None:
            raise StorageInUseError(
                f"this process lost the lease on the persistence storage {self.storage.root}: "
                f"{self._lease.lost}; stopping without committing, restart the program when "
                "no other process uses the storage"
            )

    # -- the program ----------------------------------------------------------------------
    def check_plan(
        self, description: list[dict], rebuild: bool, partitions: int, labels: list[str] | None = None,
    ) -> tuple[dict[str, Any] | None, bool]:
        """Records the plan of a new storage; returns the stored record, or (None, True)
        when the state another program wrote must be discarded first (``rebuild``), or
        when a rebuild was interrupted: the caller marks the rebuild (``begin_rebuild``),
        clears the state, records the plan (``write_plan``, which ends the rebuild), so
        that after a crash at any point the next run rebuilds again, never finding a
        plan over half-cleared state.

        The record also fixes the number of state partitions: keys are routed to state
        partitions by it, so it must not change when the program moves to other hardware.
        ``labels`` name the nodes of ``description`` in a changed plan's error (the
        operator and the program line that built it).
        """
        if self.rebuilding():  # the old state is half gone: whatever the program, finish
            return None, True
        stored = self.stored_plan()
        if stored is not None:
            readable = stored.get("state_format", 1) in CONTINUED_FORMATS
            if stored["nodes"] == description and readable:
                return self._upgraded(stored), False
            if not rebuild:
                if not readable:
                    raise PlanChangedError(
                        f"the state in {self.storage.root} was written by another version of sparkway (state "
                        f"format {stored.get('state_format', 1)}; this one reads format {STATE_FORMAT}); use "
                        'another persistence storage, or pass pw.persistence.Config(..., on_plan_change="rebuild") '
                        "to compute the state again from the input"
                    )
                raise PlanChangedError(_explain(stored["nodes"], description, labels or []))
            return None, True
        return self.write_plan(description, partitions), False

    def _upgraded(self, stored: dict[str, Any]) -> dict[str, Any]:
        """The plan record of a storage of a continued format, now of this format."""
        if stored.get("state_format") == STATE_FORMAT:
            return stored
        record = {**stored, "state_format": STATE_FORMAT}
        self.storage.write_bytes("plan.json", json.dumps(record).encode())
        log.info("The persistence storage %s continues in state format %d (from %s)", self.storage.root,
                 STATE_FORMAT, stored.get("state_format"))
        return record

    def stored_plan(self) -> dict[str, Any] | None:
        """The plan record of the program that wrote the state (``write_plan``); None in a
        new storage."""
        return self.storage.read_json("plan.json") if self.storage.exists("plan.json") else None

    def rebuilding(self) -> bool:
        """Whether a rebuild was interrupted (the next run finishes it)."""
        return self.storage.exists(REBUILDING)

    def begin_rebuild(self) -> None:
        self.storage.write_bytes(REBUILDING, b"")
        fault_point("metadata.rebuild.marked")

    def write_plan(self, description: list[dict], partitions: int) -> dict[str, Any]:
        # a new incarnation: executors' working copies of older state must not be reused
        record = {"nodes": description, "incarnation": uuid.uuid4().hex, "partitions": partitions,
                  "state_format": STATE_FORMAT}
        self.storage.write_bytes("plan.json", json.dumps(record).encode())
        fault_point("metadata.plan.written")
        # durably: back after a power loss, the mark would discard the steps committed since
        self.storage.delete(REBUILDING, durable=True)
        return record

    # -- steps -------------------------------------------------------------------------------
    def last_commit(self) -> dict[str, Any] | None:
        """The last commit record, every position whole (indexed ones read from their
        layers), or None when no step was committed."""
        found = self._last_record()
        if found is None:
            return None
        path, record = found
        for name, index in record.get("indexes", {}).items():
            whole = self.index.read(name, self._layers[name], self.storage.path(path))
            record["positions"].setdefault(name, {})[index["key"]] = whole
        return record

    def _last_record(self) -> tuple[str, dict[str, Any]] | None:
        """The last commit record as stored, and its path; notes the layers it names."""
        names = self.storage.list("commits")
        if not names:
            self._layers = {}
            return None
        path = f"commits/{names[-1]}"
        record = self.storage.read_json(path)
        try:
            self._layers = {name: layers_of(index) for name, index in record.get("indexes", {}).items()}
        except (AttributeError, KeyError, TypeError, ValueError) as error:  # JSON, but not a commit's
            raise damaged(self.storage.path(path), error) from None
        return path, record

    def _committed_layers(self) -> dict[str, list[Layer]]:
        if self._layers is None:
            self._last_record()
        assert self._layers is not None
        return self._layers

    def pending_step(self, after: int) -> dict[str, Any] | None:
        """The step logged after the last commit, if a crash interrupted it."""
        name = f"{after + 1:016d}.json"
        return self.storage.read_json(f"steps/{name}") if self.storage.exists(f"steps/{name}") else None

    def log_step(
        self, step: int, time: int, segments: dict[str, list], kind: str = "input", idle: list[str] | None = None,
    ) -> None:
        """Step ``step`` is about to run: its time, its input, its kind (see
        ``Runner._run_step``) and, in a program with input synchronization groups, the
        sources that hold nobody back in it, so that a replay runs the same step."""
        record: dict[str, Any] = {"step": step, "time": time, "segments": segments, "kind": kind}
        if idle is not None:
            record["idle"] = idle
        self._check_held()
        self.storage.write_bytes(f"steps/{step:016d}.json", json.dumps(record).encode())

    def commit(
        self, step: int, time: int, positions: dict[str, Any], entries: dict[str, int],
        synchronization: dict[str, Any] | None = None,
    ) -> None:
        """Step ``step`` is done: the sources' positions (an ``IndexedPosition`` for one
        that grows with the input's history), how many entries each read so far and,
        with input synchronization groups, their state (the rows they hold)."""
        self._check_held()
        before = self._committed_layers()
        stored, layers = {}, {}
        for name, position in positions.items():
            if isinstance(position, IndexedPosition):
                layers[name] = self.index.write(name, step, position, before.get(name))
                stored[name] = position.rest
            else:
                stored[name] = position
        record: dict[str, Any] = {"step": step, "time": time, "positions": stored, "entries": entries}
        if layers:
            record["indexes"] = {name: {"key": positions[name].key, "layers": [layer.record() for layer in written]}
                                 for name, written in layers.items()}
        if synchronization is not None:
            record["synchronization"] = synchronization
        self._check_held()
        self.storage.write_bytes(f"commits/{step:016d}.json", json.dumps(record).encode())
        fault_point("metadata.commit.written")
        self._layers = layers
        self._prune(step, before, layers)

    def _prune(self, step: int, before: dict[str, list[Layer]], layers: dict[str, list[Layer]]) -> None:
        """Deletes what the durable commit of ``step`` made useless: older step and
        commit records (but ``_KEEP``), layers it no longer names (the first time in a
        process: also those of a commit a crash prevented)."""
        for name, written in layers.items():
            if written != before.get(name) or name not in self._pruned:
                self.index.prune(name, written, step)
                self._pruned.add(name)
        for folder in ("steps", "commits"):
            for name in self.storage.list(folder)[:-_KEEP]:
                self.storage.delete(f"{folder}/{name}")

    def clear(self) -> None:
        for folder in ("steps", "commits", POSITIONS):
            self.storage.delete(folder)
            fault_point("metadata.rebuild.clearing")
        self._layers = {}


class Lease:
    """Exclusive use of an object-store folder: the blob ``LEASE`` names its owner.

    It is created with a conditional PUT (``If-None-Match: *``), so of two processes that
    start together one wins.  A heartbeat thread rewrites it every third of ``ttl_s``
    with ``If-Match`` on the version it last wrote: if anyone else wrote it meanwhile, the
    lease is lost (``lost`` says why) and the metadata log refuses further writes.  Another
    process may take a lease over (again with ``If-Match``) when it was not renewed for
    ``ttl_s`` by the store's clock, or at once when its owner ran on the same machine and
    is gone (a crash).  A graceful end deletes it.
    """

    BLOB = "LEASE"

    def __init__(self, storage: BlobStorage, ttl_s: float) -> None:
        self.storage = storage
        self.ttl_s = ttl_s
        self.owner = {
            "id": uuid.uuid4().hex, "pid": os.getpid(), "host": socket.gethostname(),
            "boot": _boot_id(), "started": _process_start(os.getpid()), "ttl_s": ttl_s,
        }
        self._lost: str | None = None
        self._tag: str | None = None
        self._renewals = 0
        self._renewed_at = time.monotonic()  # when the last successful write was sent
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def lost(self) -> str | None:
        """Why this process may no longer hold the lease, or None while it does."""
        if self._lost is None and time.monotonic() - self._renewed_at >= self.ttl_s:
            return f"it was not renewed for {self.ttl_s:.0f} s (the process was paused, or the store unreachable)"
        return self._lost

    def _record(self) -> bytes:
        # the renewal counter gives every write new content, hence a new version tag
        return json.dumps({**self.owner, "renewal": self._renewals}).encode()

    def acquire(self) -> None:
        for _ in range(5):  # each round loses only to another process that made progress
            self._renewed_at = time.monotonic()
            tag = self._try_acquire()
            if tag is not None:
                self._tag = tag
                self._thread = threading.Thread(target=self._renew_until_released, name="sparkway-lease", daemon=True)
                self._thread.start()
                return
        raise StorageInUseError(f"the persistence storage {self.storage.root} is contended by several processes")

    def _try_acquire(self) -> str | None:
        try:
            tag = self.storage.create(self.BLOB, self._record())
        except FileNotFoundError:
            raise FileNotFoundError(
                f"the bucket of the persistence storage {self.storage.root} does not exist: "
                "create it, or fix root_path / bucket_settings"
            ) from None
        if tag is not None:
            return tag
        current = self.storage.read_versioned(self.BLOB)
        if current is None:
            return None  # released meanwhile: try again
        holder = json.loads(current.data)
        if holder.get("id") == self.owner["id"]:
            return current.tag  # our own create, retried by the client after a lost reply
        # +1 s: the store's times have a resolution of a second
        expired = current.age_s > float(holder.get("ttl_s", self.ttl_s)) + 1
        if not expired and not _process_gone(holder):
            raise StorageInUseError(
                f"the persistence storage {self.storage.root} is in use by process {holder.get('pid')} "
                f"on {holder.get('host')} (its lease was renewed {current.age_s:.0f} s ago); two programs "
                "cannot share one persistence storage at the same time"
            )
        why = "expired" if expired else "its process is gone"
        tag = self.storage.replace(self.BLOB, self._record(), current.tag)
        if tag is not None:
            log.warning("Took over the persistence storage lease of process %s on %s: %s",
                        holder.get("pid"), holder.get("host"), why)
        return tag

    def _renew_until_released(self) -> None:
        while not self._stop.wait(self.ttl_s / 3):
            self._renewals += 1
            sent_at = time.monotonic()
            try:
                tag = self.storage.replace(self.BLOB, self._record(), self._tag)
            except OSError as exc:  # the store is unreachable: keep trying while it may be ours
                log.warning("Could not renew the persistence storage lease: %s", exc)
                if self.lost is None:
                    continue
                tag = None
            if tag is None:
                self._lost = self.lost or "another process took it over"
                log.error("Lost the persistence storage lease of %s: %s", self.storage.root, self._lost)
                return
            self._tag, self._renewed_at = tag, sent_at

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.lost is None and self._tag is not None:
            try:
                self.storage.delete_if(self.BLOB, self._tag)
            except OSError as exc:  # it expires by itself
                log.warning("Could not release the persistence storage lease: %s", exc)


def _boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return None


def _process_start(pid: int) -> str | None:
    """When a running process started (clock ticks since boot), None if it is not running
    (a zombie counts as gone).  Linux only: None elsewhere, when nothing can be told."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else fields[19]


def _process_gone(holder: dict[str, Any]) -> bool:
    """Whether the lease holder certainly ended: it ran on this machine since its boot, and
    no process with its pid and start time runs now."""
    if holder.get("boot") is None or holder.get("boot") != _boot_id() or holder.get("host") != socket.gethostname():
        return False
    return _process_start(int(holder["pid"])) != holder.get("started")


def brief_position(position: dict[str, Any], limit: int = 300) -> str:
    """A source's committed position as JSON, cut after ``limit`` characters."""
    text = json.dumps(position, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "..."


def _explain(stored: list[dict], current: list[dict], labels: list[str]) -> str:
    """What differs between two plans, an operator a line, named by ``labels`` where the
    current program has the operator."""
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
        kind = (new or old)["kind"]
        name = f"the {labels[index]} (operator #{index})" if index < len(labels) else f"operator #{index} ({kind})"
        if old is None:
            lines.append(f"  {name} is new")
        elif new is None:
            lines.append(f"  {name} was removed")
        else:
            changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            details = "; ".join(f"{k}: {_shown(old.get(k))!r} -> {_shown(new.get(k))!r}" for k in changed)
            lines.append(f"  {name} changed: {details}")
        if len(lines) > 6:
            lines.append("  ...")
            break
    return "\n".join(lines)


def _shown(value: Any) -> Any:
    """A description's value as the user wrote it: columns named by sparkway alone
    (``_pw_agg_0``, a reducer's result before the select that names it) are left out."""
    if isinstance(value, dict) and value and all(str(key).startswith("_pw_") for key in value):
        return list(value.values())
    return value
