"""``pw.io``: input and output connectors."""

from sparkway.io import csv, fs, jsonlines, kafka, null, plaintext, postgres, s3

__all__ = ["csv", "fs", "jsonlines", "kafka", "null", "plaintext", "postgres", "s3"]
