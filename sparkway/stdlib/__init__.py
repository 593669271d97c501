"""Pathway's standard library modules (``pw.stdlib``), built from the public API."""

from sparkway.stdlib import utils

__all__ = ["utils"]
