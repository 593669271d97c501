"""``pw.io.s3``: objects of an S3 bucket (AWS, or any S3-compatible store) as a table,
and the bucket's settings, which ``pw.persistence.Backend.s3`` also takes."""

from __future__ import annotations

from typing import Any

from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.connectors.object_store import ObjectStoreFiles
from sparkway.errors import PlanError, traced
from sparkway.io._files import read_files
from sparkway.persistence.s3 import AwsS3Settings, split_s3_path

__all__ = ["AwsS3Settings", "read"]

#: Pathway's names of the object formats, as the file source names them
_FORMATS = {"plaintext_by_object": "plaintext_by_file"}


@traced
def read(
    path: str,
    format: str,
    *,
    aws_s3_settings: AwsS3Settings | None = None,
    schema: type[Schema] | None = None,
    mode: str = "streaming",
    downloader_threads_count: int | None = None,
    **kwargs: Any,
) -> Table:
    """Rows of the objects under ``path`` in an S3 bucket: ``s3://<bucket>/<prefix>``, or
    a prefix in ``aws_s3_settings.bucket_name``.  The prefix names an object, or a folder
    of objects read recursively.

    ``format`` is ``"csv"``, ``"json"`` (JSON lines), ``"plaintext"`` (a row per line),
    ``"plaintext_by_object"`` (a row per object), ``"binary"`` or ``"parquet"``; the other
    keywords are those of ``pw.io.fs.read`` (``with_metadata``, ``csv_settings``,
    ``name``, ``object_pattern``...).  Objects are found as files are: in streaming mode
    the bucket is listed again at every poll, a new object is read, a rewritten one
    (another ETag, size or time) has its rows retracted and is read again, a deleted one
    has its rows retracted.  With persistence, a restart reads only new and changed
    objects.  This program lists the bucket; Spark's tasks fetch and parse the byte
    ranges of a large step themselves, so the executors need the bucket's network and
    credentials too.  Without ``aws_s3_settings``, credentials come from the AWS
    environment (variables, profiles, instance roles).  ``downloader_threads_count`` is
    accepted and ignored: Spark's tasks are the downloaders.

    >>> import sparkway as pw
    >>> class Pet(pw.Schema):
    ...     owner: str
    ...     pet: str
    >>> settings = pw.io.s3.AwsS3Settings(bucket_name="datasets", region="eu-west-3")
    >>> pets = pw.io.s3.read("animals/", format="json", aws_s3_settings=settings, schema=Pet)
    >>> pets.column_names()
    ['owner', 'pet']
    """
    url, options = _bucket_url(path, aws_s3_settings)
    files = ObjectStoreFiles(url, options, kwargs.pop("object_pattern", "*"))
    return read_files("pw.io.s3.read", url, format=_FORMATS.get(format, format), schema=schema, mode=mode,
                      files=files, **kwargs)


def _bucket_url(path: str, settings: AwsS3Settings | None) -> tuple[str, dict[str, Any]]:
    """The ``s3://`` URL of ``path`` and the filesystem options that reach it."""
    if path.startswith("s3://"):
        bucket, key = split_s3_path(path)
        if settings is not None and settings.bucket_name not in (None, bucket):
            raise PlanError(f"the path {path!r} is in bucket {bucket!r}, aws_s3_settings names bucket "
                            f"{settings.bucket_name!r}: give a path in the settings' bucket, or the same bucket")
    elif settings is None or settings.bucket_name is None:
        raise PlanError(f"cannot tell the bucket of {path!r}: give s3://<bucket>/{path.lstrip('/')}, "
                        "or aws_s3_settings=pw.io.s3.AwsS3Settings(bucket_name=...)")
    else:
        bucket, key = settings.bucket_name, path.strip("/")
    options = settings.storage_options() if settings is not None else {}
    return f"s3://{bucket}/{key}".rstrip("/"), options
