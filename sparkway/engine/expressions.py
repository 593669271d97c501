"""Compiles expression nodes to Spark columns: one function per node kind.

Python functions (``pw.apply``, ``pw.udf``) and JSON access become Arrow-batched Spark
UDFs; everything else is native Spark SQL.

A value that breaks an operation (a division by zero, a user function raising...) fails
the step; in a run with ``terminate_on_error=False`` it becomes an Error value instead:
the scope then has ``Checks``, which give every compiled expression a boolean Spark
column saying where its value is an Error (its value column is null there), and collect
the messages of the new errors for the error log.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import pickle
import re
import contextlib
import struct
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from functools import reduce
from typing import Any, Callable, Iterator
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import SparkContext
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkway.core import dtypes as dt
from sparkway.core import durations, spark_releases
from sparkway.core.changes import ERRORS, ID
from sparkway.core.dtypes import DType
from sparkway.core.expression import (
    Apply, BinOp, Call, Cast, Coalesce, ColumnRef, Const, Expr, FillError, GetItem, IfElse, IsNone,
    MakeTuple, PointerFrom, Require, RowFailure, UnOp, Unwrap, children,
)
from sparkway.core.type_rules import infer, never_none, never_none_in_branches, strptime_zoned, tuple_position
from sparkway.errors import ComputationError, PlanTypeError
from sparkway.core.text import text_of
from sparkway.engine.failures import failures_named
from sparkway.persistence import udf_cache


@dataclass
class Checks:
    """Error values, in a run with ``terminate_on_error=False``.

    ``inputs`` names, per input, the columns that may hold an Error (the row's ``ERRORS``
    says where one does).  Compiling an expression records its Error flag in
    ``error_of``: the flags of the values it reads (for ``if_else`` and ``fill_error``,
    of the ones it uses), or'ed with its own failures; ``logged`` gathers (where,
    message) of the new errors.
    """

    inputs: list[set[str]]
    error_of: dict[int, Column | None] = field(default_factory=dict)
    logged: list[tuple[Column, Column]] = field(default_factory=list)
    calls_python: bool = False  # an expression runs Python (worth caching its results)
    _failures: list[list[tuple[Column, Column]]] = field(default_factory=list)
    _guards: list[Column] = field(default_factory=list)

    def column_flag(self, index: int, name: str) -> Column | None:
        """Where column ``name`` of input ``index`` holds an Error (None for ``id``)."""
        return error_flag(name) if name in self.inputs[index] else None

    def flag(self, expr: Expr) -> Column | None:
        """Where the (already compiled) ``expr`` is an Error; None: nowhere."""
        return self.error_of.get(id(expr))

    def fail(self, failed: Column, message: Column) -> None:
        """The expression being compiled is an Error where ``failed`` holds (in a branch
        that is taken), a new one with ``message``."""
        self._failures[-1].append((reduce(lambda a, b: a & b, self._guards, failed), message))

    @contextmanager
    def guarded(self, taken: Column) -> Iterator[None]:
        """Failures of the expressions compiled in the block count only where ``taken``."""
        self._guards.append(F.coalesce(taken, F.lit(False)))
        try:
            yield
        finally:
            self._guards.pop()

    def compile(self, expr: Expr, scope: "Scope", compiler: Callable[[Any, "Scope"], Column]) -> Column:
        self._failures.append([])
        value = compiler(expr, scope)
        failures = self._failures.pop()
        if id(expr) in self.error_of:  # set by the compilers of lazy kinds
            inherited = self.error_of[id(expr)]
        else:
            inherited = _any([self.flag(c) for c in children(expr)])
        for failed, message in failures:  # a new error only where the operands are fine
            self.logged.append((failed if inherited is None else failed & ~inherited, message))
        self.error_of[id(expr)] = _any([inherited, *(failed for failed, _ in failures)])
        return value


def _any(flags: list[Column | None]) -> Column | None:
    """The or of the flags (None: never an Error)."""
    real = [f for f in flags if f is not None]
    return reduce(lambda a, b: a | b, real) if real else None


def _holds(flag: Column | None) -> Column:
    return flag if flag is not None else F.lit(False)


@dataclass
class Scope:
    """What a node's expressions can read: per input, column name → Spark column; how
    errors raised while computing them name the node (``Node.label``); and, in a run
    that keeps Error values, their ``Checks``."""

    columns: list[dict[str, Column]]
    types: list[dict[str, DType]]
    where: str = ""
    checks: Checks | None = None
    #: the time of the step (milliseconds since the epoch, or a debug table's ``__time__``)
    time: int = 0
    #: set when an expression holds ``time``: its Column is good for this step only
    reads_time: bool = False
    #: where user functions keep their disk caches (``pw.udfs.DiskCache``) in this run
    udf_cache_root: str | None = None
    #: where user functions are not called (the rows of a deletion whose results are
    #: stored: the deletion replays them); None: everywhere
    not_called: Column | None = None
    #: where Python code compiled now may run: Spark evaluates a Python UDF for every row,
    #: even in a branch not taken, so a function under ``require`` or ``if_else`` is told
    #: which rows to leave alone (Pathway does not call it there)
    _python_where: list[Column] = field(default_factory=list)

    @contextmanager
    def never_none(self, exprs: list[Expr]) -> Iterator[None]:
        """Types as the type rules see them where these columns are not None
        (``type_rules.never_none``): in ``require``'s value, an ``if_else`` branch."""
        before = self.types
        self.types = never_none(exprs, before)
        try:
            yield
        finally:
            self.types = before

    @contextmanager
    def python_only_where(self, taken: Column) -> Iterator[None]:
        """Python functions compiled in the block are called only where ``taken`` holds."""
        self._python_where.append(F.coalesce(taken, F.lit(False)))
        try:
            yield
        finally:
            self._python_where.pop()

    def python_skips(self, skip: Column | None) -> Column | None:
        """Where a Python function compiled now must not be called: ``skip`` (its arguments
        are Errors), or outside the branches that hold it."""
        return _any([skip, *(~taken for taken in self._python_where)])

    @staticmethod
    def of(*inputs: dict[str, DType], where: str = "", errors: bool = False, time: int = 0) -> "Scope":
        """The scope of a node reading ``inputs``; ``errors``: the run keeps Error values
        (the frames have ``ERRORS``)."""
        cols = [{name: col(name) for name in types} | {"id": col(ID)} for types in inputs]
        checks = Checks([set(types) for types in inputs]) if errors else None
        return Scope(cols, list(inputs), where, checks, time)

    def failing(self, failed: Column, kind: str, message: Column | str, value: Column) -> Column:
        """``value``, except where ``failed`` holds: there the step fails with ``kind``
        (a Python exception's name) and ``message``, or, keeping Error values, the
        value is an Error."""
        message = F.lit(message) if isinstance(message, str) else message
        failed = F.coalesce(failed, F.lit(False))
        if self.checks is None:
            return F.when(failed, F.raise_error(F.concat(F.lit(f"{self.where}: {kind}: "), message))).otherwise(value)
        self.checks.fail(failed, message)
        return F.when(failed, F.lit(None)).otherwise(value)


def error_flag(name: str) -> Column:
    """Where the column ``name`` of a frame holds an Error (one SQL expression: columns are
    built through py4j, and a step builds many)."""
    quoted = name.replace("\\", "\\\\").replace("'", "\\'")
    return F.expr(f"coalesce(array_contains({ERRORS}, '{quoted}'), false)")


def has_errors() -> Column:
    """Where a row holds an Error in any column (``ERRORS`` is null or empty where not)."""
    return F.expr(f"coalesce(size({ERRORS}) > 0, false)")


def errors_column(flags: dict[str, Column | None]) -> Column:
    """``ERRORS`` of a row whose columns are Errors where their ``flags`` hold."""
    names = [F.when(flag, F.lit(name)) for name, flag in flags.items() if flag is not None]
    return F.array_compact(F.array(*names)) if names else F.lit(None).cast("array<string>")


def messages_column(logged: list[tuple[Column, Column]]) -> Column:
    """The messages of the errors a row logs (an array, null or empty when none)."""
    if not logged:
        return F.lit(None).cast("array<string>")
    return F.array_compact(F.array(*[F.when(where, message) for where, message in logged]))


def col(name: str) -> Column:
    """Column ``name``, whatever characters the name holds.  Made once per name and
    Spark context: a Column is immutable, and making one costs two py4j calls (a step
    of a streaming program makes a hundred)."""
    context = SparkContext._active_spark_context
    if context is None:  # a Spark Connect client: its Columns are plain Python objects
        return F.col(f"`{name}`")
    made = _COLUMNS.setdefault(context, {})
    if name not in made:
        made[name] = F.col(f"`{name}`")
    return made[name]


_COLUMNS: "weakref.WeakKeyDictionary[SparkContext, dict[str, Column]]" = weakref.WeakKeyDictionary()


def pointer_of(columns: list[Column]) -> Column:
    """The row id made from these values: the one function for every id that comes from
    values (``pointer_from``, ``with_id_from``, groupby results, sources' primary keys,
    debug tables' row labels), so that ``t.pointer_from(key) == t.id`` wherever ``t``'s
    ids come from ``key``.  Values must have the same Spark types to give the same id."""
    return F.xxhash64(*columns) if columns else F.xxhash64(F.lit(""))


# -- the same ids in Python (a row transformer's ``self.pointer_from``) ---------------------------

_P1, _P2, _P3, _P4, _P5 = (
    0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5,
)
_MASK = (1 << 64) - 1
_SEED = 42  # Spark's xxhash64 seed


def python_pointer_of(values: tuple) -> int:
    """The id ``pointer_of`` gives in Spark to these values (int, str, bool, float or
    pointer; None is skipped, as Spark skips nulls), computed in Python: Spark's
    ``xxhash64``, each value hashed with the previous hash as its seed.

    >>> python_pointer_of((1, "a")) == python_pointer_of((1, "a")) != python_pointer_of(("a", 1))
    True
    """
    hashed = _SEED
    for value in values or ("",):  # as ``pointer_of`` of no columns
        if value is None:
            continue
        if isinstance(value, bool):
            hashed = _xxh64_int(int(value), hashed)
        elif isinstance(value, int):
            hashed = _xxh64_long(value, hashed)
        elif isinstance(value, float):
            bits = struct.unpack("<q", struct.pack("<d", 0.0 if value == 0.0 else value))[0]
            hashed = _xxh64_long(bits, hashed)
        elif isinstance(value, str):
            hashed = _xxh64_bytes(value.encode(), hashed)
        else:
            raise TypeError(f"pointer_from takes int, str, bool, float and pointer values here, not {type(value).__name__}")
    return hashed - (1 << 64) if hashed >= 1 << 63 else hashed


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def _mix(h: int) -> int:
    h ^= h >> 33
    h = (h * _P2) & _MASK
    h ^= h >> 29
    h = (h * _P3) & _MASK
    return h ^ (h >> 32)


def _lane(h: int, lane: int) -> int:
    return (_rotl((h + lane * _P2) & _MASK, 31) * _P1) & _MASK


def _eight(h: int, word: int) -> int:
    h ^= _lane(0, word)
    return (_rotl(h, 27) * _P1 + _P4) & _MASK


def _four(h: int, word: int) -> int:
    h ^= (word * _P1) & _MASK
    return (_rotl(h, 23) * _P2 + _P3) & _MASK


def _xxh64_long(value: int, seed: int) -> int:
    return _mix(_eight((seed + _P5 + 8) & _MASK, value & _MASK))


def _xxh64_int(value: int, seed: int) -> int:
    return _mix(_four((seed + _P5 + 4) & _MASK, value & 0xFFFFFFFF))


def _xxh64_bytes(data: bytes, seed: int) -> int:
    """XXH64 of bytes, as Spark hashes a string's UTF-8 bytes."""
    size, offset = len(data), 0
    if size >= 32:
        v = [(seed + _P1 + _P2) & _MASK, (seed + _P2) & _MASK, seed & _MASK, (seed - _P1) & _MASK]
        while offset <= size - 32:
            for i in range(4):
                v[i] = _lane(v[i], int.from_bytes(data[offset + 8 * i:offset + 8 * i + 8], "little"))
            offset += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _MASK
        for lane in v:
            h = ((h ^ _lane(0, lane)) * _P1 + _P4) & _MASK
    else:
        h = (seed + _P5) & _MASK
    h = (h + size) & _MASK
    while offset <= size - 8:
        h = _eight(h, int.from_bytes(data[offset:offset + 8], "little"))
        offset += 8
    if offset <= size - 4:
        h = _four(h, int.from_bytes(data[offset:offset + 4], "little"))
        offset += 4
    while offset < size:
        h ^= (data[offset] * _P5) & _MASK
        h = (_rotl(h, 11) * _P1) & _MASK
        offset += 1
    return _mix(h)


def compile_expr(expr: Expr, scope: Scope) -> Column:
    """The Spark column computing ``expr`` (with ``scope.checks``, also its Error flag)."""
    compiler = _COMPILERS[type(expr)]
    if scope.checks is None:
        return compiler(expr, scope)
    return scope.checks.compile(expr, scope, compiler)


def _type(expr: Expr, scope: Scope) -> DType:
    return infer(expr, scope.types)


def _column_ref(e: ColumnRef, scope: Scope) -> Column:
    index = getattr(e.table, "index", 0)
    if scope.checks is not None:
        scope.checks.error_of[id(e)] = scope.checks.column_flag(index, e.name)
    return scope.columns[index][e.name]


def _const(e: Const, scope: Scope) -> Column:
    kind = dt.dtype_of_value(e.value)
    if e.value is None:
        return F.lit(None)
    if kind == dt.JSON:
        return F.lit(dt.Json.dumps(e.value))
    if kind.is_array:
        return array_literal(e.value)
    if kind.name in ("tuple", "list") or kind == dt.ANY:
        return F.lit(e.value)
    if kind in _TIMES:
        return F.lit(dt.from_python(kind)(e.value)).cast("long")
    return F.lit(e.value).cast(kind.spark_type())


def array_literal(value: Any) -> Column:
    """A numpy array as a Spark literal of the Array type (shape and flat values)."""
    stored = dt.array_from_python(value)
    fields = [F.lit(stored[f.name]).cast(f.dataType).alias(f.name) for f in dt.ANY_ARRAY.spark_type().fields]
    return F.struct(*fields)


def _python_mod(a: Column, b: Column) -> Column:
    """``a % b`` as Python computes it: Java's remainder (exact, with the dividend's sign),
    moved by one divisor when the signs differ, so that the result has the divisor's sign."""
    remainder = a % b
    return F.when((remainder != 0) & ((remainder < 0) != (b < 0)), remainder + b).otherwise(remainder)


def _floor_div(a: Column, b: Column) -> Column:
    # exact: a - (a mod b) is a multiple of b, so truncating division is floor division
    return F.call_function("div", a - _python_mod(a, b), b)


_TIMES = (dt.DATE_TIME_NAIVE, dt.DATE_TIME_UTC, dt.DURATION)
_SECOND = 10**9  # nanoseconds
_INT64 = Decimal(2**64)


def _wrapping(op: str, a: Column, b: Column) -> Column:
    """``a + b``, ``a - b`` or ``a * b`` of longs as Pathway computes date-times and
    durations: 64-bit arithmetic that wraps around on overflow.  Spark's exact
    arithmetic gives null there (``try_add``...); only then is the result computed in
    decimals and cut to its low 64 bits."""
    exact = {"+": F.try_add, "-": F.try_subtract, "*": F.try_multiply}[op](a, b)
    wide = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y}[op](
        a.cast("decimal(38,0)"), b.cast("decimal(38,0)"))
    low_bits = F.pmod(wide + F.lit(_INT64 / 2), F.lit(_INT64)) - F.lit(_INT64 / 2)
    return F.when(exact.isNull() & a.isNotNull() & b.isNotNull(), low_bits.cast("long")).otherwise(exact)


def _time_arithmetic(op: str, a: Column, b: Column, ta: DType, tb: DType, scope: Scope) -> Column:
    """Date-times and durations (nanoseconds in longs): ``+``/``-`` of date-times and
    durations, a duration times a number, and its divisions, with Python's floor
    semantics for ``//`` and ``%``; a duration divided or multiplied by a float is cut
    toward zero to the nanosecond, as pandas computes it."""
    if op in ("+", "-"):
        return _wrapping(op, a, b)
    if op == "*":
        duration, factor, factor_type = (a, b, tb) if ta == dt.DURATION else (b, a, ta)
        if factor_type == dt.FLOAT:
            return (duration.cast("double") * factor).cast("long")
        return _wrapping("*", duration, factor)
    b = _nonzero(b, scope)
    if op == "/":
        quotient = a.cast("double") / b.cast("double")
        return quotient if tb == dt.DURATION else quotient.cast("long")
    if op == "%":
        return _python_mod(a, b)
    if tb == dt.FLOAT:  # a duration // a float
        return F.floor(a.cast("double") / b).cast("long")
    return _floor_div(a, b)


def _floor_by(count: Column, unit: int) -> Column:
    """Whole ``unit``s (a positive constant) in ``count``, rounded down, exactly."""
    return F.call_function("div", count - F.pmod(count, F.lit(unit)), F.lit(unit))


def _instant(count: Column) -> Column:
    """A Spark timestamp (microseconds) of a date-time in nanoseconds, for Spark's
    functions of dates and clocks: the session's zone is UTC, so its fields are the
    date-time's (a naive one's wall clock, a UTC one's UTC clock)."""
    return F.timestamp_micros(_floor_by(count, 1000))


def _nonzero(divisor: Column, scope: Scope) -> Column:
    """The divisor, failing with Python's error where it is zero (Spark's own error
    would not say which operator of the program divided)."""
    return scope.failing(divisor == 0, "ZeroDivisionError", "division by zero", divisor)


@functools.cache
def _int_power() -> Callable[[Column, Column], Column]:
    """``a ** b`` of ints as Pathway computes it: exact, wrapping around on overflow like
    64-bit arithmetic (Spark's pow goes through doubles); a negative exponent gives the
    integer part of ``1 / a ** -b``."""

    def power(base: pa.Array, exponent: pa.Array) -> pa.Array:
        missing = pc.or_(pc.is_null(base), pc.is_null(exponent))
        a = pc.fill_null(base, 0).to_numpy(zero_copy_only=False)
        b = pc.fill_null(exponent, 0).to_numpy(zero_copy_only=False)
        with np.errstate(over="ignore"):
            positive = np.power(a, np.maximum(b, 0))
        inverse = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
        return pa.array(np.where(b < 0, inverse, positive), pa.int64(), mask=missing.to_numpy(zero_copy_only=False))

    return spark_releases.arrow_udf(power, "long", [pa.int64(), pa.int64()])


def _binop(e: BinOp, scope: Scope) -> Column:
    a = compile_expr(e.left, scope)
    # Python functions on the right of a boolean `&` / `|` run only where the left side
    # does not decide the result
    needed = {"&": F.coalesce(a, F.lit(True)), "|": ~F.coalesce(a, F.lit(False))}.get(e.op)
    with scope.python_only_where(needed) if needed is not None else contextlib.nullcontext():
        b = compile_expr(e.right, scope)
    ta, tb = _type(e.left, scope).with_optional(False), _type(e.right, scope).with_optional(False)
    result = _type(e, scope)
    op = e.op
    if op == "@":
        return _matmul_udf(scope.where)(a, b)
    if op == "==":
        return a.eqNullSafe(b)
    if op == "!=":
        return ~a.eqNullSafe(b)
    if op == "+" and ta == dt.STR:
        return F.concat(a, b)
    if op == "*" and dt.STR in (ta, tb):
        return F.call_function("repeat", a, b) if ta == dt.STR else F.call_function("repeat", b, a)
    if op in ("+", "-", "*", "/", "//", "%") and (ta in _TIMES or tb in _TIMES):
        return _time_arithmetic(op, a, b, ta, tb, scope)
    if op in ("/", "//", "%"):
        b = _nonzero(b, scope)
    if op == "/":
        return a.cast("double") / b.cast("double")
    if op == "//":
        if ta == dt.INT and tb == dt.INT:
            return _floor_div(a, b)
        return F.floor(a / b).cast(result.spark_type())
    if op == "%":
        return _python_mod(a, b)
    if op == "**":
        if result.with_optional(False) == dt.INT:
            return _int_power()(a, b)
        return F.pow(a, b)
    if op in ("<<", ">>"):  # Java's shifts of a long take the count modulo 64, as Pathway's do
        return F.call_function("shiftleft" if op == "<<" else "shiftright", a, b.cast("int"))
    if op in ("&", "|", "^") and ta == dt.BOOL:
        return {"&": lambda: a & b, "|": lambda: a | b, "^": lambda: (a & ~b) | (~a & b)}[op]()
    if op in ("&", "|", "^"):
        return {"&": a.bitwiseAND, "|": a.bitwiseOR, "^": a.bitwiseXOR}[op](b)
    simple: dict[str, Callable[[Column, Column], Column]] = {
        "+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
        "<": lambda x, y: x < y, "<=": lambda x, y: x <= y,
        ">": lambda x, y: x > y, ">=": lambda x, y: x >= y,
    }
    out = simple[op](a, b)
    if op in ("+", "-", "*") and result.with_optional(False) in (dt.INT, dt.FLOAT):
        out = out.cast(result.spark_type())
    return out


def _matmul_udf(where: str):
    """``a @ b`` on stored arrays, with numpy's rules (and its ValueError for shapes that
    do not fit); as in Pathway, int and float arrays do not multiply each other."""
    def multiply(a: Any, b: Any) -> Any:
        if a is None or b is None:
            return None
        left, right = dt.array_to_python(a), dt.array_to_python(b)
        with failures_named(where):
            if left.dtype != right.dtype:
                raise ValueError(
                    f"can't multiply an array of {left.dtype} by an array of {right.dtype}: "
                    "convert one of them first (.astype(float) in a pw.udf)"
                )
            return dt.array_from_python(np.matmul(left, right))

    return spark_releases.python_udf(multiply, dt.ANY_ARRAY.spark_type())


def _unop(e: UnOp, scope: Scope) -> Column:
    a = compile_expr(e.arg, scope)
    return {"neg": lambda: -a, "not": lambda: ~a, "abs": lambda: F.abs(a)}[e.op]()


def _if_else(e: IfElse, scope: Scope) -> Column:
    target = _type(e, scope)
    cond = compile_expr(e.cond, scope)
    taken = F.coalesce(cond, F.lit(False))
    in_then, in_otherwise = never_none_in_branches(e.cond)
    if scope.checks is None:
        with scope.python_only_where(taken), scope.never_none(in_then):
            then = compile_expr(e.then, scope)
        with scope.python_only_where(~taken), scope.never_none(in_otherwise):
            otherwise = compile_expr(e.otherwise, scope)
    else:  # only the branch taken fails, and is the result's Error
        checks = scope.checks
        fine = ~_holds(checks.flag(e.cond))
        with checks.guarded(taken & fine), scope.python_only_where(taken & fine), scope.never_none(in_then):
            then = compile_expr(e.then, scope)
        with checks.guarded(~taken & fine), scope.python_only_where(~taken & fine), scope.never_none(in_otherwise):
            otherwise = compile_expr(e.otherwise, scope)
        branches = (checks.flag(e.then), checks.flag(e.otherwise))
        chosen = None if branches[0] is None and branches[1] is None else F.when(taken, _holds(branches[0])).otherwise(_holds(branches[1]))
        checks.error_of[id(e)] = _any([checks.flag(e.cond), chosen])
    return F.when(cond, then.cast(target.spark_type())).otherwise(otherwise.cast(target.spark_type()))


def _fill_error(e: FillError, scope: Scope) -> Column:
    target = _type(e, scope).spark_type()
    value = compile_expr(e.arg, scope).cast(target)
    if scope.checks is None:  # no Error values: nothing to replace
        return value
    checks = scope.checks
    failed = checks.flag(e.arg)
    if failed is None:
        checks.error_of[id(e)] = None
        return value
    with checks.guarded(failed):
        replacement = compile_expr(e.replacement, scope).cast(target)
    replaced = checks.flag(e.replacement)
    checks.error_of[id(e)] = None if replaced is None else failed & replaced
    return F.when(failed, replacement).otherwise(value)


def _coalesce(e: Coalesce, scope: Scope) -> Column:
    target = _type(e, scope).spark_type()
    return F.coalesce(*(compile_expr(a, scope).cast(target) for a in e.args))


def _require(e: Require, scope: Scope) -> Column:
    missing = F.lit(False)
    for a in e.args:
        missing = missing | compile_expr(a, scope).isNull()
    with scope.python_only_where(~missing), scope.never_none(list(e.args)):
        value = compile_expr(e.value, scope)
    return F.when(missing, F.lit(None)).otherwise(value)


def _unwrap(e: Unwrap, scope: Scope) -> Column:
    value = compile_expr(e.arg, scope)
    if scope.checks is not None:  # Pathway's message in the error log
        message = (
            "value error: cannot unwrap a None value: pw.unwrap() requires a non-None value. Use pw.coalesce() "
            "to supply a default, or filter out the rows with None before unwrapping."
        )
        return scope.failing(value.isNull(), "ValueError", message, value)
    message = ("cannot unwrap a None value: use pw.coalesce() to supply a default, "
               "or filter out the rows with None first")
    return scope.failing(value.isNull(), "ValueError", message, value)


def _cast(e: Cast, scope: Scope) -> Column:
    source = _type(e.arg, scope).with_optional(False)
    value = compile_expr(e.arg, scope)
    target = e.dtype.with_optional(False)
    if source == dt.FLOAT and target == dt.INT:
        return value.cast("long")  # truncates toward zero, as Python's int()
    if target == dt.STR and source == dt.BOOL:
        return F.when(value, F.lit("True")).otherwise(F.lit("False"))
    if target == dt.STR and source == dt.FLOAT:
        return float_text(value)
    if target == dt.BOOL and source == dt.STR:  # Python's truth of a string: not empty
        return F.length(value) > 0
    return value.cast(e.dtype.spark_type())


def _is_none(e: IsNone, scope: Scope) -> Column:
    value = compile_expr(e.arg, scope)
    return value.isNotNull() if e.negate else value.isNull()


def _make_tuple(e: MakeTuple, scope: Scope) -> Column:
    kind = _type(e, scope)
    fields = [compile_expr(a, scope).cast(t.spark_type()).alias(f"_{i}") for i, (a, t) in enumerate(zip(e.args, kind.items))]
    return F.struct(*fields)


def _get_item(e: GetItem, scope: Scope) -> Column:
    container = _type(e.arg, scope).with_optional(False)
    value = compile_expr(e.arg, scope)
    if container.name == "tuple" and isinstance(e.key, Const):
        position = tuple_position(container, e.key)
        if position is not None:
            return value.getField(f"_{position}")
        return compile_expr(e.default, scope) if e.default is not None else F.lit(None)
    if container.name == "tuple":  # a computed index: its items share a type (else Any: refused)
        if len(set(container.items)) != 1:
            raise PlanTypeError(f"{scope.where}: a tuple of items of different types is read with a computed "
                                "index: index it with a constant, or make it a list")
        value = F.array(*[value.getField(f"_{k}") for k in range(len(container.items))])
    if container.name in ("list", "tuple"):
        index = compile_expr(e.key, scope).cast("int")
        item = F.try_element_at(value, F.when(index >= 0, index + 1).otherwise(index))
        if e.default is not None:
            item = F.coalesce(item, compile_expr(e.default, scope))
        return item
    if container.is_array:
        item_type = _type(e, scope)
        default = compile_expr(e.default, scope) if e.default is not None else F.lit(None)
        return _array_item_udf(item_type, e.checked, scope.where)(
            value, compile_expr(e.key, scope).cast("long"), default.cast(item_type.spark_type())
        )
    key = compile_expr(e.key, scope)
    if container == dt.ANY:  # Python objects (a UDF's untyped result): Python's indexing
        default_expr = e.default if e.default is not None else Const(None)
        get = _object_item_udf(_type(e.key, scope), _type(default_expr, scope), e.checked, scope.where)
        return get(value, key, compile_expr(default_expr, scope))
    if e.checked:  # json[key] is JSON null where the key is missing
        default = F.lit("null")
    elif e.default is not None:
        default = _as_json_text(e.default, scope)
    else:
        default = F.lit(None).cast("string")
    by_position = _type(e.key, scope).with_optional(False) == dt.INT
    return python_column(scope, _json_get(by_position), "string", [value, key.cast("string"), default])


def _object_item_udf(key_type: DType, default_type: DType, checked: bool, where: str):
    """``value[key]`` of Python objects as Python gives it (an IndexError or KeyError
    stops the run); ``.get(key, default)`` gives ``default`` where the item is missing."""
    stored_object, key_of, default_of = dt.to_python(dt.ANY), dt.to_python(key_type), dt.to_python(default_type)
    as_stored = dt.from_python(dt.ANY)

    def get(stored: Any, key: Any, default: Any) -> Any:
        if stored is None:
            return None
        try:
            item = stored_object(stored)[key_of(key)]
        except (IndexError, KeyError):
            if not checked:
                return as_stored(default_of(default))
            with failures_named(where):
                raise
        return as_stored(item)

    return spark_releases.python_udf(get, dt.ANY.spark_type())


def _array_item_udf(item_type: DType, checked: bool, where: str):
    """``array[index]`` as numpy gives it (a row of a matrix, an element of a vector);
    an index out of range is numpy's IndexError, or gives ``default`` with ``.get()``."""
    convert = dt.from_python(item_type)

    def get(stored: Any, index: int | None, default: Any) -> Any:
        if stored is None or index is None:
            return default
        array = dt.array_to_python(stored)
        try:
            item = array[index]
        except IndexError:
            if not checked:
                return default
            with failures_named(where):
                raise
        return convert(_python_item(item, item_type))

    return spark_releases.python_udf(get, item_type.spark_type())


def _python_item(item: Any, item_type: DType) -> Any:
    """An item numpy gave (a numpy scalar, or an array of one dimension less) as stored
    for ``item_type``: scalars as Python numbers, unless the type is an array."""
    return item.item() if isinstance(item, np.generic) and not item_type.is_array else item


def array_items(array_type: DType, where: str) -> Callable[[Column], Column]:
    """The rows of each array (its elements, for a vector) as a Spark array, for
    ``flatten``: read from the stored values for vectors of a known element type."""
    item_type = dt.array_item(array_type)
    if array_type.n_dim == 1 and item_type in (dt.INT, dt.FLOAT):
        return lambda value: value.getField("ints" if item_type == dt.INT else "floats")
    convert = dt.from_python(item_type)

    def items(stored: Any) -> Any:
        if stored is None:
            return None
        with failures_named(where):
            return [convert(_python_item(x, item_type)) for x in dt.array_to_python(stored)]

    return spark_releases.python_udf(items, T.ArrayType(item_type.spark_type()))


def _as_json_text(e: Expr, scope: Scope) -> Column:
    """A value as JSON text (``.get(key, default)`` gives a Json, whatever the default)."""
    kind = _type(e, scope).with_optional(False)
    value = compile_expr(e, scope)
    if isinstance(e, Const):
        return F.lit(None if e.value is None else dt.Json.dumps(e.value)).cast("string")
    if kind == dt.JSON:
        return value
    if kind == dt.STR:  # quoted and escaped by Spark's JSON writer
        return F.regexp_extract(F.to_json(F.array(value)), r"^\[(.*)\]$", 1)
    return value.cast("string")


def _json_get(by_position: bool) -> Callable[[str | None, str | None, str | None], str | None]:
    """``json[key]`` / ``json.get(key)``: an int key is a position in an array (from 0),
    a string key a field of an object; anything else (a negative position, a key of
    the other kind) is missing and gives ``default``, as in Pathway."""

    def get(doc: str | None, key: str | None, default: str | None) -> str | None:
        if doc is None or key is None:
            return default
        value = json.loads(doc)
        if by_position and isinstance(value, list) and 0 <= int(key) < len(value):
            return dt.Json.dumps(value[int(key)])
        if not by_position and isinstance(value, dict) and key in value:
            return dt.Json.dumps(value[key])
        return default

    return get


def as_type(value: Column, pickled: bool, target: DType) -> Column:
    """``value`` with ``target``'s Spark type; ``pickled``: the values are of type Any
    (pickled Python objects, e.g. a column of only None), read back into ``target``."""
    if pickled and target.spark_type() != T.BinaryType():
        convert = dt.from_python(target)
        unpickled = spark_releases.python_udf(lambda b: None if b is None else convert(pickle.loads(b)), target.spark_type())
        return unpickled(value)
    spark_type = target.spark_type()
    # an atomic type by its SQL name: one py4j call, where a DataType object takes three
    return value.cast(spark_type.simpleString() if isinstance(spark_type, T.AtomicType) else spark_type)


# -- Python functions ---------------------------------------------------------------------

def python_column(
    scope: Scope, call: Callable[..., Any], spark_type: Any, args: list[Column], name: str = "",
    skip: Column | None = None,
) -> Column:
    """An Arrow-batched Spark UDF calling ``call`` on the arguments' values.

    An exception it raises fails the step as a ``ComputationError`` naming the operator
    (and ``name``); keeping Error values, it makes the value an Error whose message is
    the exception's (but a ``ComputationError`` still fails the step).  ``call`` is not
    called (the value is None) where ``skip`` holds (an argument is an Error) or where the
    scope's ``not_called`` does.
    """
    where = f"{scope.where}: {name}" if name else scope.where
    skip = scope.python_skips(_any([skip, scope.not_called]))
    root = scope.udf_cache_root
    if scope.checks is None:
        if skip is None:
            def named(*values: Any) -> Any:
                udf_cache.set_active_root(root)
                with failures_named(where):
                    return call(*values)
            return spark_releases.python_udf(named, spark_type)(*args)

        def named_unless(skipped: bool, *values: Any) -> Any:
            if skipped:
                return None
            udf_cache.set_active_root(root)
            with failures_named(where):
                return call(*values)
        return spark_releases.python_udf(named_unless, spark_type)(F.coalesce(skip, F.lit(False)), *args)

    def caught(skipped: bool, *values: Any) -> tuple[Any, str | None] | None:
        if skipped:
            return None
        udf_cache.set_active_root(root)
        try:
            return call(*values), None
        except ComputationError:  # already a failure of the run (a row transformer's, as in Pathway)
            raise
        except Exception as error:
            return None, f"{type(error).__name__}: {error}"

    ddl = spark_type if isinstance(spark_type, str) else spark_type.simpleString()
    out = spark_releases.python_udf(caught, f"struct<value: {ddl}, error: string>")(
        F.coalesce(skip, F.lit(False)) if skip is not None else F.lit(False), *args
    )
    message = out.getField("error")
    scope.checks.fail(message.isNotNull(), message)
    scope.checks.calls_python = True
    return out.getField("value")


def _apply(e: Apply, scope: Scope) -> Column:
    """A Python function (``pw.apply``, ``pw.udf``) with Python values (Json, tuples...)."""
    if e.batched:
        return _apply_batched(e, scope)
    inputs = [dt.to_python(_type(a, scope)) for a in e.args]
    result = _type(e, scope)
    output = dt.from_python(result)
    fn, propagate_none = e.fn, e.propagate_none

    def call(*values: Any) -> Any:
        if propagate_none and any(v is None for v in values):
            return None
        return output(fn(*(f(v) for f, v in zip(inputs, values))))

    args = [compile_expr(a, scope) for a in e.args]
    skip = _any([scope.checks.flag(a) for a in e.args]) if scope.checks is not None else None
    name = getattr(fn, "__qualname__", repr(fn))
    return python_column(scope, call, result.spark_type(), args, name, skip)


def _apply_batched(e: Apply, scope: Scope) -> Column:
    """A function of many rows at once (``Apply.batched``), called with the rows of each
    Arrow batch Spark gives the Python worker; rows with a None argument (when
    ``propagate_none``) or an Error argument get None without being passed to it."""
    inputs = [dt.to_python(_type(a, scope)) for a in e.args]
    result = _type(e, scope)
    output = dt.from_python(result)
    fn, propagate_none = e.fn, e.propagate_none

    def call(skipped: list[bool], columns: list[list[Any]]) -> list[Any]:
        rows = [tuple(f(v) for f, v in zip(inputs, row)) for row in zip(*columns)]
        passed = [
            i for i, row in enumerate(rows)
            if not skipped[i] and not (propagate_none and any(v is None for v in row))
        ]
        results: list[Any] = [None] * len(rows)
        if not passed:
            return results
        computed = fn(*([rows[i][k] for i in passed] for k in range(len(inputs))))
        if len(computed) != len(passed):
            raise ValueError(
                f"The number of rows produced by a UDF ({len(computed)}) is different than "
                f"the number of rows on its input ({len(passed)})."
            )
        for i, value in zip(passed, computed):
            results[i] = value if isinstance(value, RowFailure) else output(value)
        return results

    args = [compile_expr(a, scope) for a in e.args]
    skip = _any([scope.checks.flag(a) for a in e.args]) if scope.checks is not None else None
    name = getattr(fn, "__qualname__", repr(fn))
    types = [_type(a, scope).spark_type() for a in e.args]
    return python_batch_column(scope, call, result.spark_type(), args, types, name, skip)


def python_batch_column(
    scope: Scope, call: Callable[[list[bool], list[list[Any]]], list[Any]], spark_type: T.DataType,
    args: list[Column], arg_types: list[T.DataType], name: str = "", skip: Column | None = None,
) -> Column:
    """An Arrow UDF calling ``call(skipped, columns)`` once per Arrow batch, with the
    batch's values (of Spark types ``arg_types``) as Python lists; it returns one value
    per row, or a ``RowFailure``.

    A failure fails the step as in ``python_column``; keeping Error values, it makes the
    row's value an Error (a whole batch's when ``call`` itself raises).
    """
    where = f"{scope.where}: {name}" if name else scope.where
    value_type = spark_releases.arrow_type(spark_type)  # instants: the zone only labels them
    checked = scope.checks is not None
    skip = _any([skip, scope.not_called])
    root = scope.udf_cache_root

    def run(skipped: pa.Array, *arrays: pa.Array) -> pa.Array:
        columns = [a.to_pylist() for a in arrays]
        flags = [bool(f) for f in skipped.to_pylist()]
        udf_cache.set_active_root(root)
        with failures_named(where):
            try:
                results = call(flags, columns)
            except Exception as error:
                if not checked:
                    raise
                results = [None if f else RowFailure(error) for f in flags]
            failed = [r.error if isinstance(r, RowFailure) else None for r in results]
            values = pa.array([None if isinstance(r, RowFailure) else r for r in results], value_type)
            if not checked:
                error = next((f for f in failed if f is not None), None)
                if error is not None:
                    raise error
                return values
        messages = pa.array([None if f is None else f"{type(f).__name__}: {f}" for f in failed], pa.string())
        return pa.StructArray.from_arrays([values, messages], ["value", "error"])

    skip = scope.python_skips(skip)
    flag = F.coalesce(skip, F.lit(False)) if skip is not None else F.lit(False)
    arrow_args = [pa.bool_()] + [spark_releases.arrow_type(t) for t in arg_types]
    if not checked:
        return spark_releases.arrow_udf(run, spark_type, arrow_args)(flag, *args)
    ddl = spark_type.simpleString()
    out = spark_releases.arrow_udf(run, f"struct<value: {ddl}, error: string>", arrow_args)(flag, *args)
    message = out.getField("error")
    scope.checks.fail(message.isNotNull(), message)
    scope.checks.calls_python = True
    return out.getField("value")


def _pointer_from(e: PointerFrom, scope: Scope) -> Column:
    keys = [compile_expr(a, scope) for a in e.args]
    if not e.optional or not keys:
        return pointer_of(keys)
    return F.when(functools.reduce(lambda x, y: x | y, [k.isNull() for k in keys]), F.lit(None)).otherwise(pointer_of(keys))


def _call(e: Call, scope: Scope) -> Column:
    args = [compile_expr(a, scope) for a in e.args]
    return FUNCTIONS[e.name](args, e.params, [_type(a, scope) for a in e.args], scope)


# -- built-in functions: one entry per name (types are in sparkway.core.type_rules); each
# gets the compiled arguments, the call's parameters, the arguments' types, and the scope
# (for how a failure names the operator, or becomes an Error value)

def _udf1(fn: Callable[[Any], Any], spark_type: str) -> Callable[[list[Column], tuple, list[DType], Scope], Column]:
    def build(args: list[Column], params: tuple, types: list[DType], scope: Scope) -> Column:
        return python_column(scope, lambda v: None if v is None else fn(v), spark_type, args[:1])
    return build


def _round(args: list[Column], params: tuple, types: list[DType], scope: Scope) -> Column:
    """Python's ``round`` (ties to even, on the exact binary value), as Pathway rounds:
    Spark's rounds ties of the decimal text up."""
    spark_type = "long" if types[0].with_optional(False) == dt.INT else "double"
    return python_column(scope, lambda x, d: None if x is None or d is None else round(x, d), spark_type, args[:2])


def _fill_na(args: list[Column], params: tuple, types: list[DType], scope: Scope) -> Column:
    """None (and for floats NaN) replaced by a default of the column's own type."""
    value, kind = args[0], types[0].with_optional(False)
    default = F.lit(params[0]).cast("double" if kind == dt.FLOAT else "long")
    missing = value.isNull() | F.isnan(value) if kind == dt.FLOAT else value.isNull()
    return F.when(missing, default).otherwise(value)


def _json_as(kind: type, spark_type: str):
    def convert(text: str) -> Any:
        value = json.loads(text)
        if value is None:
            return None
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ValueError(f"JSON value {text[:80]} is not a {kind.__name__}")
        return value
    convert_column = _udf1(convert, spark_type)

    def build(args: list[Column], params: tuple, types: list[DType], scope: Scope) -> Column:
        converted = convert_column(args, params, types, scope)
        return converted if len(args) == 1 else F.coalesce(converted, args[1].cast(spark_type))
    return build


def float_text(value: Column) -> Column:
    """A double as Pathway's cast to str writes it (Rust's display of a float): the fewest
    digits that read back as the same double, always positional, no ``.0`` after a whole
    number (``4294967296.2``, ``1``, ``0.00001``, ``250000000000000000000``, ``NaN``).

    The digits are found by formatting with 18 down to 1 significant digits, since Java
    17's own text of a double has more digits than needed at times.
    """
    def cut(text: Column) -> Column:  # one significant digit less, not rounded
        mantissa = F.substring_index(text, "e", 1)
        return F.concat(mantissa.substr(F.lit(1), F.length(mantissa) - 1), F.lit("e"), F.substring_index(text, "e", -1))

    # Java rounds digits it already rounded, which can round the last one up wrongly: the
    # longer text cut short is then the one that reads back
    longer = F.format_string("%.17e", value)
    shortest = longer
    for precision in range(16, -1, -1):
        rounded, truncated = F.format_string(f"%.{precision}e", value), cut(longer)
        shortest = (F.when(rounded.cast("double") == value, rounded)
                    .when(truncated.cast("double") == value, truncated).otherwise(shortest))
        longer = rounded
    mantissa = F.substring_index(shortest, "e", 1)
    exponent = F.substring_index(shortest, "e", -1).cast("int")
    negative = mantissa.startswith("-")
    digits = F.regexp_replace(F.regexp_replace(F.regexp_replace(mantissa, "-", ""), "[.]", ""), "0+$", "")
    digits = F.when(digits == "", F.lit("0")).otherwise(digits)
    padded = F.call_function("rpad", digits, F.greatest(exponent + 1, F.length(digits)), F.lit("0"))
    whole = F.call_function("substring", padded, F.lit(1), exponent + 1)
    fraction = F.call_function("substring", digits, exponent + 2, F.lit(1 << 20))
    positional = F.when(
        exponent >= 0, F.concat(whole, F.when(fraction == "", F.lit("")).otherwise(F.concat(F.lit("."), fraction)))
    ).otherwise(F.concat(F.lit("0."), F.call_function("repeat", F.lit("0"), -exponent - 1), digits))
    text = F.concat(F.when(negative, F.lit("-")).otherwise(F.lit("")), positional)
    return (
        F.when(F.isnan(value), F.lit("NaN"))
        .when(value == float("inf"), F.lit("inf"))
        .when(value == float("-inf"), F.lit("-inf"))
        .otherwise(text)
    )


def _zoned_to_utc(naive: Column, zone: str, scope: Scope) -> Column:
    """A wall-clock time in ``zone`` as the UTC instant it names, as Pathway (chrono)
    decides where clocks move: a time that happens twice is the later one, a time that
    never happens is the moment the clocks jumped over it (Spark's own conversion takes
    the earlier one, and moves a missing time forward)."""
    return python_column(scope, _wall_clock_to_utc(zone), "long", [naive])


def _wall_clock_to_utc(zone_name: str) -> Callable[[int | None], int | None]:
    """On nanoseconds: the zone's rules are found with Python's datetimes (microseconds);
    offsets are whole seconds, so the nanoseconds below the microsecond carry over."""
    zone = ZoneInfo(zone_name)
    epoch = _dt.datetime(1970, 1, 1)

    def offset(instant: _dt.datetime) -> _dt.timedelta | None:
        return instant.astimezone(zone).utcoffset()

    def convert(count: int | None) -> int | None:
        if count is None:
            return None
        whole_micros, below = divmod(count, 1000)
        naive = epoch + _dt.timedelta(microseconds=whole_micros)
        later = naive.replace(tzinfo=zone, fold=1).astimezone(_dt.timezone.utc)
        if later.astimezone(zone).replace(tzinfo=None) == naive:
            return durations.nanos(later) + below
        # in a gap: the instants of the two offsets around it; the jump lies between them
        low, high = sorted([later, naive.replace(tzinfo=zone, fold=0).astimezone(_dt.timezone.utc)])
        after = offset(high)
        while high - low > _dt.timedelta(microseconds=1):
            middle = low + (high - low) / 2
            low, high = (low, middle) if offset(middle) == after else (middle, high)
        return durations.nanos(high)

    return convert


def _utc_to_zoned(instant: Column, zone: str) -> Column:
    """The wall-clock time in ``zone`` at a UTC instant (a naive date-time), in Spark:
    the instant plus the zone's offset then."""
    micros = _floor_by(instant, 1000)
    wall_micros = F.unix_micros(F.from_utc_timestamp(F.timestamp_micros(micros), zone))
    return instant + (wall_micros - micros) * F.lit(1000)


def _date_time_text(count: Column, utc: bool) -> Column:
    """``2024-01-02T03:04:05.123456789`` (and ``+0000`` after a UTC one), as Pathway's
    ``to_string`` writes date-times: nine fraction digits."""
    clock = F.date_format(_instant(count), "yyyy-MM-dd'T'HH:mm:ss.")
    fraction = F.lpad(F.pmod(count, F.lit(_SECOND)).cast("string"), 9, "0")
    return F.concat(clock, fraction, F.lit("+0000" if utc else ""))


def _to_string(args: list[Column], params: tuple, types: list[DType], scope: Scope) -> Column:
    kind = types[0].with_optional(False)
    if kind == dt.STR:
        text = args[0]
    elif kind == dt.INT or kind.is_pointer:
        text = args[0].cast("string")
    elif kind == dt.BOOL:
        text = F.when(args[0], F.lit("True")).otherwise(F.lit("False"))
    elif kind in (dt.DATE_TIME_NAIVE, dt.DATE_TIME_UTC):
        text = _date_time_text(args[0], kind == dt.DATE_TIME_UTC)
    else:
        value = dt.to_python(kind)
        text = spark_releases.python_udf(lambda v: None if v is None else text_of(value(v)), "string")(args[0])
    return F.coalesce(text, F.lit("None"))


def _parse(cast_to: str, optional_from: int = 0):
    def build(args: list[Column], params: tuple, types: list[DType], scope: Scope) -> Column:
        text = F.trim(args[0])
        if cast_to == "boolean":  # the words compare without case
            lowered = F.lower(text)
            true_values, false_values = ([v.lower() for v in words] for words in params[1:])
            parsed = F.when(lowered.isin(*true_values), F.lit(True)).when(lowered.isin(*false_values), F.lit(False))
        else:
            parsed = spark_releases.try_cast(text, cast_to)
        if params and params[0]:
            return parsed
        failed = parsed.isNull() & args[0].isNotNull()
        if scope.checks is None:
            return scope.failing(failed, "ValueError", F.concat(F.lit(f"cannot parse as {cast_to}: "), args[0]), parsed)
        return scope.failing(failed, "ValueError", _parse_message(args[0], cast_to), parsed)
    return build


# what Pathway's error log says of text that is not a number (Rust's parse errors)
_PARSE_ERRORS = {"long": ("int", "invalid digit found in string"), "double": ("float", "invalid float literal")}


def _parse_message(text: Column, cast_to: str) -> Column:
    kind, reason = _PARSE_ERRORS.get(cast_to, ("bool", "invalid value"))
    quoted = F.concat(F.lit('parse error: cannot parse "'), text, F.lit(f'" to {kind}: '))
    if kind == "int":
        reason_column = F.when(F.trim(text) == "", F.lit("cannot parse integer from empty string")).otherwise(F.lit(reason))
        return F.concat(quoted, reason_column)
    return F.concat(quoted, F.lit(reason))


def _timestamp(args: list[Column], params: tuple, types: list[DType], scope: Scope) -> Column:
    unit = params[0]
    if unit is None:  # deprecated: integer nanoseconds
        return args[0]
    # nanoseconds divided as a float, as Pathway computes it (946684799.9999989, not .999999)
    return args[0].cast("double") / F.lit(float(durations.NANOS_PER_UNIT[unit]))


def _from_timestamp(args: list[Column], params: tuple, types: list[DType], scope: Scope) -> Column:
    """A number of seconds (or ms, us, ns) since the epoch as a date-time: exact for ints,
    for floats the product in floating point cut toward zero, as Pathway computes it."""
    per_unit = durations.NANOS_PER_UNIT[params[0]]
    if types[0].with_optional(False) == dt.FLOAT:
        return (args[0] * F.lit(float(per_unit))).cast("long")
    return _wrapping("*", args[0], F.lit(per_unit).cast("long"))


def _to_duration(args: list[Column], params: tuple, types: list[DType], scope: Scope) -> Column:
    """An int count of a unit (a column of unit names too) as a duration."""
    per_unit = F.create_map(*[F.lit(x) for pair in durations.NANOS_PER_UNIT.items() for x in pair])[args[1]]
    unknown = args[0].isNotNull() & args[1].isNotNull() & per_unit.isNull()
    message = F.concat(F.lit("to_duration: unknown unit "), args[1])
    return scope.failing(unknown, "ValueError", message, _wrapping("*", args[0], per_unit.cast("long")))


_CHRONO_ONLY = re.compile(r"%(%|\.?[369]?f|:z)")


def chrono_strftime(value: _dt.datetime, fmt: str) -> str:
    """``value`` formatted as Pathway (Rust's chrono) formats: ``%f`` is nanoseconds (9
    digits), ``%3f``/``%6f``/``%9f`` that many digits, ``%.f`` and ``%.3f``... the same
    after a dot (``%.f`` as few as the value needs), ``%:z`` the offset with a colon; the
    rest is C's strftime, as in Python.  A pandas Timestamp's nanoseconds are shown.

    >>> chrono_strftime(_dt.datetime(2023, 3, 25, 2, 4, 5, 123456), "%H:%M:%S%.3f %f")
    '02:04:05.123 123456000'
    """
    nanos = f"{value.microsecond * 1000 + getattr(value, 'nanosecond', 0):09d}"

    def text(match: re.Match) -> str:
        token = match.group(1)
        if token == "%":
            return "%%"
        if token == ":z":
            offset = value.strftime("%z")
            return f"{offset[:3]}:{offset[3:]}" if offset else ""
        dot, digits = token.startswith("."), token.strip(".f")
        if digits:
            shown = nanos[: int(digits)]
        elif dot:
            shown = nanos[:3] if nanos[3:] == "000000" else nanos[:6] if nanos[6:] == "000" else nanos
            shown = "" if nanos == "000000000" else shown
        else:
            shown = nanos
        return ("." if dot and shown else "") + shown

    return value.strftime(_CHRONO_ONLY.sub(text, fmt))


def _strftime(args: list[Column], params: tuple, types: list[DType], scope: Scope) -> Column:
    value = dt.to_python(types[0])
    if params[0] is not None:
        fmt = params[0]
        return _udf1(lambda v: chrono_strftime(value(v), fmt), "string")(args, params, types, scope)

    def text(v: int | None, fmt: str | None) -> str | None:  # a format per row
        return None if v is None or fmt is None else chrono_strftime(value(v), fmt)

    return python_column(scope, text, "string", args[:2])


_BELOW_MICRO = re.compile(r"(\.\d{6})(\d+)")  # a fraction of a second in more than 6 digits
_CHRONO_FRACTION = re.compile(r"%(\.)?[369]?f")


def chrono_strptime(text: str, fmt: str, zoned: bool) -> int:
    """Nanoseconds since the epoch of ``text`` read in the format ``fmt`` as Pathway (Rust's
    chrono) reads it: ``%f`` takes up to 9 digits, ``%:z`` an offset with a colon.

    >>> chrono_strptime("1970-01-01 00:00:01.000000005", "%Y-%m-%d %H:%M:%S.%f", False)
    1000000005
    """
    # chrono's fraction directives (%.f: a dot and digits; %3f, %6f, %9f) as Python's %f
    fmt = _CHRONO_FRACTION.sub(lambda m: ".%f" if m.group(1) else "%f", fmt)
    below_micro = 0
    if "%f" in fmt:  # Python's %f takes at most 6 digits: the next 3 are nanoseconds
        found = _BELOW_MICRO.search(text)
        if found is not None:
            below_micro = int(found.group(2)[:3].ljust(3, "0"))
            text = text[: found.start(2)] + text[found.end(2):]
    value = _dt.datetime.strptime(text, fmt.replace("%:z", "%z"))  # Python's %z reads "+01:00" too
    if zoned and value.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone, which {fmt!r} should read (%z)")
    if not zoned and value.tzinfo is not None:
        value = value.replace(tzinfo=None)
    return durations.nanos(value) + below_micro


def _strptime(args: list[Column], params: tuple, types: list[DType], scope: Scope) -> Column:
    fmt, contains_tz = params
    zoned = strptime_zoned(fmt, contains_tz)
    if fmt is not None:
        return _udf1(lambda text: chrono_strptime(text, fmt, zoned), "long")(args, params, types, scope)

    def parse(text: str | None, fmt: str | None) -> int | None:  # a format per row
        return None if text is None or fmt is None else chrono_strptime(text, fmt, zoned)

    return python_column(scope, parse, "long", args[:2])


def _rounding(half_up: bool):
    """``dt.floor`` (or, with ``half_up``, ``dt.round``: ties go up): the time as a
    multiple of the duration since the epoch, computed on integer nanoseconds."""
    def build(args: list[Column], params: tuple, types: list[DType], scope: Scope) -> Column:
        step = int(durations.nanos_or_number(durations.parse(params[0])))
        if step <= 1:  # every time is a multiple of a nanosecond
            return args[0]
        value = args[0] + F.lit(step // 2) if half_up else args[0]
        return value - F.pmod(value, F.lit(step))
    return build


def _duration_part(nanos_per_unit: int):
    """Whole units in a duration, truncated toward zero as Pathway counts them
    (-1.5 ms is -1 millisecond); Spark's ``div`` truncates toward zero."""
    def build(args: list[Column], params: tuple, types: list[DType], scope: Scope) -> Column:
        return F.call_function("div", args[0], F.lit(nanos_per_unit)).cast("long")
    return build


def _second_fraction(nanos_per_unit: int):
    """The part of a time below the second, in milli-, micro- or nanoseconds."""
    def build(args: list[Column], params: tuple, types: list[DType], scope: Scope) -> Column:
        return F.call_function("div", F.pmod(args[0], F.lit(_SECOND)), F.lit(nanos_per_unit)).cast("long")
    return build


def _in_range(method: Callable[..., int], whole: Callable[[list[Column]], Column]):
    """``str.count/find/rfind(sub, start, end)``: over the whole text in Spark; with a
    range, Python's method itself (its rules for negative and out-of-range bounds)."""

    def build(args: list[Column], params: tuple, types: list[DType], scope: Scope) -> Column:
        start, end = params
        if start is None and end is None:
            return whole(args)

        def call(text: str | None, sub: str | None) -> int | None:
            return None if text is None or sub is None else method(text, sub, start, end)

        return spark_releases.python_udf(call, "long")(args[0], args[1])

    return build


def _rfind(args: list[Column]) -> Column:
    """Python's ``str.rfind``: the first match in the reversed text, counted from the end."""
    found = F.call_function("instr", F.reverse(args[0]), F.reverse(args[1]))
    last = F.char_length(args[0]) - F.char_length(args[1]) - found + 1
    return F.when(found == 0, F.lit(-1)).otherwise(last).cast("long")


def _str_slice(args: list[Column], params: tuple, types: list[DType], scope: Scope) -> Column:
    start, end = params
    return spark_releases.python_udf(lambda s: None if s is None else s[start:end], "string")(args[0])


def _window_starts(args: list[Column], params: tuple, types: list[DType], scope: Scope) -> Column:
    """Starts of the windows [start, start + duration) that contain the time.

    As in Pathway, windows are aligned on ``origin`` (0 or the epoch by default), and a
    given origin also drops the windows that would start before it.
    """
    hop, duration, given_origin = (durations.nanos_or_number(p) for p in params[:3])
    ratio = params[3]  # a number of hops per window (a sliding window's ratio=)
    origin = given_origin if given_origin is not None else 0
    kind = types[0].with_optional(False)
    value = args[0]
    exact = kind != dt.FLOAT and all(isinstance(p, int) for p in (hop, duration, origin))
    if exact or ratio is not None:  # integers (date-times: nanoseconds, beyond a double's precision)
        floor_div = _floor_div if exact else (lambda a, b: F.floor(a / b))
        last = floor_div(value - F.lit(origin), F.lit(hop))
        if ratio is not None or duration % hop == 0:  # every time is in that many windows
            first = last - ((ratio or duration // hop) - 1)
        else:
            first = floor_div(value - F.lit(origin) - F.lit(duration), F.lit(hop)) + 1
        if given_origin is not None:  # no window starts before a given origin
            first = F.greatest(first, F.lit(0))
        # an empty sequence when the time is before the first window (sequence needs first <= last)
        ks = F.when(first <= last, F.sequence(first, last)).otherwise(F.array().cast("array<bigint>"))
        starts = F.transform(ks, lambda k: k * F.lit(hop) + F.lit(origin))
    else:
        # float times: candidates one hop wider on both sides, kept where start <= time <
        # start + duration in the time's own arithmetic: a division rounds (0.3 / 0.1 is
        # 2.9999999999999996), and the comparison is what Pathway decides on
        last = F.floor((value - F.lit(origin)) / F.lit(hop))
        ks = F.sequence(F.floor((value - F.lit(origin) - F.lit(duration)) / F.lit(hop)), last + 1)
        starts = F.filter(
            F.transform(ks, lambda k: k * F.lit(hop) + F.lit(origin)),
            lambda s: (s <= value) & (value < s + F.lit(duration)),
        )
        if given_origin is not None:
            starts = F.filter(starts, lambda s: s >= F.lit(origin))
    return starts.cast(f"array<{kind.spark_type().simpleString()}>")


def _processing_time(args: list[Column], params: tuple, types: list[DType], scope: Scope) -> Column:
    """When the row was processed: its step's time (in milliseconds), as a UTC date-time."""
    scope.reads_time = True
    return F.lit(scope.time * 1_000_000).cast("long")


FUNCTIONS: dict[str, Callable[[list[Column], tuple, list[DType], Scope], Column]] = {
    "str.lower": lambda a, p, t, w: F.lower(a[0]),
    "str.upper": lambda a, p, t, w: F.upper(a[0]),
    "str.len": lambda a, p, t, w: F.char_length(a[0]).cast("long"),
    "str.reversed": lambda a, p, t, w: F.reverse(a[0]),
    "str.strip": lambda a, p, t, w: F.trim(a[0]) if p[0] is None else F.btrim(a[0], F.lit(p[0])),
    "str.startswith": lambda a, p, t, w: F.startswith(a[0], a[1]),
    "str.endswith": lambda a, p, t, w: F.endswith(a[0], a[1]),
    "str.count": _in_range(str.count, lambda a: F.when(a[1] == "", F.char_length(a[0]) + 1).otherwise(
        ((F.char_length(a[0]) - F.char_length(F.replace(a[0], a[1], F.lit("")))) / F.char_length(a[1]))
    ).cast("long")),
    "str.find": _in_range(str.find, lambda a: (F.call_function("instr", a[0], a[1]) - 1).cast("long")),
    "str.rfind": _in_range(str.rfind, _rfind),
    "str.swapcase": _udf1(str.swapcase, "string"),
    "str.title": _udf1(str.title, "string"),
    "str.removeprefix": lambda a, p, t, w: F.when(
        F.startswith(a[0], a[1]), F.call_function("substring", a[0], F.char_length(a[1]) + 1, F.lit(2**31 - 1))
    ).otherwise(a[0]),
    "str.removesuffix": lambda a, p, t, w: F.when(
        F.endswith(a[0], a[1]), F.left(a[0], F.char_length(a[0]) - F.char_length(a[1]))).otherwise(a[0]),
    "str.replace": lambda a, p, t, w: F.replace(a[0], a[1], a[2]) if len(a) == 3 else python_column(
        w, lambda s, old, new, count: None if None in (s, old, new, count) else s.replace(old, new, count),
        "string", a),
    "str.slice": _str_slice,
    "str.parse_int": _parse("long"),
    "str.parse_float": _parse("double"),
    "str.parse_bool": _parse("boolean"),
    "dt.year": lambda a, p, t, w: F.year(_instant(a[0])).cast("long"),
    "dt.month": lambda a, p, t, w: F.month(_instant(a[0])).cast("long"),
    "dt.day": lambda a, p, t, w: F.dayofmonth(_instant(a[0])).cast("long"),
    "dt.hour": lambda a, p, t, w: F.hour(_instant(a[0])).cast("long"),
    "dt.minute": lambda a, p, t, w: F.minute(_instant(a[0])).cast("long"),
    "dt.second": lambda a, p, t, w: F.second(_instant(a[0])).cast("long"),
    "dt.millisecond": _second_fraction(1_000_000),
    "dt.microsecond": _second_fraction(1_000),
    "dt.nanosecond": _second_fraction(1),
    "dt.weekday": lambda a, p, t, w: ((F.dayofweek(_instant(a[0])) + 5) % 7).cast("long"),
    "dt.timestamp": _timestamp,
    "dt.strftime": _strftime,
    "dt.strptime": _strptime,
    "dt.floor": _rounding(half_up=False),
    "dt.round": _rounding(half_up=True),
    "dt.to_utc": lambda a, p, t, w: _zoned_to_utc(a[0], p[0], w),
    "dt.to_naive_in_timezone": lambda a, p, t, w: _utc_to_zoned(a[0], p[0]),
    "dt.add_duration_in_timezone": lambda a, p, t, w: _utc_to_zoned(_zoned_to_utc(a[0], p[0], w) + a[1], p[0]),
    "dt.subtract_duration_in_timezone": lambda a, p, t, w: _utc_to_zoned(_zoned_to_utc(a[0], p[0], w) - a[1], p[0]),
    "dt.subtract_date_time_in_timezone": lambda a, p, t, w: _zoned_to_utc(a[0], p[0], w) - _zoned_to_utc(a[1], p[0], w),
    "dt.from_timestamp": _from_timestamp,
    "dt.utc_from_timestamp": _from_timestamp,
    "dt.to_duration": _to_duration,
    "dt.weeks": _duration_part(7 * 86_400 * _SECOND),
    "dt.days": _duration_part(86_400 * _SECOND),
    "dt.hours": _duration_part(3_600 * _SECOND),
    "dt.minutes": _duration_part(60 * _SECOND),
    "dt.seconds": _duration_part(_SECOND),
    "dt.milliseconds": _duration_part(1_000_000),
    "dt.microseconds": _duration_part(1_000),
    "dt.nanoseconds": lambda a, p, t, w: a[0],
    "num.round": _round,
    "num.fill_na": _fill_na,
    "window.starts": _window_starts,
    "processing_time": _processing_time,
    "to_string": _to_string,
    "json_as_int": _json_as(int, "long"),
    "json_as_float": _json_as(float, "double"),
    "json_as_str": _json_as(str, "string"),
    "json_as_bool": _json_as(bool, "boolean"),
}

_COMPILERS: dict[type, Callable[[Any, Scope], Column]] = {
    ColumnRef: _column_ref,
    Const: _const,
    BinOp: _binop,
    UnOp: _unop,
    IfElse: _if_else,
    FillError: _fill_error,
    Coalesce: _coalesce,
    Require: _require,
    Unwrap: _unwrap,
    Cast: _cast,
    IsNone: _is_none,
    MakeTuple: _make_tuple,
    GetItem: _get_item,
    Apply: _apply,
    Call: _call,
    PointerFrom: _pointer_from,
}
