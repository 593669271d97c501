"""``pw.io``: input and output connectors."""

import importlib
from typing import Any

from sparkway.io import csv, deltalake, fs, jsonlines, kafka, minio, null, plaintext, pyfilesystem, python, s3, spark, sqlite
from sparkway.io._subscribe import subscribe
from sparkway.io._synchronization import DurationLike, SynchronizedColumn, register_input_synchronization_group

__all__ = ["csv", "debezium", "deltalake", "fs", "iceberg", "jsonlines", "kafka", "minio", "null", "plaintext", "postgres", "pyfilesystem", "python", "s3", "spark", "sqlite", "subscribe",
           "DurationLike", "SynchronizedColumn", "register_input_synchronization_group"]


def __getattr__(name: str) -> Any:
    # pw.io.postgres loads its driver, psycopg (60-90 ms), on first use only; pw.io.iceberg
    # loads pyiceberg when a run opens its tables
    if name in ("postgres", "iceberg", "debezium"):
        return importlib.import_module(f"sparkway.io.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
