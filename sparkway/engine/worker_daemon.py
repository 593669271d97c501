"""Spark's Python daemon for the sessions sparkway creates (``spark.python.daemon.module``):
pyspark's own daemon, with pyspark imported from its installed package.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` (and py4j's zip) at the head of its
workers' ``PYTHONPATH``. Python caches no bytecode for modules imported from a zip, so
every new worker compiled pyspark again: 1.0 s of each worker's start, against 0.3 s from
the installed package. A fresh process starts four workers in its first large step. The
path also holds Spark's core jar, and a worker calls ``importlib.invalidate_caches()``
before every task (to see the task's files), which makes Python read again the table of
contents of every zip or jar it has opened from the path: 0.13-0.17 s of every task. The
daemon drops both from the path and from Python's cache of path entries.

The daemon also imports, once, what every worker imports to run sparkway's tasks
(``PRELOADED``), before it forks them: each forked worker starts with those modules (the
engine's kernels, pyarrow, pandas) loaded, where it spent another second importing them.
"""

from __future__ import annotations

import importlib
import os
import sys

#: the modules a worker needs for sparkway's tasks: pyspark's worker loop, the engine's
#: stateful operators, which import its kernels' dependencies (pyarrow, pandas, state),
#: and pyarrow's query engine, which its first group-by loads (65 ms per worker otherwise)
PRELOADED = ("pyspark.worker", "sparkway.engine.stateful", "pyarrow.acero")


def without_installed_pyspark_archives(path: list[str]) -> list[str]:
    """``path`` without the zips and jars that ship inside an installed pyspark package
    (pip's pyspark: ``site-packages/pyspark/python/lib/*.zip``, ``.../pyspark/jars/*.jar``)
    that this interpreter can import from its folder on ``path``: the package itself, of
    the same release, is imported instead.  Those of a Spark installed elsewhere (a
    cluster's ``SPARK_HOME``, or a pyspark installed beside another interpreter than the
    executors' packed environment) stay: they match its JVM.

    >>> without_installed_pyspark_archives(["/env/lib/pyspark/python/lib/pyspark.zip", "/env/lib"])
    ['/env/lib/pyspark/python/lib/pyspark.zip', '/env/lib']
    """
    folders = {os.path.abspath(entry) for entry in path}

    def inside_installed_pyspark(entry: str) -> bool:
        folder = os.path.dirname(entry)
        if entry.endswith(".zip") and os.path.basename(folder) == "lib":
            package = os.path.dirname(os.path.dirname(folder))  # pyspark/python/lib
        elif entry.endswith(".jar") and os.path.basename(folder) == "jars":
            package = os.path.dirname(folder)  # pyspark/jars
        else:
            return False
        return (os.path.basename(package) == "pyspark" and os.path.isfile(os.path.join(package, "__init__.py"))
                and os.path.dirname(os.path.abspath(package)) in folders)

    return [entry for entry in path if not inside_installed_pyspark(entry)]


def forget_path_entries(dropped: set[str]) -> None:
    """Drops ``dropped`` (and entries inside them: a jar's folders) from Python's cache of
    path entries, whose zip importers ``importlib.invalidate_caches`` would read again."""
    for entry in list(sys.path_importer_cache):
        if any(entry == d or entry.startswith(d + os.sep) for d in dropped):
            del sys.path_importer_cache[entry]


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
    kept = without_installed_pyspark_archives(sys.path)
    forget_path_entries(set(sys.path) - set(kept))
    sys.path[:] = kept
    from pyspark import daemon

    preload()
    daemon.manager()
