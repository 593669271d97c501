"""The errors sparkway raises for problems a user can fix, under one base class.

Each names what is at fault (a column, a file and line, an operator and where the
program built it) and says what to do.  They also subclass the built-in exception
Python programs expect for that kind of problem (``ValueError``, ``TypeError``,
``RuntimeError``), so ``except ValueError`` keeps working.

>>> import sparkway as pw
>>> issubclass(pw.errors.PlanError, pw.errors.SparkwayError)
True
"""

from __future__ import annotations

import builtins
import functools
import inspect
import linecache
import logging
import os
import sys
import warnings
from typing import Any, Callable

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


class SparkwayError(Exception):
    """Base of every error sparkway raises on purpose."""


class PlanError(SparkwayError, ValueError):
    """The program cannot be built: an unknown column, a bad argument, a misuse of an operator."""


class UnknownColumnError(PlanError, KeyError):
    """A column the table (or either side of a join) does not have, or has twice."""

    __str__ = Exception.__str__  # KeyError's would quote the message


class PlanAssertionError(PlanError, AssertionError):
    """A program Pathway refuses with an ``AssertionError`` (a UDF called on no column)."""


class PlanTypeError(PlanError, TypeError):
    """An expression combines values of types that do not go together."""


class SchemaError(SparkwayError, ValueError):
    """Input cannot give the columns the schema asks for (a CSV header lacks a column...)."""


class InputDataError(SparkwayError, ValueError):
    """A value in the input does not fit its column."""


class PersistenceError(SparkwayError, RuntimeError):
    """The persistence storage cannot be used as it is (in use, written by another program...)."""


class ConnectorError(SparkwayError, RuntimeError):
    """An external system refused or lost data (PostgreSQL, Kafka...)."""


class SparkError(SparkwayError, RuntimeError):
    """Spark itself failed, not the program: it could not start (a setting it refuses,
    too little memory), or its JVM ended during the run.  What a persistent run
    committed stays; started again, it continues from there."""


class ComputationError(SparkwayError, RuntimeError):
    """Computing a step failed: a user function raised, or a value broke an operator.

    The message names the operator and the line of the program that built it; the
    original exception's type and message follow.  When that type is one of Python's
    built-in exceptions, the error is also an instance of it (as in Pathway, where the
    user function's own exception comes out of ``pw.run``): ``except ZeroDivisionError``
    catches a division by zero in a step.

    >>> import sparkway as pw
    >>> error = pw.errors.ComputationError.of("ZeroDivisionError", "select at p.py:3: division by zero")
    >>> isinstance(error, ZeroDivisionError), isinstance(error, pw.errors.ComputationError)
    (True, True)
    """

    @staticmethod
    def of(kind: str, message: str, raised: type | None = None) -> "ComputationError":
        """A ``ComputationError`` that is also the exception class ``raised``, or the
        built-in exception named ``kind``."""
        return _computation_error_class(raised or getattr(builtins, kind, None))(message)


_computation_errors: dict[type, type[ComputationError]] = {}


def _computation_error_class(found: Any) -> type[ComputationError]:
    if not isinstance(found, type) or not issubclass(found, Exception) or issubclass(found, ComputationError):
        return ComputationError
    if found not in _computation_errors:
        try:
            # Exception's __init__ (the class's may want other arguments) and __str__
            # (KeyError's would quote the whole message)
            methods = {"__module__": __name__, "__init__": Exception.__init__, "__str__": Exception.__str__}
            cls = type("ComputationError", (ComputationError, found), methods)
        except TypeError:  # a class whose instances are laid out differently (OSError...)
            cls = ComputationError
        _computation_errors[found] = cls
    return _computation_errors[found]


def note_origin(error: BaseException, origin: str) -> None:
    """Adds to ``error`` the line of the program at fault (``origin``, ``file:line``), as
    a note Python prints under the traceback; once, the innermost origin wins."""
    if not origin or getattr(error, "_pathway_trace_note", None) is not None:
        return
    filename, _, line = origin.rpartition(":")
    text = linecache.getline(filename, int(line)).strip() if line.isdigit() else ""
    note = f"Occurred here:\n    Line: {text}\n    File: {origin}"
    error._pathway_trace_note = note  # type: ignore[attr-defined]  # where Pathway's errors keep it
    error.add_note(note)


def traced(api: Any) -> Any:
    """Makes a public function, or every public method of a class, note the user's line
    on the errors it raises (a call with wrong arguments too).

    >>> @traced
    ... class Thing:
    ...     def fail(self) -> None:
    ...         raise ValueError("bad")
    >>> try:
    ...     Thing().fail()
    ... except ValueError as error:
    ...     print(error.__notes__[0].splitlines()[0])
    Occurred here:
    """
    if inspect.isfunction(api):
        return _noting_origin(api)
    for name, member in list(vars(api).items()):
        if name.startswith("_") and name not in ("__getattr__", "__getitem__", "__call__"):
            continue
        if inspect.isfunction(member):
            setattr(api, name, _noting_origin(member))
        elif isinstance(member, (staticmethod, classmethod)):
            setattr(api, name, type(member)(_noting_origin(member.__func__)))
    return api


def _noting_origin(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except Exception as error:
            note_origin(error, user_frame())
            if isinstance(error, SparkwayError) and not _is_sparkways(sys._getframe(1)) and not _debugging():
                # the message and the note name the user's column, expression or file;
                # sparkway's own frames (22 lines for a misspelt column) only at DEBUG level
                raise error.with_traceback(None)
            raise
    return call


def _debugging() -> bool:
    return logging.getLogger("sparkway").isEnabledFor(logging.DEBUG)


def user_frame() -> str:
    """``file:line`` of the innermost caller outside sparkway: where the user's program
    asked for what is being built (shown in errors about it); "" when there is none."""
    frame = _user_frame()
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else ""


def user_trace() -> str:
    """Where the user's program asked for what is being built, as Pathway writes it in
    the ``trace`` column of the error log; "" when there is no such place.

    >>> print(user_trace().splitlines()[0])
    Occurred here:
    """
    frame = _user_frame()
    if frame is None:
        return ""
    filename, line = frame.f_code.co_filename, frame.f_lineno
    text = linecache.getline(filename, line).strip()
    return f"Occurred here:\n \tLine: {text}\n \tFile: {filename}:{line}\n \tFunction: {frame.f_code.co_name}"


def _user_frame() -> Any:
    frame = sys._getframe(2)
    while frame is not None and _is_sparkways(frame):
        frame = frame.f_back
    return frame


def _is_sparkways(frame: Any) -> bool:
    """Whether the frame runs sparkway's code (or code Python generates for it, such as a
    dataclass's ``__init__``, named "<string>"), not the user's."""
    filename = frame.f_code.co_filename
    return filename.startswith(("<frozen", "<string>")) or os.path.abspath(filename).startswith(_PACKAGE)


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """A warning (``UserWarning`` unless said) shown at the line of the user's program that caused it."""
    frame, level = sys._getframe(1), 2
    while frame is not None and _is_sparkways(frame):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level if frame is not None else 2)
