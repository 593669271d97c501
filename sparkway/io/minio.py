"""``pw.io.minio``: objects of a MinIO bucket as a table (``pw.io.s3.read`` with MinIO's
settings)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.errors import traced
from sparkway.io import s3
from sparkway.persistence.s3 import AwsS3Settings

__all__ = ["MinIOSettings", "read"]


@dataclass(frozen=True)
class MinIOSettings:
    """How to reach a MinIO bucket.  ``endpoint`` without a scheme is reached over
    HTTPS.  Secrets never appear in the ``repr``.

    >>> import sparkway as pw
    >>> settings = pw.io.minio.MinIOSettings(
    ...     endpoint="minio.example.com:9000", bucket_name="datasets",
    ...     access_key="minio", secret_access_key="s3cr3t",
    ... )
    >>> settings.create_aws_settings().with_path_style
    True
    """

    endpoint: str
    bucket_name: str
    access_key: str
    secret_access_key: str = field(repr=False)
    with_path_style: bool = True
    region: str | None = None

    def create_aws_settings(self) -> AwsS3Settings:
        """The same bucket as ``pw.io.s3.AwsS3Settings``."""
        return AwsS3Settings(
            bucket_name=self.bucket_name, access_key=self.access_key, secret_access_key=self.secret_access_key,
            with_path_style=self.with_path_style, region=self.region, endpoint=self.endpoint,
        )


@traced
def read(
    path: str, minio_settings: MinIOSettings, format: str, *, schema: type[Schema] | None = None,
    mode: str = "streaming", **kwargs: Any,
) -> Table:
    """Rows of the objects under ``path`` (an object, or a folder of objects) in the
    bucket of ``minio_settings``; formats and keywords as ``pw.io.s3.read``.

    >>> import sparkway as pw
    >>> class Pet(pw.Schema):
    ...     owner: str
    ...     pet: str
    >>> settings = pw.io.minio.MinIOSettings(
    ...     endpoint="minio.example.com:9000", bucket_name="datasets",
    ...     access_key="minio", secret_access_key="s3cr3t",
    ... )
    >>> pw.io.minio.read("animals/", settings, "csv", schema=Pet).column_names()
    ['owner', 'pet']
    """
    return s3.read(path, format, aws_s3_settings=minio_settings.create_aws_settings(), schema=schema, mode=mode,
                   **kwargs)
