"""Settings of an S3 bucket (AWS, or any S3-compatible store), as fsspec options.

Users reach ``AwsS3Settings`` as ``pw.io.s3.AwsS3Settings``; ``pw.persistence.Backend.s3``
turns it into the options of the ``BlobStorage`` that keeps state in the bucket.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparkway.errors import PlanError

__all__ = ["AwsS3Settings"]


@dataclass(frozen=True)
class AwsS3Settings:
    """How to reach a bucket.  Without ``access_key``, credentials come from the usual
    AWS chain (environment variables, ``~/.aws`` profiles, instance roles).  For a
    self-hosted store (MinIO, Ceph...) give ``endpoint`` and ``region``, and usually
    ``with_path_style=True``.  Secrets never appear in the ``repr``.

    >>> import sparkway as pw
    >>> settings = pw.io.s3.AwsS3Settings(
    ...     bucket_name="pipelines", access_key="AKIA...", secret_access_key="s3cr3t",
    ...     endpoint="http://127.0.0.1:9000", region="us-east-1", with_path_style=True,
    ... )
    >>> "s3cr3t" in repr(settings)
    False
    """

    bucket_name: str | None = None
    access_key: str | None = None
    secret_access_key: str | None = field(default=None, repr=False)
    with_path_style: bool = False
    region: str | None = None
    endpoint: str | None = None
    session_token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if (self.access_key is None) != (self.secret_access_key is None):
            raise PlanError(
                "AwsS3Settings needs both access_key and secret_access_key, or neither "
                "(then credentials come from the AWS environment variables or profiles)"
            )

    @classmethod
    def new_from_path(cls, s3_path: str) -> "AwsS3Settings":
        """Settings for the bucket of ``s3://<bucket>/<path>``, credentials from the
        environment.

        >>> import sparkway as pw
        >>> pw.io.s3.AwsS3Settings.new_from_path("s3://pipelines/wordcount").bucket_name
        'pipelines'
        """
        bucket, _ = split_s3_path(s3_path)
        return cls(bucket_name=bucket)

    def storage_options(self) -> dict[str, Any]:
        """Options of an s3fs filesystem for this bucket (plain values: picklable)."""
        options: dict[str, Any] = {}
        if self.access_key is not None:
            options["key"] = self.access_key
            options["secret"] = self.secret_access_key
        if self.session_token is not None:
            options["token"] = self.session_token
        if self.endpoint is not None:
            endpoint = self.endpoint if "://" in self.endpoint else f"https://{self.endpoint}"
            options["endpoint_url"] = endpoint
        if self.region is not None:
            options["client_kwargs"] = {"region_name": self.region}
        if self.with_path_style:
            options["config_kwargs"] = {"s3": {"addressing_style": "path"}}
        return options


def split_s3_path(s3_path: str) -> tuple[str, str]:
    """``"s3://bucket/a/b"`` -> ``("bucket", "a/b")``."""
    if not s3_path.startswith("s3://") or len(s3_path) <= len("s3://"):
        raise PlanError(f"an S3 path looks like s3://<bucket>/<path>, not {s3_path!r}")
    bucket, _, key = s3_path[len("s3://"):].partition("/")
    return bucket, key.strip("/")
