"""The version record every state partition keeps in its checkpoint: ``LATEST`` holds
``{version, base}``, the step that last changed the partition and the version it was
applied on.  Written last in a commit, it says which state a step starts from.

>>> base_before({"version": 7, "base": 3}, 9), base_before({"version": 7, "base": 3}, 7)
(7, 3)
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from sparkway.errors import PersistenceError
from sparkway.persistence.storage import BlobStorage, damaged


def read_latest(checkpoint: BlobStorage, step: int) -> dict | None:
    """The partition's version record, as step ``step`` finds it; None when the partition
    holds no state yet.  The driver committed every step before ``step``, each after the
    partitions it changed wrote ``LATEST``: a partition holding files of such a version (a
    manifest, a changelog) without ``LATEST`` lost it, which is an error naming it, never
    an empty state.  (Files of version ``step`` without it: a crash during the
    partition's first commit, which the step replays.)  A version newer than ``step``
    means this is a late attempt of ``step``: ``LateAttempt``."""
    try:
        latest = checkpoint.read_json("LATEST")  # not JSON: an error naming it
    except FileNotFoundError:
        older = [v for folder in _VERSIONED for name in checkpoint.list(folder) if (v := _version_of(name)) < step]
        if older:
            raise PersistenceError(
                f"the state partition {checkpoint.path('')} holds version {max(older)} but its "
                "LATEST file is missing: the persisted state was damaged (a file deleted); restore it from a "
                "backup, or delete the persistence folder to compute the state again from the input"
            ) from None
        return None
    if not isinstance(latest, dict) or not isinstance(latest.get("version"), int):
        raise damaged(checkpoint.path("LATEST"), ValueError("no version"))
    if latest["version"] > step:
        # only a late attempt of a step meets a newer version: the driver runs a step once
        # the previous one's tasks all succeeded, but Spark may still be ending one of
        # them (a speculative copy that lost, an attempt it gave up on).  Taking the
        # version's base (base_before) would apply this step again on a newer state.
        raise late_attempt(checkpoint, latest, step)
    return latest


class LateAttempt(PersistenceError):
    """A task of an earlier step found the state partition at a newer version (a
    speculative copy that lost, an attempt Spark gave up on): it stops without writing."""


def late_attempt(checkpoint: BlobStorage, latest: dict, step: int) -> LateAttempt:
    return LateAttempt(
        f"the state partition {checkpoint.path('')} is at version {latest['version']} (base {latest.get('base')}), "
        f"not where step {step} leaves it or starts from: this task is a late attempt of step {step}, which "
        "Spark no longer waits for, and it stops without writing the state"
    )


#: the folders of a partition whose files are named by the version that wrote them
_VERSIONED = ("manifest", "changelog", "snapshot")


def _version_of(name: str) -> int:
    """``0000000000000007.json`` -> 7; names that are no version count as none."""
    stem = name.split(".", 1)[0]
    return int(stem) if stem.isdigit() else -1


def write_latest(checkpoint: BlobStorage, version: int, base: int | None, fence: "Fence | None") -> None:
    """Switches the partition to ``version`` (applied on ``base``), unless a newer run
    than ``fence``'s owns the storage (see ``Fence``; None: state of a run without
    persistence), or the partition moved past ``base`` meanwhile (``check_unmoved``)."""
    if fence is not None:
        fence.check()
    check_unmoved(checkpoint, version, base)
    checkpoint.write_bytes("LATEST", json.dumps({"version": version, "base": base}).encode())


def check_unmoved(checkpoint: BlobStorage, version: int, base: int | None) -> None:
    """Raises ``LateAttempt`` unless the partition is still at ``base``, or at ``version``
    applied on ``base`` (another attempt of the step committed it first).  Two attempts
    of a step may run at once (Spark's speculation), and the loser is not stopped at
    once: it may reach its commit after the next steps committed theirs, and its
    ``LATEST`` would set the partition back (its pruning deleting their manifests).
    As with ``Fence``, the check and the write are two operations: an attempt paused
    between them could still write; the window is that of one small read and write."""
    try:
        latest = checkpoint.read_json("LATEST")
    except FileNotFoundError:
        latest = None
    found = (latest or {}).get("version"), (latest or {}).get("base")
    if found[0] == base or found == (version, base):  # (None, None): the first commit
        return
    raise late_attempt(checkpoint, latest or {"version": None}, version)


def base_before(latest: dict | None, step: int) -> int | None:
    """The version ``step`` is applied on: the latest one, or, when ``step`` is already
    recorded (a retried task, a step replayed after a crash), the one it was applied on."""
    if latest is None:
        return None
    return latest["base"] if latest["version"] >= step else latest["version"]


@dataclass(frozen=True)
class Fence:
    """The run that owns a persistence storage, as its tasks see it.  When a program's
    driver dies alone, its JVM and Python workers may finish a step's tasks after the
    next run has taken the storage and gone further: a late ``LATEST`` of theirs would
    set a partition back to an older version (and its pruning delete newer manifests),
    so that the next step silently loses a step of changes.  Each run writes a token of
    its own at the storage's root; ``write_latest`` checks it first.

    >>> import tempfile
    >>> root = BlobStorage(tempfile.mkdtemp())
    >>> old = Fence.take(root)
    >>> new = Fence.take(root)
    >>> new.check()
    >>> old.check()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sparkway.errors.PersistenceError: a newer run owns the persistence storage ...; this task of an earlier run stops without writing its state
    """

    storage: BlobStorage
    token: str

    FILE = "RUN"

    @classmethod
    def take(cls, storage: BlobStorage) -> "Fence":
        """A new token, written for the tasks of this run to check (call it holding the storage's lock)."""
        token = uuid.uuid4().hex
        storage.write_bytes(cls.FILE, token.encode())
        return cls(storage, token)

    def check(self) -> None:
        if self.storage.read_bytes(self.FILE).decode() != self.token:
            raise PersistenceError(
                f"a newer run owns the persistence storage {self.storage.root}; this task of an earlier run "
                "stops without writing its state"
            )
