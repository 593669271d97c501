"""``pw.io``: input and output connectors."""

from sparkway.io import csv, fs, jsonlines, null, plaintext, postgres

__all__ = ["csv", "fs", "jsonlines", "null", "plaintext", "postgres"]
