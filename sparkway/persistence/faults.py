"""Named fault points, for the fault-injection tests (``tests/e2e/test_faults.py``).

``fault_point(name)`` marks a moment where a crash matters: between writing a new file
and switching the pointer to it, between a step's log record and its commit, inside a
rebuild...  With the environment variable ``SPARKWAY_FAULT_POINT`` set to ``name`` (or
``name:N``: the N-th time the point is reached, counted over every process of the run,
1 by default), reaching that point ends the process at once with ``os._exit(137)``, as a
SIGKILL would: no ``finally``, no ``atexit``, no flush.  In a Spark worker (the state of
the operators is written there) the point first kills the driver with SIGKILL, with its
whole process group when it leads one (the driver, its JVM and workers: a lost machine),
so that the run stops there too, as it would if the machine died.

Each time a watched point is reached, a line ``<name> <pid>`` is appended to the file
``SPARKWAY_FAULT_COUNTER`` (by default ``$TMPDIR/sparkway-fault-<driver pid>.count``):
the count of its lines is how the N-th time is found across processes, and it tells a
test that the point was reached.

Without the variable, ``fault_point`` is a function that returns at once: the variable is
read once, when this module is imported.

The points (every one is listed in ``POINTS``, which the tests iterate over):

* ``runner.step.logged``: the step's record ``steps/<n>.json`` is written, nothing of the
  step is computed yet;
* ``runner.sinks.written``: every sink wrote (and flushed) the step's changes; the step
  is not committed;
* ``metadata.index.delta.written``: a layer of a file source's position (the files the
  step changed, merged with the newest deltas: ``persistence/index.py``) is written,
  not yet the commit that names it;
* ``metadata.index.base.written``: ... a new base of that position (every file) is
  written, not yet the commit that names it (the first commit of a new storage);
* ``metadata.commit.written``: ``commits/<n>.json`` is written; the old records and
  layers are not pruned yet;
* ``storage.bytes.synced`` / ``storage.arrow.synced``: a blob of a filesystem storage (a
  JSON record / an Arrow file) is written to its temporary file and fsynced, not yet
  renamed to its name;
* ``state.changelog.written``: a keyed state partition (deduplicate, gates...) wrote the
  step's changelog, not its ``LATEST``;
* ``state.latest.written``: ... wrote its ``LATEST``, not yet its working copy;
* ``state.snapshot.written``: ... wrote a snapshot, older files not pruned yet;
* ``arrangement.runs.written``: an arrangement partition (reduce, join...) wrote the
  step's runs (and their merges), not the manifest that lists them;
* ``arrangement.manifest.written``: ... wrote the manifest, not ``LATEST``;
* ``arrangement.latest.written``: ... switched ``LATEST``, older runs not pruned yet;
* ``metadata.rebuild.marked``: ``on_plan_change="rebuild"``: ``REBUILDING`` is
  recorded, nothing cleared yet;
* ``metadata.rebuild.clearing``: the step records are deleted, the commits not yet;
* ``runner.rebuild.cleared``: the metadata log and the operators' state are deleted, the
  sources' stored rows not yet;
* ``metadata.plan.written``: ``plan.json`` of the new program is written, ``REBUILDING``
  not yet removed (also reached by the first run on a new storage).
"""

from __future__ import annotations

import fcntl
import os
import signal
import tempfile

__all__ = ["POINTS", "fault_point", "VARIABLE"]

VARIABLE = "SPARKWAY_FAULT_POINT"
COUNTER_VARIABLE = "SPARKWAY_FAULT_COUNTER"
#: the pid of the driver of a run with a fault point, for its Spark workers
DRIVER_VARIABLE = "SPARKWAY_FAULT_DRIVER"
EXIT_CODE = 137  # what a shell reports for a process ended by SIGKILL

#: every fault point, roughly in the order a run reaches them
POINTS = (
    "metadata.rebuild.marked",
    "metadata.rebuild.clearing",
    "runner.rebuild.cleared",
    "metadata.plan.written",
    "runner.step.logged",
    "storage.bytes.synced",
    "storage.arrow.synced",
    "state.changelog.written",
    "state.latest.written",
    "state.snapshot.written",
    "arrangement.runs.written",
    "arrangement.manifest.written",
    "arrangement.latest.written",
    "runner.sinks.written",
    "metadata.index.delta.written",
    "metadata.index.base.written",
    "metadata.commit.written",
)


def _parse(value: str | None) -> tuple[str | None, int]:
    if not value:
        return None, 0
    name, sep, count = value.rpartition(":")
    if not sep:
        name, count = value, "1"
    if name not in POINTS:
        raise ValueError(f"{VARIABLE}={value!r}: no fault point {name!r}; the points are {', '.join(POINTS)}")
    if not count.isdigit() or int(count) < 1:
        raise ValueError(f"{VARIABLE}={value!r}: the count after ':' must be a whole number from 1")
    return name, int(count)


_WATCHED, _AT = _parse(os.environ.get(VARIABLE))
if _WATCHED is not None and DRIVER_VARIABLE not in os.environ:
    # the driver: its JVM, started later, and the JVM's Python workers inherit this
    os.environ[DRIVER_VARIABLE] = str(os.getpid())


def _counter_path() -> str:
    return os.environ.get(COUNTER_VARIABLE) or os.path.join(
        tempfile.gettempdir(), f"sparkway-fault-{os.environ.get(DRIVER_VARIABLE, os.getpid())}.count"
    )


def _reached(name: str) -> None:
    """Counts this time; ends the run when it is the watched one."""
    fd = os.open(_counter_path(), os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.lseek(fd, 0, os.SEEK_SET)
        seen = 0
        while chunk := os.read(fd, 65536):
            seen += chunk.count(b"\n")
        os.write(fd, f"{name} {os.getpid()}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)  # releases the lock
    if seen + 1 != _AT:
        return
    try:
        os.write(2, f"sparkway: fault point {name} reached (time {_AT}): exiting with {EXIT_CODE}\n".encode())
    except OSError:
        pass
    driver = int(os.environ.get(DRIVER_VARIABLE, os.getpid()))
    if driver != os.getpid():  # a Spark worker: the run dies with the driver
        try:
            if os.getpgid(driver) == driver:
                os.killpg(driver, signal.SIGKILL)
            else:
                os.kill(driver, signal.SIGKILL)
        except OSError:
            pass
    os._exit(EXIT_CODE)


def _watching(name: str) -> None:
    if name == _WATCHED:
        _reached(name)


def _idle(name: str) -> None:
    return None


#: marks the fault point ``name`` (one of ``POINTS``): see the module's docstring
fault_point = _watching if _WATCHED is not None else _idle
