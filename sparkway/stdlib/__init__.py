"""Pathway's standard library modules (``pw.stdlib``), built from the public API."""

from sparkway.stdlib import indexing, ml, statistical, time_utils, utils, viz

__all__ = ["indexing", "ml", "statistical", "time_utils", "utils", "viz"]
