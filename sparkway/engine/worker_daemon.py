"""Spark's Python daemon for the sessions sparkway creates (``spark.python.daemon.module``):
pyspark's own daemon, with pyspark imported from its installed package.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` (and py4j's zip) at the head of its
workers' ``PYTHONPATH``. Python caches no bytecode for modules imported from a zip, so
every new worker compiled pyspark again: 1.0 s of each worker's start, against 0.3 s from
the installed package. A fresh process starts four workers in its first large step.

The daemon also imports, once, what every worker imports to run sparkway's tasks
(``PRELOADED``), before it forks them: each forked worker starts with those modules (the
engine's kernels, pyarrow, pandas) loaded, where it spent another second importing them.
"""

from __future__ import annotations

import importlib
import os
import sys

#: the modules a worker needs for sparkway's tasks: pyspark's worker loop, and the engine's
#: stateful operators, which import its kernels' dependencies (pyarrow, pandas, state)
PRELOADED = ("pyspark.worker", "sparkway.engine.stateful")


def without_installed_pyspark_zips(path: list[str]) -> list[str]:
    """``path`` without the zips that ship inside an installed pyspark package (pip's
    pyspark: ``site-packages/pyspark/python/lib/*.zip``): the package itself, of the same
    release, is imported instead.  Zips of a Spark installed elsewhere (a cluster's
    ``SPARK_HOME``) stay: they match its JVM."""

    def inside_installed_pyspark(entry: str) -> bool:
        lib = os.path.dirname(entry)
        package = os.path.dirname(os.path.dirname(lib))
        return (
            entry.endswith(".zip")
            and os.path.basename(lib) == "lib"
            and os.path.basename(package) == "pyspark"
            and os.path.isfile(os.path.join(package, "__init__.py"))
        )

    return [entry for entry in path if not inside_installed_pyspark(entry)]


def preload(modules: tuple[str, ...] = PRELOADED) -> list[str]:
    """Imports ``modules`` in the daemon; returns those that failed (a cluster whose
    executors get sparkway only with each task's files: workers then import it as they
    would without the daemon's help)."""
    failed = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - only a head start: the worker reports its own failure
            failed.append(name)
    return failed


if __name__ == "__main__":
    sys.path[:] = without_installed_pyspark_zips(sys.path)
    from pyspark import daemon

    preload()
    daemon.manager()
