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

from sparkway.errors import ComputationError

log = logging.getLogger("sparkway")

_MARKED = re.compile(r"sparkway\.errors\.ComputationError: (.*)")
_RAISED = re.compile(r"\[USER_RAISED_EXCEPTION\] (.*?)(?: SQLSTATE: \w+)?$", re.MULTILINE)
# the last line of a Python traceback (not a JVM exception's)
_PYTHON = re.compile(r"^(?!org\.|java\.|scala\.|py4j\.)(\w[\w.]*(?:Error|Exception): .+)$", re.MULTILINE)


@contextmanager
def failures_named(where: str) -> Iterator[None]:
    """Re-raises an exception of the block as a ``ComputationError`` saying ``where``."""
    try:
        yield
    except ComputationError:
        raise
    except Exception as error:
        text = " ".join(str(error).split())  # one line: the driver reads it back from text
        raise ComputationError(f"{where}: {type(error).__name__}: {text}") from error


def computation_error(error: BaseException) -> ComputationError:
    """The user's part of a failed Spark job's exception."""
    log.debug("the step's Spark job failed", exc_info=error)
    text = str(error)
    marked = _MARKED.findall(text)
    if marked:
        return ComputationError(marked[-1].strip())
    raised = _RAISED.search(text)
    if raised:
        return ComputationError(raised.group(1).strip())
    python = _PYTHON.findall(text)
    if python:
        return ComputationError(f"the step's Spark job failed: {python[-1].strip()}")
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(error).__name__)
    return ComputationError(f"the step's Spark job failed: {first} (the whole error is logged at DEBUG level)")
