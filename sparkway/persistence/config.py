"""``pw.persistence``: where a persistent program keeps its metadata and its state."""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field
from typing import Any

from sparkway.errors import PlanError
from sparkway.persistence.s3 import AwsS3Settings, split_s3_path
from sparkway.persistence.storage import BlobStorage


class PersistenceMode(enum.Enum):
    """What a persistent run keeps (``pw.persistence.Config(persistence_mode=...)``).

    ``PERSISTING`` (the default) and ``OPERATOR_PERSISTING``: the sources' positions and
    every operator's state, so that a restart continues where the last run stopped;
    ``UDF_CACHING``: only the results of ``pw.udfs.DiskCache`` caches (every run reads
    its input from the start).  The other modes of Pathway are taken as ``PERSISTING``.

    >>> import sparkway as pw
    >>> pw.persistence.Config(pw.persistence.Backend.filesystem("./PStorage"),
    ...     persistence_mode=pw.PersistenceMode.UDF_CACHING).keeps_state
    False
    """

    BATCH = "batch"
    SPEEDRUN_REPLAY = "speedrun_replay"
    REALTIME_REPLAY = "realtime_replay"
    PERSISTING = "persisting"
    SELECTIVE_PERSISTING = "selective_persisting"
    UDF_CACHING = "udf_caching"
    OPERATOR_PERSISTING = "operator_persisting"


@dataclass(frozen=True)
class Backend:
    """A storage location: ``Backend.filesystem(path)`` or ``Backend.s3(root_path, settings)``.

    >>> import sparkway as pw
    >>> pw.persistence.Backend.filesystem("./PStorage").root.endswith("PStorage")
    True
    """

    root: str
    options: dict[str, Any] = field(default_factory=dict, repr=False)  # may hold credentials

    @classmethod
    def filesystem(cls, path: str | Any) -> "Backend":
        """A folder of the local (or a mounted shared) filesystem."""
        import os

        return cls(os.path.abspath(os.fspath(path)))

    @classmethod
    def s3(cls, root_path: str, bucket_settings: AwsS3Settings | None = None) -> "Backend":
        """A prefix in an S3 bucket: ``root_path`` is ``"s3://bucket/prefix"``, or a prefix
        inside ``bucket_settings.bucket_name``.

        >>> import sparkway as pw
        >>> settings = pw.io.s3.AwsS3Settings(bucket_name="pipelines", region="eu-west-1")
        >>> pw.persistence.Backend.s3("wordcount/state", settings).root
        's3://pipelines/wordcount/state'
        """
        settings = bucket_settings or AwsS3Settings()
        if root_path.startswith("s3://"):
            bucket, prefix = split_s3_path(root_path)
            if settings.bucket_name not in (None, bucket):
                raise PlanError(
                    f"root_path {root_path!r} is in bucket {bucket!r} but bucket_settings name "
                    f"{settings.bucket_name!r}: give the bucket once"
                )
        elif settings.bucket_name is not None:
            bucket, prefix = settings.bucket_name, root_path.strip("/")
        else:
            raise PlanError(
                f"Backend.s3 needs a bucket: write root_path as s3://<bucket>/{root_path.strip('/')} "
                "or set bucket_settings=pw.io.s3.AwsS3Settings(bucket_name=...)"
            )
        return cls(f"s3://{bucket}/{prefix}".rstrip("/"), settings.storage_options())

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
    persistence_mode: PersistenceMode = PersistenceMode.PERSISTING

    def __post_init__(self) -> None:
        if self.backend is None and (self.metadata_storage is None or self.snapshot_storage is None):
            raise PlanError("pw.persistence.Config needs a backend, or both metadata_storage and snapshot_storage")
        if self.metadata_storage is None:
            object.__setattr__(self, "metadata_storage", self.backend)
        if self.snapshot_storage is None:
            object.__setattr__(self, "snapshot_storage", self.backend)
        interval = self.snapshot_interval_ms
        if isinstance(interval, bool) or not isinstance(interval, int) or interval < 0:
            raise ValueError(f"snapshot_interval_ms must be a whole number of milliseconds, 0 or more; got {interval!r}")
        if self.on_plan_change not in ("error", "rebuild"):
            raise PlanError('on_plan_change must be "error" or "rebuild"')
        if not isinstance(self.persistence_mode, PersistenceMode):
            object.__setattr__(self, "persistence_mode", PersistenceMode.PERSISTING)

    @property
    def keeps_state(self) -> bool:
        """Whether runs keep the sources' positions and the operators' state (all modes
        but ``UDF_CACHING``)."""
        return self.persistence_mode != PersistenceMode.UDF_CACHING

    @property
    def udf_cache_folder(self) -> str | None:
        """Where ``pw.udfs.DiskCache`` keeps results: ``runtime_calls`` in a filesystem
        storage (None in S3: caches then live for one run)."""
        root = (self.backend or self.snapshot_storage).root
        return None if root.startswith("s3://") else os.path.join(root, "runtime_calls")

    @classmethod
    def simple_config(
        cls, backend: Backend, snapshot_interval_ms: int = 60_000, **kwargs: Any
    ) -> "Config":
        """A config that keeps metadata and snapshots in one backend."""
        return cls(backend, snapshot_interval_ms=snapshot_interval_ms, **kwargs)
