"""Where sparkway keeps machine-local caches: every one can be deleted at any time, and
is made again when needed (``sparkway cache clean``)."""

from __future__ import annotations

import os


def cache_root() -> str:
    """``$SPARKWAY_CACHE``, by default ``~/.cache/sparkway``."""
    return os.environ.get("SPARKWAY_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "sparkway")


def state_cache() -> str:
    """The working copies of persisted operator state (``$SPARKWAY_STATE_CACHE``, by
    default ``<cache>/state``), which executors map into memory."""
    return os.environ.get("SPARKWAY_STATE_CACHE") or os.path.join(cache_root(), "state")


def cds_folder() -> str:
    """The JVM's class-data archives (``<cache>/cds``), which halve Spark's start-up."""
    return os.path.join(cache_root(), "cds")
