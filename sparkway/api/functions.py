"""Top-level expression functions: ``pw.if_else``, ``pw.apply``, ``pw.udf``..."""

from __future__ import annotations

from typing import Any, Callable

from sparkway.core.dtypes import dtype_of
from sparkway.core.expression import Apply, Cast, Coalesce, Expr, FillError, IfElse, MakeTuple, Require, Unwrap, wrap
from sparkway.api.udfs import udf
from sparkway.errors import warn_user


def if_else(condition: Any, then: Any, otherwise: Any) -> IfElse:
    """``then`` where ``condition`` holds, else ``otherwise``.

    >>> import sparkway as pw
    >>> type(pw.if_else(pw.this.a > 0, pw.this.a, 0)).__name__
    'IfElse'
    """
    return IfElse(wrap(condition), wrap(then), wrap(otherwise))


def coalesce(*args: Any) -> Coalesce:
    """The first argument that is not None.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a | b\\n1 | 2\\nNone | 3\\nNone | None")
    >>> pw.debug.compute_and_print(t.select(c=pw.coalesce(pw.this.a, pw.this.b, 0)), include_id=False)
    c
    0
    1
    3
    """
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
    """``value``, or None when any of ``args`` is None.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a | b\\n1 | 2\\n3 | None")
    >>> pw.debug.compute_and_print(t.select(s=pw.require(pw.this.a + pw.this.b, pw.this.b)), include_id=False)
    s
    None
    3
    """
    return Require(wrap(value), tuple(wrap(a) for a in args))


def unwrap(value: Any) -> Unwrap:
    """The value with its Optional removed; an error where it is None.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a\\n1\\nNone").filter(pw.this.a.is_not_none())
    >>> t.select(a=pw.unwrap(pw.this.a)).typehints()["a"]
    <class 'int'>
    """
    return Unwrap(wrap(value))


def cast(target: Any, value: Any) -> Cast:
    """The value converted to another type.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("n\\n1\\n2")
    >>> pw.debug.compute_and_print(t.select(half=pw.cast(float, pw.this.n) / 2), include_id=False)
    half
    0.5
    1.0
    """
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
    """A tuple of the values.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a | b\\n1 | x")
    >>> pw.debug.compute_and_print(t.select(pair=pw.make_tuple(pw.this.a, pw.this.b)), include_id=False)
    pair
    (1, 'x')
    """
    return MakeTuple(tuple(wrap(a) for a in args))


def apply(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Apply:
    """``fn`` called on each row's values (``pw.udf(fn)(*args)``); the result type is
    ``fn``'s return annotation.  As in Pathway, ``fn`` is taken as non-deterministic: each row's result is stored until
    the row is deleted (use ``@pw.udf(deterministic=True)`` to save that).

    >>> import sparkway as pw
    >>> def shout(s: str) -> str:
    ...     return s.upper()
    >>> type(pw.apply(shout, pw.this.word)).__name__
    'Apply'
    """
    return udf(fn)(*args, **_keywords(kwargs))


def apply_with_type(fn: Callable[..., Any], ret_type: Any, *args: Any, **kwargs: Any) -> Apply:
    """Like ``apply``, with the result type given.

    >>> import sparkway as pw
    >>> type(pw.apply_with_type(len, int, pw.this.word)).__name__
    'Apply'
    """
    return udf(fn, return_type=ret_type)(*args, **_keywords(kwargs))


def _keywords(kwargs: dict[str, Any]) -> dict[str, Any]:
    if kwargs:
        warn_user(
            "Passing keyword arguments to the function in pw.apply is deprecated. Use positional arguments instead.",
            DeprecationWarning,
        )
    return kwargs
