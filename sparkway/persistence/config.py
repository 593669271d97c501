"""``pw.persistence``: where a persistent program keeps its metadata and its state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparkway.persistence.storage import BlobStorage


@dataclass(frozen=True)
class Backend:
    """A storage location: ``Backend.filesystem(path)`` (``Backend.s3`` comes with S3 support).

    >>> import sparkway as pw
    >>> pw.persistence.Backend.filesystem("./PStorage").root.endswith("PStorage")
    True
    """

    root: str
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def filesystem(cls, path: str | Any) -> "Backend":
        import os

        return cls(os.path.abspath(os.fspath(path)))

    def storage(self) -> BlobStorage:
        return BlobStorage(self.root, self.options)


@dataclass(frozen=True)
class Config:
    """Persistence settings for ``pw.run(persistence_config=...)``.

    Metadata (source positions, times, the plan) and snapshots (operator state, rows the
    sources may have to retract) can go to different backends; with one backend they
    share it.  ``snapshot_interval_ms`` is how often each state partition writes a full
    snapshot; between snapshots only per-step changelogs are written.
    ``on_plan_change="rebuild"`` discards state written by a different program instead of
    stopping with an error.

    >>> import sparkway as pw
    >>> backend = pw.persistence.Backend.filesystem("./PStorage")
    >>> pw.persistence.Config(backend).snapshot_storage == backend
    True
    """

    backend: Backend | None = None
    snapshot_interval_ms: int = 60_000
    metadata_storage: Backend | None = None
    snapshot_storage: Backend | None = None
    on_plan_change: str = "error"
    persistence_mode: Any = None

    def __post_init__(self) -> None:
        if self.backend is None and (self.metadata_storage is None or self.snapshot_storage is None):
            raise ValueError("pw.persistence.Config needs a backend, or both metadata_storage and snapshot_storage")
        if self.metadata_storage is None:
            object.__setattr__(self, "metadata_storage", self.backend)
        if self.snapshot_storage is None:
            object.__setattr__(self, "snapshot_storage", self.backend)
        if self.on_plan_change not in ("error", "rebuild"):
            raise ValueError('on_plan_change must be "error" or "rebuild"')

    @classmethod
    def simple_config(
        cls, backend: Backend, snapshot_interval_ms: int = 60_000, **kwargs: Any
    ) -> "Config":
        """A config that keeps metadata and snapshots in one backend."""
        return cls(backend, snapshot_interval_ms=snapshot_interval_ms, **kwargs)
