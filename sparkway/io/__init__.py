"""``pw.io``: input and output connectors."""

from sparkway.io import csv, fs, jsonlines, kafka, null, plaintext, postgres, pyfilesystem, python, s3, sqlite
from sparkway.io._subscribe import subscribe

__all__ = ["csv", "fs", "jsonlines", "kafka", "null", "plaintext", "postgres", "pyfilesystem", "python", "s3", "sqlite", "subscribe"]
