"""Pathway's standard library modules (``pw.stdlib``), built from the public API."""

from sparkway.stdlib import statistical, time_utils, utils

__all__ = ["statistical", "time_utils", "utils"]
