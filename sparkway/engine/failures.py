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
from collections.abc import Iterator
from contextlib import contextmanager

from sparkway.errors import ComputationError, note_origin

log = logging.getLogger("sparkway")

_MARKED = re.compile(r"sparkway\.errors\.ComputationError: (.*)")
_RAISED = re.compile(r"\[USER_RAISED_EXCEPTION\] (.*?)(?: SQLSTATE: \w+)?$", re.MULTILINE)
# the last line of a Python traceback (not a JVM exception's)
_PYTHON = re.compile(r"^(?!org\.|java\.|scala\.|py4j\.)(\w[\w.]*(?:Error|Exception): .+)$", re.MULTILINE)
# "...: ZeroDivisionError: ...": the exception type a message names
_KIND = re.compile(r"(?:^|: )(\w+(?:Error|Exception)): ")
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
_SPARK_ERROR = re.compile(r"\[([A-Z_]+)\]")


@contextmanager
def failures_named(where: str) -> Iterator[None]:
    """Re-raises an exception of the block as a ``ComputationError`` saying ``where``."""
    try:
        yield
    except ComputationError:
        raise
    except Exception as error:
        text = " ".join(str(error).split())  # one line: the driver reads it back from text
        raise ComputationError.of(type(error).__name__, f"{where}: {type(error).__name__}: {text}") from error


def computation_error(error: BaseException) -> ComputationError:
    """The user's part of a failed Spark job's exception, as an error of the type the
    user's code (or Python, for a division by zero) raised."""
    log.debug("the step's Spark job failed", exc_info=error)
    text = str(error)
    message = _user_message(text, type(error).__name__)
    kind = next((k for k in _KIND.findall(message) if k != "ComputationError"), "")
    spark_kind = next((_SPARK_KINDS[k] for k in _SPARK_ERROR.findall(text) if k in _SPARK_KINDS), "")
    failure = ComputationError.of(kind or spark_kind, message)
    origin = _ORIGIN.search(message)  # "select at prog.py:12: ...": the line that built the operator
    note_origin(failure, origin.group(1) if origin else "")
    return failure


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
    first = next((line.strip() for line in text.splitlines() if line.strip()), error_type)
    return f"the step's Spark job failed: {first} (the whole error is logged at DEBUG level)"
