"""The machine-local working copies of persisted state (``<cache>/state``): a folder per
persistence storage and incarnation of its program's plan, which the state stores fill
(RocksDB working copies, uncompressed runs) and rebuild from the storage when missing.

Each folder names its storage in ``origin.json``.  A folder whose state can no longer be
used is deleted when a program opens its own: one of another incarnation of the same
storage (the program changed, its state was rebuilt), or one of a local storage that no
longer exists (``rm -rf PStorage``).  Without this, every benchmark run and every deleted
persistence folder left its copy behind: 12 GB on a machine after a day of benchmarks.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil

from sparkway.persistence.storage import BlobStorage

log = logging.getLogger("sparkway")

ORIGIN = "origin.json"


def working_copy(state_cache: str, storage: BlobStorage, incarnation: str) -> str:
    """The folder of the working copies of ``storage``'s state at ``incarnation`` (made,
    naming its origin, without the temporary files of writes a crash interrupted), after
    deleting the folders of ``state_cache`` that can no longer be used.  Call it while
    holding the storage."""
    folder = os.path.join(state_cache, hashlib.sha1(f"{storage.root}|{incarnation}".encode()).hexdigest()[:20])
    where = os.path.abspath(storage.path("")) if storage.is_local else storage.root
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, ORIGIN), "w", encoding="utf-8") as f:
        json.dump({"storage": where, "local": storage.is_local, "incarnation": incarnation}, f)
    for entry in os.scandir(state_cache):
        if entry.path != folder and entry.is_dir() and _unusable(entry.path, where):
            log.info("deleting the working copies of state that can no longer be used: %s", entry.path)
            shutil.rmtree(entry.path, ignore_errors=True)
    # the storage is this program's now: a crashed run's interrupted writes are of no use
    BlobStorage(folder).remove_temporary_files()
    return folder


def _unusable(folder: str, storage: str) -> bool:
    """Whether ``folder`` holds copies of another incarnation of ``storage``, or of a
    local storage that no longer exists.  A folder without origin (an older sparkway's,
    or one being made) is kept."""
    try:
        with open(os.path.join(folder, ORIGIN), encoding="utf-8") as f:
            origin = json.load(f)
    except (OSError, ValueError):
        return False
    return origin["storage"] == storage or (origin["local"] and not os.path.exists(origin["storage"]))
