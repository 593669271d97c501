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

from sparkway import errors
from sparkway.errors import ComputationError, SparkwayError, note_origin

log = logging.getLogger("sparkway")

_MARKED = re.compile(r"sparkway\.errors\.ComputationError: (.*)")
# sparkway's other errors, raised by its own code in a task
_OWN = re.compile(r"sparkway\.errors\.((?!ComputationError)\w+Error): (.*)")
_RAISED = re.compile(r"\[USER_RAISED_EXCEPTION\] (.*?)(?: SQLSTATE: \w+)?$", re.MULTILINE)
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
    raised = _RAISED.search(text)
    if raised:
        return raised.group(1).strip()
    python = _PYTHON.findall(text)
    if python:
        return f"the step's Spark job failed: {python[-1].strip()}"
    jvm = _JVM.search(text)  # Spark's own failure: out of memory, a result too large...
    first = f"{jvm.group(1)}: {jvm.group(2).strip()}" if jvm else next(
        (line.strip() for line in text.splitlines() if line.strip()), error_type)
    return f"the step's Spark job failed: {first} (the whole error is logged at DEBUG level)"
