"""``pw.io``: input and output connectors."""

from sparkway.io import csv, fs, jsonlines, kafka, null, plaintext, postgres, pyfilesystem, python, s3, sqlite
from sparkway.io._subscribe import subscribe
from sparkway.io._synchronization import DurationLike, SynchronizedColumn, register_input_synchronization_group

__all__ = ["csv", "fs", "jsonlines", "kafka", "null", "plaintext", "postgres", "pyfilesystem", "python", "s3", "sqlite", "subscribe",
           "DurationLike", "SynchronizedColumn", "register_input_synchronization_group"]
