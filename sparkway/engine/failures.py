"""Failures inside a step's Spark job, as errors a user can act on.

On executors, ``failures_named`` turns an exception of a user function or a kernel
into a ``ComputationError`` that names the operator and the line of the program that
built it.  Spark hands it to the driver inside its own exception, as text with pages of
Java and Python stack; ``computation_error`` takes the user's part out of that text, and
the whole of it goes to the debug log.
"""

from __future__ import annotations

import logging
import re
import sys
from typing import Any
from collections.abc import Iterator
from contextlib import contextmanager

import sparkway.errors as errors
from sparkway.errors import ComputationError, SparkError, SparkwayError, note_origin

log = logging.getLogger("sparkway")

_MARKED = re.compile(r"sparkway\.errors\.ComputationError: (.*)")
# sparkway's other errors, raised by its own code in a task
_OWN = re.compile(r"sparkway\.errors\.((?!ComputationError)\w+Error): (.*)")
_RAISED = re.compile(r"\[USER_RAISED_EXCEPTION\] (.*?)(?: SQLSTATE: \w+)?$", re.MULTILINE)
# Spark 3.5's raise_error, whose errors have no class: a plain RuntimeException, the
# task's failure or its cause
_RAISED_UNCLASSED = re.compile(r"(?:\): |Caused by: )java\.lang\.RuntimeException: (.*)$", re.MULTILINE)
# the last line of a Python traceback (not a JVM exception's)
_PYTHON = re.compile(r"^(?!org\.|java\.|scala\.|py4j\.)(\w[\w.]*(?:Error|Exception): .+)$", re.MULTILINE)
# "...: ZeroDivisionError: ...": the exception type a message names (its message may be empty)
_KIND = re.compile(r"(?:^|: )(\w+(?:Error|Exception)):(?: |$)")
# Spark SQL's own errors, as the exception Python raises for the same fault
_SPARK_KINDS = {
    "DIVIDE_BY_ZERO": "ZeroDivisionError",
    "REMAINDER_BY_ZERO": "ZeroDivisionError",
    "INTERVAL_DIVIDED_BY_ZERO": "ZeroDivisionError",
    "INVALID_ARRAY_INDEX": "IndexError",
    "INVALID_ARRAY_INDEX_IN_ELEMENT_AT": "IndexError",
    "ARITHMETIC_OVERFLOW": "OverflowError",
    "CAST_INVALID_INPUT": "ValueError",
}
_ORIGIN = re.compile(r"^\w+ at (\S+:\d+): ")
# the class of an exception that is not a built-in, as ``failures_named`` writes it
_CLASS_LINE = "raised as an instance of "
_CLASS = re.compile(re.escape(_CLASS_LINE) + r"([\w.]+):([\w.]+)")
_SPARK_ERROR = re.compile(r"\[([A-Z_]+)\]")
# a JVM exception's line in a Py4J error (": org.apache.spark.SparkException: Job aborted...")
_JVM = re.compile(r"^(?:: )?(?:org|java|scala)\.[\w.$]*\.(\w+(?:Exception|Error)): (.+)$", re.MULTILINE)
# why Spark's job failed, in its "Job aborted due to stage failure" line
_TASK_FAILURE = re.compile(r"most recent failure: Lost task [^)]*\)[^)]*\): (?:[\w$]+\.)*(\w+(?:Exception|Error)): (.+)$",
                           re.MULTILINE)
# Spark's Python daemon or worker that could not start on an executor: a module missing
# from the Python the executors run
_WORKER_MISSING_MODULE = re.compile(r"Error from python worker:\s*\n\s*(\S+?):? .*No module named '([\w.]+)'")
#: failures of Spark's own, by a text their errors hold: what happened and what to do
SPARK_FAULTS = (
    ("Python worker exited unexpectedly",
     "a Python worker of Spark ended in the middle of a task: a function of the program "
     "ended its process (os._exit) or crashed in native code, or the system stopped it "
     "for lack of memory"),
    ("java.lang.OutOfMemoryError",
     "Spark's JVM ran out of memory: give it more (SPARKWAY_DRIVER_MEMORY, 4g by default; "
     "on a cluster, spark.executor.memory) or give the run smaller steps of input"),
    ("No space left on device",
     "a disk that Spark writes its temporary files to (spark.local.dir) is full"),
)


@contextmanager
def failures_named(where: str) -> Iterator[None]:
    """Re-raises an exception of the block as a ``ComputationError`` saying ``where``."""
    try:
        yield
    except ComputationError:
        raise
    except Exception as error:
        kind = type(error)
        # KeyError's str() quotes its message
        said = error.args[0] if isinstance(error, KeyError) and len(error.args) == 1 else error
        text = " ".join(str(said).split())  # one line: the driver reads it back from text
        failure = ComputationError.of(kind.__name__, f"{where}: {kind.__name__}: {text}")
        if kind.__module__ != "builtins":  # on a line of its own, read by computation_error
            failure.args = (f"{failure.args[0]}\n{_CLASS_LINE}{kind.__module__}:{kind.__qualname__}",)
        raise failure from error


def computation_error(error: BaseException) -> SparkwayError:
    """The user's part of a failed Spark job's exception, as an error of the type the
    user's code (or Python, for a division by zero) raised; an error of sparkway's own in
    a task (a damaged state file) as itself."""
    log.debug("the step's Spark job failed", exc_info=error)
    text = str(error)
    own = _OWN.findall(text)
    if own:
        kind, message = own[-1]
        return getattr(errors, kind)(message.strip())
    message = _user_message(text, type(error).__name__)
    kind = next((k for k in _KIND.findall(message) if k != "ComputationError"), "")
    spark_kind = next((_SPARK_KINDS[k] for k in _SPARK_ERROR.findall(text) if k in _SPARK_KINDS), "")
    failure = ComputationError.of(kind or spark_kind, message, _raised_class(text))
    origin = _ORIGIN.search(message)  # "select at prog.py:12: ...": the line that built the operator
    note_origin(failure, origin.group(1) if origin else "")
    return failure


def _raised_class(text: str) -> type | None:
    """The exception class a worker's failure names, when its module is imported here
    (a program's own exception, ``threading.BrokenBarrierError``...)."""
    named = _CLASS.search(text)
    if named is None or named.group(1) not in sys.modules:
        return None
    found: Any = sys.modules[named.group(1)]
    for part in named.group(2).split("."):
        found = getattr(found, part, None)
    return found if isinstance(found, type) and issubclass(found, Exception) else None


def _user_message(text: str, error_type: str) -> str:
    marked = _MARKED.findall(text)
    if marked:
        return marked[-1].strip()
    raised = _RAISED.search(text) or _RAISED_UNCLASSED.search(text)
    if raised:
        return raised.group(1).strip()
    missing = _WORKER_MISSING_MODULE.search(text)
    if missing:
        python, module = missing.groups()
        return (f"the step's Spark job failed: Spark's Python workers ({python}) cannot import {module!r}: "
                "install sparkway, in this program's version, and its dependencies in the Python of the "
                "executors (spark.pyspark.python), or ship them as a packed environment (spark.archives; "
                "docs/deployment.md)")
    python = _PYTHON.findall(text)
    if python:
        return f"the step's Spark job failed: {python[-1].strip()}"
    fault = next((said for found, said in SPARK_FAULTS if found in text), None)
    if fault is not None:
        return f"the step's Spark job failed: {fault} (Spark's error is logged at DEBUG level)"
    # Spark's own failure (a result too large...): the task's, not its wrappers'
    jvm = _TASK_FAILURE.search(text) or _JVM.search(text)
    first = f"{jvm.group(1)}: {jvm.group(2).strip()}" if jvm else next(
        (line.strip() for line in text.splitlines() if line.strip()), error_type)
    return f"the step's Spark job failed: {first} (the whole error is logged at DEBUG level)"


def spark_ended(error: BaseException, jvm: Any) -> SparkError | None:
    """``error`` as the ``SparkError`` it means when Spark's JVM has ended under the
    program (the system stopped it, out of memory...): py4j then fails on whatever the
    driver asked of it; None for any other error.  ``jvm``: the JVM's process when
    sparkway started it (a ``Popen``), else None."""
    from py4j.protocol import Py4JNetworkError

    code = jvm.poll() if jvm is not None else None
    if code is None and not isinstance(error, Py4JNetworkError):
        return None
    log.debug("Spark's JVM ended", exc_info=error)
    how = "" if code is None else f" (process {jvm.pid}, {_exit_status(code)})"
    return SparkError(f"Spark's JVM ended during the run{how}; what the run committed stays, "
                      f"and a persistent program continues from it when started again")


def _exit_status(code: int) -> str:
    """
    >>> _exit_status(-9), _exit_status(1)
    ('killed by signal 9, as the system does when memory runs out', 'exit code 1')
    """
    if code == -9:
        return "killed by signal 9, as the system does when memory runs out"
    return f"killed by signal {-code}" if code < 0 else f"exit code {code}"


def spark_not_started(error: BaseException) -> SparkError:
    """Spark's refusal to start (a setting it rejects, too little memory), from the
    Py4J error of the SparkContext's creation, as one line."""
    log.debug("Spark did not start", exc_info=error)
    jvm = _JVM.search(str(error))
    said = f"{jvm.group(1)}: {jvm.group(2).strip()}" if jvm else str(error).strip().splitlines()[0]
    return SparkError(f"Spark could not start: {said} (Spark's settings come from SPARKWAY_SPARK_CONF, "
                      f"SPARKWAY_DRIVER_MEMORY and SPARKWAY_SPARK_MASTER; the whole error is logged "
                      f"at DEBUG level)")
