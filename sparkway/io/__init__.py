"""``pw.io``: input and output connectors."""

from sparkway.io import csv, fs, jsonlines, kafka, null, plaintext, python, s3
from sparkway.io._subscribe import subscribe

__all__ = ["csv", "fs", "jsonlines", "kafka", "null", "plaintext", "postgres", "python", "s3", "subscribe"]


def __getattr__(name: str) -> object:
    """``pw.io.postgres`` loads on first use: psycopg slows every program's start-up."""
    if name == "postgres":
        import importlib

        return importlib.import_module("sparkway.io.postgres")
    raise AttributeError(f"module 'sparkway.io' has no attribute {name!r}")
