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

**Faults in Spark tasks.**  ``SPARKWAY_TASK_FAULT=<point>:<when>:<action>`` (several,
separated by commas) acts in the Spark task that reaches ``<point>`` (one of
``TASK_POINTS``; reached outside a task, in the driver, it is neither counted nor acted
on), where ``<when>`` is

* ``N``: the N-th time a task reaches the point, counted over every process of the run;
* ``each``: the first time each operator's kernel reaches the point, in a task that no
  task fault acted in before (a task: its stage and partition).  So every task fails at
  most once, its retry (or speculative copy) passes, and when several kernels run in one
  task (a small step: one task works through them all), one acts in this step and the
  others in later steps, so that a task never needs more than two attempts.  The state
  points name their operator too; ``storage.*`` points name none and act once per task;

and ``<action>`` is

* ``fail``: the task raises ``TaskFault``, and Spark retries it (up to
  ``spark.task.maxFailures`` attempts; local mode, ``local[N]``, makes no retry);
* ``kill-executor``: SIGKILL to the executor's JVM, the first ``java`` process among the
  task's Python worker's ancestors (local-cluster, standalone: a lost executor, whose
  tasks and shuffle files Spark computes again elsewhere; local mode: the driver's JVM,
  hence the run), then the worker itself ends;
* ``slow`` or ``slow=<seconds>``: the task sleeps that long (``SLOW_S`` by default), then
  goes on: a straggler, for Spark's speculation to copy;
* ``record``: nothing; the point's lines (below) tell a test which attempts reached it,
  in which order (e.g. which attempts of a step switched a partition's ``LATEST``).

Each time a task reaches a watched point, a line ``<point> <pid> task=<stage>:<partition>
op=<operator or -> attempt=<n> action=<action or none>`` is appended to the same counter
file (``kill-executor:<the JVM's pid>``): it tells a test which attempts of which tasks
reached it, in which processes and in which order, and which one acted.  On a cluster
whose executors do not inherit the driver's environment (a standalone cluster), pass the
variables on as ``spark.executorEnv.*`` settings (``SPARKWAY_SPARK_CONF``).

Without the variables, ``fault_point`` is a function that returns at once: the variables
are read once, when this module is imported.

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
* ``kernel.started`` (``TASK_ONLY_POINTS``, for task faults only): a Spark task of a
  stateful operator's kernel starts, before it reads its rows or opens its state;
* ``sink.piece.written`` (for task faults only): a Spark task of a large step did a
  sink's work on its piece (formatted its lines, wrote its files), the driver has not
  taken it yet.
"""

from __future__ import annotations

import fcntl
import os
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["POINTS", "TASK_POINTS", "TaskFault", "fault_point", "VARIABLE", "TASK_VARIABLE"]

VARIABLE = "SPARKWAY_FAULT_POINT"
TASK_VARIABLE = "SPARKWAY_TASK_FAULT"
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
#: points only Spark tasks reach, watched by task faults (not in ``POINTS``, which the
#: driver crash tests iterate: a crash there is one inside the step, as others are)
TASK_ONLY_POINTS = ("kernel.started", "sink.piece.written")
#: the points a task fault may watch: those reached in Spark tasks
TASK_POINTS = TASK_ONLY_POINTS + tuple(p for p in POINTS if p.startswith(("storage.", "state.", "arrangement.")))
#: what a task fault does (``slow`` also as ``slow=<seconds>``)
ACTIONS = ("fail", "kill-executor", "slow", "record")
SLOW_S = 10.0  # a straggler's sleep, unless the variable says


class TaskFault(RuntimeError):
    """The failure a ``fail`` task fault raises in a Spark task."""


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


@dataclass(frozen=True)
class _TaskWatch:
    """One fault of ``SPARKWAY_TASK_FAULT``: ``at`` None means ``each``."""

    point: str
    at: int | None
    action: str
    seconds: float = SLOW_S


def _parse_task(value: str | None) -> tuple[_TaskWatch, ...]:
    """>>> _parse_task("kernel.started:each:slow=2.5,state.latest.written:3:fail")  # doctest: +NORMALIZE_WHITESPACE
    (_TaskWatch(point='kernel.started', at=None, action='slow', seconds=2.5),
     _TaskWatch(point='state.latest.written', at=3, action='fail', seconds=10.0))
    """
    return tuple(_parse_watch(spec.strip()) for spec in (value or "").split(",") if spec.strip())


def _parse_watch(spec: str) -> _TaskWatch:
    parts = spec.split(":")
    if len(parts) != 3:
        raise ValueError(f"{TASK_VARIABLE}: {spec!r}: expected <point>:<N or each>:<action>")
    point, when, action = parts
    if point not in TASK_POINTS:
        raise ValueError(f"{TASK_VARIABLE}: {spec!r}: no task fault point {point!r}; they are {', '.join(TASK_POINTS)}")
    if when != "each" and (not when.isdigit() or int(when) < 1):
        raise ValueError(f"{TASK_VARIABLE}: {spec!r}: <when> is a whole number from 1, or 'each'")
    action, _, seconds = action.partition("=")
    if action not in ACTIONS or (seconds and action != "slow"):
        raise ValueError(f"{TASK_VARIABLE}: {spec!r}: the actions are {', '.join(ACTIONS)}, slow=<seconds>")
    try:
        delay = float(seconds) if seconds else SLOW_S
    except ValueError:
        raise ValueError(f"{TASK_VARIABLE}: {spec!r}: slow=<seconds> takes a number") from None
    return _TaskWatch(point, None if when == "each" else int(when), action, delay)


_WATCHED, _AT = _parse(os.environ.get(VARIABLE))
_TASK = _parse_task(os.environ.get(TASK_VARIABLE))
if (_WATCHED is not None or _TASK) and DRIVER_VARIABLE not in os.environ:
    # the driver: its JVM, started later, and the JVM's Python workers inherit this
    os.environ[DRIVER_VARIABLE] = str(os.getpid())


def _counter_path() -> str:
    return os.environ.get(COUNTER_VARIABLE) or os.path.join(
        tempfile.gettempdir(), f"sparkway-fault-{os.environ.get(DRIVER_VARIABLE, os.getpid())}.count"
    )


def _count(line: Callable[[list[str]], str]) -> list[str]:
    """Appends ``line(lines before)`` to the counter file, under its lock (so that the
    processes of a run count one after the other); returns the lines before it."""
    fd = os.open(_counter_path(), os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.lseek(fd, 0, os.SEEK_SET)
        data = b""
        while chunk := os.read(fd, 65536):
            data += chunk
        before = data.decode().split("\n")[:-1]
        os.write(fd, f"{line(before)}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)  # releases the lock
    return before


def _say(message: str) -> None:
    try:
        os.write(2, f"sparkway: {message}\n".encode())
    except OSError:
        pass


def _reached(name: str) -> None:
    """Counts this time; ends the run when it is the watched one."""
    seen = sum(1 for line in _count(lambda _: f"{name} {os.getpid()}") if line.startswith(name + " "))
    if seen + 1 != _AT:
        return
    _say(f"fault point {name} reached (time {_AT}): exiting with {EXIT_CODE}")
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


def _task_reached(watch: _TaskWatch, operator: str) -> None:
    """Counts this time, in a Spark task; acts when it is the watched one."""
    from pyspark import TaskContext  # only here: the driver's module imports stay light

    context = TaskContext.get()
    if context is None:  # the driver (a point both reach): not a task's
        return
    task = f"task={context.stageId()}:{context.partitionId()}"
    op = f"op={operator.replace(' ', '_') or '-'}"
    acting = False

    def line(before: list[str]) -> str:
        nonlocal acting
        split = [b.split(" ") for b in before]
        acting = watch.action != "record" and _due(watch, task, op if operator else "", split)
        action = watch.action if acting else "none"
        if acting and action == "kill-executor":  # which JVM, for the test to see it gone
            action = f"{action}:{executor_jvm()}"
        return f"{watch.point} {os.getpid()} {task} {op} attempt={context.attemptNumber()} action={action}"

    _count(line)
    if acting:
        _act(watch, f"{task} {op} attempt={context.attemptNumber()}")


def _due(watch: _TaskWatch, task: str, op: str, before: list[list[str]]) -> bool:
    """Whether this time is the watched one, given the counter's lines before it
    (``<point> <pid> <task> <op> attempt=<n> action=<a>``, split)."""
    if watch.at is not None:
        return sum(1 for b in before if b[0] == watch.point) + 1 == watch.at
    acted = [b for b in before if len(b) == 6 and b[5] != "action=none"]
    return not any(b[2] == task or (op and b[0] == watch.point and b[3] == op) for b in acted)


def _act(watch: _TaskWatch, where: str) -> None:
    _say(f"task fault at {watch.point} ({where}): {watch.action}")
    if watch.action == "fail":
        raise TaskFault(f"task fault injected at {watch.point} ({where})")
    if watch.action == "slow":
        time.sleep(watch.seconds)
        return
    os.kill(executor_jvm(), signal.SIGKILL)
    os._exit(EXIT_CODE)  # the executor is gone: so is its worker


def executor_jvm() -> int:
    """The pid of the JVM this Spark Python worker belongs to: the first ``java``
    process among its ancestors (a worker's parent is Spark's Python daemon, whose
    parent is the executor's JVM)."""
    pid = os.getppid()
    while pid > 1:
        command, parent = _process(pid)
        if command == "java":
            return pid
        pid = parent
    raise RuntimeError(f"no java process among the ancestors of process {os.getpid()}")


def _process(pid: int) -> tuple[str, int]:
    """(command name, parent pid) of ``pid``, from ``/proc/<pid>/stat``: the name is in
    parentheses and may hold spaces and parentheses itself, so the fields after it are
    found from its last ``)``."""
    with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
        stat = f.read()
    command = stat[stat.index("(") + 1:stat.rindex(")")]
    return command, int(stat[stat.rindex(")") + 2:].split()[1])


def _watching(name: str, operator: str = "") -> None:
    if name == _WATCHED:
        _reached(name)
    for watch in _TASK:
        if name == watch.point:
            _task_reached(watch, operator)
            return


def _idle(name: str, operator: str = "") -> None:
    return None


#: marks the fault point ``name`` (one of ``POINTS`` or ``TASK_ONLY_POINTS``), reached by
#: ``operator``'s kernel when it says: see the module's docstring
fault_point = _watching if _WATCHED is not None or _TASK else _idle
