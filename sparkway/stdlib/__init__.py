"""Pathway's standard library modules (``pw.stdlib``), built from the public API."""

from sparkway.stdlib import indexing, ml, utils

__all__ = ["indexing", "ml", "utils"]
