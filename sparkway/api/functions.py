"""Top-level expression functions: ``pw.if_else``, ``pw.apply``, ``pw.udf``..."""

from __future__ import annotations

import functools
from typing import Any, Callable

from sparkway.core.dtypes import dtype_of
from sparkway.core.expression import Apply, Cast, Coalesce, Expr, FillError, IfElse, MakeTuple, Require, Unwrap, wrap
from sparkway.errors import PlanTypeError


def if_else(condition: Any, then: Any, otherwise: Any) -> IfElse:
    """``then`` where ``condition`` holds, else ``otherwise``.

    >>> import sparkway as pw
    >>> type(pw.if_else(pw.this.a > 0, pw.this.a, 0)).__name__
    'IfElse'
    """
    return IfElse(wrap(condition), wrap(then), wrap(otherwise))


def coalesce(*args: Any) -> Coalesce:
    """The first argument that is not None."""
    return Coalesce(tuple(wrap(a) for a in args))


def fill_error(value: Any, replacement: Any) -> FillError:
    """``value``, or ``replacement`` where ``value`` is an Error value (which only a
    run with ``terminate_on_error=False`` makes: elsewhere an error stops the run).

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a | b\\n4 | 0\\n6 | 2")
    >>> t = t.select(q=pw.fill_error(pw.this.a // pw.this.b, -1))
    >>> pw.debug.compute_and_print(t, include_id=False, terminate_on_error=False)
    q
    -1
    3
    """
    return FillError(wrap(value), wrap(replacement))


def require(value: Any, *args: Any) -> Require:
    """``value``, or None when any of ``args`` is None."""
    return Require(wrap(value), tuple(wrap(a) for a in args))


def unwrap(value: Any) -> Unwrap:
    """The value with its Optional removed; an error where it is None."""
    return Unwrap(wrap(value))


def cast(target: Any, value: Any) -> Cast:
    """The value converted to another type: ``pw.cast(float, pw.this.n)``."""
    return Cast(dtype_of(target), wrap(value))


def declare_type(target: Any, value: Any) -> Cast:
    """The value, said to be of type ``target`` (e.g. an Optional column known to have
    no None): types only, the value stays as it is where it fits the type.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a\\n1\\nNone").filter(pw.this.a.is_not_none())
    >>> t.select(a=pw.declare_type(int, pw.this.a)).typehints()["a"]
    <class 'int'>
    """
    return Cast(dtype_of(target), wrap(value), declared=True)


def make_tuple(*args: Any) -> MakeTuple:
    """A tuple of the values."""
    return MakeTuple(tuple(wrap(a) for a in args))


def apply(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Apply:
    """``fn`` called on each row's values; the result type is ``fn``'s return annotation.
    As in Pathway, ``fn`` is taken as non-deterministic: each row's result is stored until
    the row is deleted (use ``@pw.udf(deterministic=True)`` to save that).

    >>> import sparkway as pw
    >>> def shout(s: str) -> str:
    ...     return s.upper()
    >>> type(pw.apply(shout, pw.this.word)).__name__
    'Apply'
    """
    return Apply(_bind_kwargs(fn, kwargs), tuple(wrap(a) for a in args), None, deterministic=False)


def apply_with_type(fn: Callable[..., Any], ret_type: Any, *args: Any, **kwargs: Any) -> Apply:
    """Like ``apply``, with the result type given."""
    return Apply(_bind_kwargs(fn, kwargs), tuple(wrap(a) for a in args), dtype_of(ret_type), deterministic=False)


def _bind_kwargs(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Callable[..., Any]:
    if not kwargs:
        return fn
    if any(isinstance(v, Expr) for v in kwargs.values()):
        raise PlanTypeError("pass columns to pw.apply positionally")
    return functools.partial(fn, **kwargs)
