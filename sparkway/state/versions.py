"""The version record every state partition keeps in its checkpoint: ``LATEST`` holds
``{version, base}``, the step that last changed the partition and the version it was
applied on.  Written last in a commit, it says which state a step starts from.

>>> base_before({"version": 7, "base": 3}, 9), base_before({"version": 7, "base": 3}, 7)
(7, 3)
"""

from __future__ import annotations

import json

from sparkway.persistence.storage import BlobStorage


def read_latest(checkpoint: BlobStorage) -> dict | None:
    try:
        return json.loads(checkpoint.read_bytes("LATEST"))
    except FileNotFoundError:
        return None


def write_latest(checkpoint: BlobStorage, version: int, base: int | None) -> None:
    checkpoint.write_bytes("LATEST", json.dumps({"version": version, "base": base}).encode())


def base_before(latest: dict | None, step: int) -> int | None:
    """The version ``step`` is applied on: the latest one, or, when ``step`` is already
    recorded (a retried task, a step replayed after a crash), the one it was applied on."""
    if latest is None:
        return None
    return latest["base"] if latest["version"] >= step else latest["version"]
