"""Column expressions: small immutable nodes built by operators on columns.

Nothing here touches Spark: ``sparkway.engine.expressions`` compiles each node kind to a
Spark column, and ``sparkway.core.type_rules`` gives each node its type.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

from sparkway.core import durations
from sparkway.core.dtypes import DType, engine_name
from sparkway.core.portable import portable
from sparkway.errors import PlanTypeError, warn_user


class Expr:
    """Base of all column expressions; supports Python operators.

    >>> import sparkway as pw
    >>> e = (pw.this.a + 1) * 2 > pw.this.b
    >>> type(e).__name__
    'BinOp'
    """

    # Python operators build nodes; comparison operators too, so Expr is not hashable.
    __hash__ = None  # type: ignore[assignment]

    def _bin(self, op: str, other: Any, swap: bool = False) -> "BinOp":
        other = wrap(other)
        return BinOp(op, other, self) if swap else BinOp(op, self, other)

    def __add__(self, o: Any) -> "BinOp": return self._bin("+", o)
    def __radd__(self, o: Any) -> "BinOp": return self._bin("+", o, True)
    def __sub__(self, o: Any) -> "BinOp": return self._bin("-", o)
    def __rsub__(self, o: Any) -> "BinOp": return self._bin("-", o, True)
    def __mul__(self, o: Any) -> "BinOp": return self._bin("*", o)
    def __rmul__(self, o: Any) -> "BinOp": return self._bin("*", o, True)
    def __truediv__(self, o: Any) -> "BinOp": return self._bin("/", o)
    def __rtruediv__(self, o: Any) -> "BinOp": return self._bin("/", o, True)
    def __floordiv__(self, o: Any) -> "BinOp": return self._bin("//", o)
    def __rfloordiv__(self, o: Any) -> "BinOp": return self._bin("//", o, True)
    def __mod__(self, o: Any) -> "BinOp": return self._bin("%", o)
    def __rmod__(self, o: Any) -> "BinOp": return self._bin("%", o, True)
    def __matmul__(self, o: Any) -> "BinOp": return self._bin("@", o)
    def __rmatmul__(self, o: Any) -> "BinOp": return self._bin("@", o, True)
    def __pow__(self, o: Any) -> "BinOp": return self._bin("**", o)
    def __rpow__(self, o: Any) -> "BinOp": return self._bin("**", o, True)
    def __eq__(self, o: Any) -> "BinOp": return self._bin("==", o)  # type: ignore[override]
    def __ne__(self, o: Any) -> "BinOp": return self._bin("!=", o)  # type: ignore[override]
    def __lt__(self, o: Any) -> "BinOp": return self._bin("<", o)
    def __le__(self, o: Any) -> "BinOp": return self._bin("<=", o)
    def __gt__(self, o: Any) -> "BinOp": return self._bin(">", o)
    def __ge__(self, o: Any) -> "BinOp": return self._bin(">=", o)
    def __and__(self, o: Any) -> "BinOp": return self._bin("&", o)
    def __rand__(self, o: Any) -> "BinOp": return self._bin("&", o, True)
    def __or__(self, o: Any) -> "BinOp": return self._bin("|", o)
    def __ror__(self, o: Any) -> "BinOp": return self._bin("|", o, True)
    def __xor__(self, o: Any) -> "BinOp": return self._bin("^", o)
    def __rxor__(self, o: Any) -> "BinOp": return self._bin("^", o, True)
    def __lshift__(self, o: Any) -> "BinOp": return self._bin("<<", o)
    def __rlshift__(self, o: Any) -> "BinOp": return self._bin("<<", o, True)
    def __rshift__(self, o: Any) -> "BinOp": return self._bin(">>", o)
    def __rrshift__(self, o: Any) -> "BinOp": return self._bin(">>", o, True)
    def __neg__(self) -> "UnOp": return UnOp("neg", self)
    def __invert__(self) -> "UnOp": return UnOp("not", self)
    def __abs__(self) -> "UnOp": return UnOp("abs", self)

    def __repr__(self) -> str:
        return expression_text(self)

    def __bool__(self) -> bool:
        raise PlanTypeError(
            "a column expression has no truth value: use & | ~ instead of and/or/not, "
            "and pw.if_else instead of if"
        )

    def __iter__(self) -> Any:  # without it, ``*expr`` would call __getitem__ forever
        raise PlanTypeError(
            f"{self!r} is not iterable: it is one column expression, which describes how each "
            "row's value is computed. To run Python on the values, use pw.apply(f, expression) "
            "or a @pw.udf; for an element of a tuple or Json column, use expression[i]."
        )

    def __getitem__(self, key: Any) -> "Expr":
        """JSON field or list element access: ``pw.this.data["key"]``, ``pw.this.t[0]``."""
        return GetItem(self, wrap(key), None, checked=True)

    def get(self, key: Any, default: Any = None) -> "GetItem":
        """Like ``[key]``, but a missing key gives ``default`` instead of an error."""
        return GetItem(self, wrap(key), wrap(default), checked=False)

    def is_none(self) -> "IsNone":
        return IsNone(self, negate=False)

    def is_not_none(self) -> "IsNone":
        return IsNone(self, negate=True)

    def to_string(self) -> "Call":
        """The value as text, as Pathway writes it (``None`` for a missing value).

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("x\\n2.5\\nNone")
        >>> pw.debug.compute_and_print(t.select(s=pw.this.x.to_string()), include_id=False)
        s
        2.5
        None
        """
        return Call("to_string", (self,))

    def as_int(self, default: Any = None, unwrap: bool = False) -> "Expr":
        """A Json value as an int: None for JSON null, unless ``default`` (a value or a
        column) is given; ``unwrap=True`` makes a null an error.  ``as_float``,
        ``as_str`` and ``as_bool`` alike.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_rows(pw.schema_from_types(j=pw.Json), [(pw.Json(3),), (pw.Json(None),)])
        >>> pw.debug.compute_and_print(t.select(n=pw.this.j.as_int(default=0)), include_id=False)
        n
        0
        3
        """
        return _json_as("int", self, default, unwrap)

    def as_float(self, default: Any = None, unwrap: bool = False) -> "Expr":
        return _json_as("float", self, default, unwrap)

    def as_str(self, default: Any = None, unwrap: bool = False) -> "Expr":
        return _json_as("str", self, default, unwrap)

    def as_bool(self, default: Any = None, unwrap: bool = False) -> "Expr":
        return _json_as("bool", self, default, unwrap)

    @property
    def str(self) -> "StrNamespace":
        return StrNamespace(self)

    @property
    def dt(self) -> "DtNamespace":
        return DtNamespace(self)

    @property
    def num(self) -> "NumNamespace":
        return NumNamespace(self)


@dataclass(frozen=True, eq=False, repr=False)
class ColumnRef(Expr):
    """A column of a table: ``table.col``, ``pw.this.col``, ``pw.left.col``.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a\\n1")
    >>> isinstance(t.a, pw.ColumnReference), t.a.name
    (True, 'a')
    """

    table: Any  # a Table, or a ThisPlaceholder
    name: str

    def __hash__(self) -> int:
        """Columns are dictionary keys, as in ``asof_join(..., defaults={t.a: 0})``."""
        return hash((id(self.table), self.name))

    def __call__(self, *args: Any) -> "MethodCall":
        """A call of a method column (a row transformer's ``@pw.method``) with these
        arguments, row by row: ``table.method(10)``."""
        return MethodCall(self, tuple(wrap(a) for a in args))


@dataclass(frozen=True, eq=False, repr=False)
class Const(Expr):
    value: Any


@dataclass(frozen=True, eq=False, repr=False)
class BinOp(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, eq=False, repr=False)
class UnOp(Expr):
    op: str
    arg: Expr


@dataclass(frozen=True, eq=False, repr=False)
class IfElse(Expr):
    cond: Expr
    then: Expr
    otherwise: Expr


@dataclass(frozen=True, eq=False, repr=False)
class Coalesce(Expr):
    args: tuple[Expr, ...]


@dataclass(frozen=True, eq=False, repr=False)
class Require(Expr):
    value: Expr
    args: tuple[Expr, ...]


@dataclass(frozen=True, eq=False, repr=False)
class Unwrap(Expr):
    arg: Expr


@dataclass(frozen=True, eq=False, repr=False)
class FillError(Expr):
    """``pw.fill_error``: ``arg``, or ``replacement`` where ``arg`` is an Error value."""

    arg: Expr
    replacement: Expr


@dataclass(frozen=True, eq=False, repr=False)
class Cast(Expr):
    dtype: DType
    arg: Expr
    #: ``pw.declare_type``: the type is exactly ``dtype`` (no None added from the argument's)
    declared: bool = False


@dataclass(frozen=True, eq=False, repr=False)
class IsNone(Expr):
    arg: Expr
    negate: bool


@dataclass(frozen=True, eq=False, repr=False)
class MakeTuple(Expr):
    args: tuple[Expr, ...]


@dataclass(frozen=True, eq=False, repr=False)
class GetItem(Expr):
    arg: Expr
    key: Expr
    default: Expr | None
    checked: bool


@dataclass(frozen=True, eq=False, repr=False)
class Apply(Expr):
    """A Python function applied row by row (``pw.apply``, ``pw.udf``).

    ``batched``: ``fn`` takes many rows at once, one list of values per argument, and
    returns the list of their results, in which a ``RowFailure`` fails its row only
    (async functions awaited concurrently, batch UDFs).  ``deterministic=False`` (user
    functions, unless they say otherwise): a row's result is stored until the row is
    deleted, so that its retraction replays the value inserted."""

    fn: Callable[..., Any]
    args: tuple[Expr, ...]
    dtype: DType | None
    propagate_none: bool = False
    batched: bool = False
    deterministic: bool = True

    def __post_init__(self) -> None:
        # shipped to Spark's workers as one object per process for the run (its caches
        # and state last across steps), with the locks it holds rebuilt there
        object.__setattr__(self, "fn", portable(self.fn))


@dataclass(frozen=True)
class RowFailure:
    """The result of a batched function for a row whose computation raised ``error``."""

    error: BaseException


@dataclass(frozen=True, eq=False, repr=False)
class Call(Expr):
    """A named built-in function (string, date-time, JSON and pointer methods)."""

    name: str
    args: tuple[Expr, ...]
    params: tuple[Any, ...] = ()


@dataclass(frozen=True, eq=False, repr=False)
class PointerFrom(Expr):
    """The id a row with these key values gets (``table.pointer_from(...)``); with
    ``optional``, None when a key value is None."""

    args: tuple[Expr, ...]
    optional: bool = False
    table: Any = field(default=None, compare=False)  # whose method made it: named when printed


@dataclass(frozen=True, eq=False, repr=False)
class IxRef(Expr):
    """``target.ix(pointer).name`` whose pointer is read from the rows of the operation that
    uses it (``pw.this.ix(...)``, ``t.ix(pw.this.p)``, ``t.ix(pw.reducers.argmax(...))``):
    the API layer turns it into a lookup once it knows that operation's table.  ``target``
    is a table, or a placeholder meaning that same table."""

    target: Any
    pointer: Expr
    name: str
    optional: bool = False


@dataclass(frozen=True, eq=False, repr=False)
class MethodCall(Expr):
    """A call of the method a method column's value names (``table.method(arg)``); the
    API layer computes it, as a row transformer, for the operation that uses it."""

    method: Expr
    args: tuple[Expr, ...]


@dataclass(frozen=True, eq=False, repr=False)
class ReducerExpr(Expr):
    """An aggregate over a group, e.g. ``pw.reducers.sum(pw.this.x)``."""

    kind: str
    args: tuple[Expr, ...]
    params: tuple[Any, ...] = ()


def _json_as(kind: str, expr: Expr, default: Any, unwrap: bool) -> Expr:
    converted = Call(f"json_as_{kind}", (expr,) if default is None else (expr, wrap(default)))
    return Unwrap(converted) if unwrap else converted


def wrap(value: Any) -> Expr:
    """An expression for a Python value (constants become ``Const``)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, tuple):
        return MakeTuple(tuple(wrap(v) for v in value))
    if isinstance(value, enum.Enum) and isinstance(value, (int, str)):  # IntEnum, StrEnum: their value
        return Const(value._value_)
    return Const(value)


class _Namespace:
    def __init__(self, expr: Expr) -> None:
        self._expr = expr

    def _call(self, name: str, *args: Any, params: tuple[Any, ...] = ()) -> Call:
        return Call(name, (self._expr, *map(wrap, args)), params)


class StrNamespace(_Namespace):
    """String methods: ``pw.this.name.str.lower()``."""

    def lower(self) -> Call: return self._call("str.lower")
    def upper(self) -> Call: return self._call("str.upper")
    def len(self) -> Call: return self._call("str.len")
    def reversed(self) -> Call: return self._call("str.reversed")
    def strip(self, chars: str | None = None) -> Call: return self._call("str.strip", params=(chars,))
    def startswith(self, prefix: Any) -> Call: return self._call("str.startswith", prefix)
    def endswith(self, suffix: Any) -> Call: return self._call("str.endswith", suffix)
    def count(self, sub: Any, start: int | None = None, end: int | None = None) -> Call:
        return self._call("str.count", sub, params=(start, end))
    def find(self, sub: Any, start: int | None = None, end: int | None = None) -> Call:
        return self._call("str.find", sub, params=(start, end))
    def rfind(self, sub: Any, start: int | None = None, end: int | None = None) -> Call:
        return self._call("str.rfind", sub, params=(start, end))
    def swapcase(self) -> Call: return self._call("str.swapcase")
    def title(self) -> Call: return self._call("str.title")
    def removeprefix(self, prefix: Any) -> Call: return self._call("str.removeprefix", prefix)
    def removesuffix(self, suffix: Any) -> Call: return self._call("str.removesuffix", suffix)
    def replace(self, old: Any, new: Any, count: Any = -1) -> Call:
        if isinstance(count, int) and count == -1:
            return self._call("str.replace", old, new)
        return self._call("str.replace", old, new, count)
    def slice(self, start: int, end: int) -> Call: return self._call("str.slice", params=(start, end))
    def parse_int(self, optional: bool = False) -> Call: return self._call("str.parse_int", params=(optional,))
    def parse_float(self, optional: bool = False) -> Call: return self._call("str.parse_float", params=(optional,))
    def parse_bool(
        self, true_values: Any = ("on", "true", "yes", "1"), false_values: Any = ("off", "false", "no", "0"),
        optional: bool = False,
    ) -> Call:
        return self._call("str.parse_bool", params=(optional, tuple(true_values), tuple(false_values)))
    def to_lowercase(self) -> Call: return self.lower()
    def to_uppercase(self) -> Call: return self.upper()


def _duration(value: Any) -> Any:
    """A duration argument as written (``"D"`` prints as ``'D'`` in an expression's repr),
    refused now when it cannot be read."""
    durations.parse(value)
    return value


class DtNamespace(_Namespace):
    """Date-time methods: ``pw.this.t.dt.year()``, ``pw.this.s.dt.strptime(fmt)``."""

    def year(self) -> Call: return self._call("dt.year")
    def month(self) -> Call: return self._call("dt.month")
    def day(self) -> Call: return self._call("dt.day")
    def hour(self) -> Call: return self._call("dt.hour")
    def minute(self) -> Call: return self._call("dt.minute")
    def second(self) -> Call: return self._call("dt.second")
    def millisecond(self) -> Call: return self._call("dt.millisecond")
    def microsecond(self) -> Call: return self._call("dt.microsecond")
    def nanosecond(self) -> Call: return self._call("dt.nanosecond")
    def weekday(self) -> Call: return self._call("dt.weekday")
    def timestamp(self, unit: str | None = None) -> Call:
        """Seconds (``unit="s"``; or "ms", "us", "ns") since the epoch, as a float; without
        a unit (deprecated, as in Pathway), integer nanoseconds."""
        if unit is None:
            warn_user("Not specifying the `unit` argument of the `timestamp()` method is deprecated. "
                      "Please specify its value. Without specifying, it will default to 'ns'.", DeprecationWarning)
        return self._call("dt.timestamp", params=(unit,))
    def strftime(self, fmt: Any) -> Call:
        """The date-time as text, in the format ``fmt`` (chrono's directives, as
        Pathway's; a column of formats too)."""
        if isinstance(fmt, str):
            return self._call("dt.strftime", params=(fmt,))
        return self._call("dt.strftime", fmt, params=(None,))

    def strptime(self, fmt: Any, contains_timezone: bool | None = None) -> Call:
        """The text as a date-time read in the format ``fmt`` (a column of formats too,
        then with ``contains_timezone`` saying whether they read a zone)."""
        if isinstance(fmt, str):
            return self._call("dt.strptime", params=(fmt, contains_timezone))
        if contains_timezone is None:
            raise ValueError("strptime with a format taken from a column needs contains_timezone=True or False: "
                             "whether the formats read a time zone (%z), which decides the result's type")
        return self._call("dt.strptime", fmt, params=(None, contains_timezone))
    def floor(self, duration: Any) -> Call: return self._call("dt.floor", params=(_duration(duration),))
    def round(self, duration: Any) -> Call: return self._call("dt.round", params=(_duration(duration),))
    def to_utc(self, from_timezone: str) -> Call: return self._call("dt.to_utc", params=(from_timezone,))
    def to_naive_in_timezone(self, timezone: str) -> Call:
        return self._call("dt.to_naive_in_timezone", params=(timezone,))
    def add_duration_in_timezone(self, duration: Any, timezone: str) -> Call:
        return self._call("dt.add_duration_in_timezone", duration, params=(timezone,))
    def subtract_duration_in_timezone(self, duration: Any, timezone: str) -> Call:
        return self._call("dt.subtract_duration_in_timezone", duration, params=(timezone,))
    def subtract_date_time_in_timezone(self, date_time: Any, timezone: str) -> Call:
        return self._call("dt.subtract_date_time_in_timezone", date_time, params=(timezone,))
    def from_timestamp(self, unit: str = "s") -> Call: return self._call("dt.from_timestamp", params=(unit,))
    def utc_from_timestamp(self, unit: str = "s") -> Call: return self._call("dt.utc_from_timestamp", params=(unit,))
    def to_duration(self, unit: Any) -> Call:
        """An int column as a Duration of that many ``unit``s ("W", "D", "h", "m", "s",
        "ms", "us", "ns" or their long names; a column of such names too); below the
        microsecond, it is cut toward zero.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("n\\n90")
        >>> pw.debug.compute_and_print(t.select(d=pw.this.n.dt.to_duration("min")), include_id=False)
        d
        0 days 01:30:00
        """
        if isinstance(unit, str) and unit not in durations.NANOS_PER_UNIT:
            raise ValueError(f"to_duration: unknown unit {unit!r}; use one of {', '.join(durations.NANOS_PER_UNIT)}")
        return self._call("dt.to_duration", unit)

    def weeks(self) -> Call: return self._call("dt.weeks")
    def days(self) -> Call: return self._call("dt.days")
    def hours(self) -> Call: return self._call("dt.hours")
    def minutes(self) -> Call: return self._call("dt.minutes")
    def seconds(self) -> Call: return self._call("dt.seconds")
    def milliseconds(self) -> Call: return self._call("dt.milliseconds")
    def microseconds(self) -> Call: return self._call("dt.microseconds")
    def nanoseconds(self) -> Call: return self._call("dt.nanoseconds")


class NumNamespace(_Namespace):
    """Numeric methods: ``pw.this.x.num.abs()``, ``.round(2)``, ``.fill_na(0)``."""

    def abs(self) -> UnOp: return UnOp("abs", self._expr)
    def round(self, decimals: "Expr | int" = 0) -> Call: return self._call("num.round", decimals)
    def fill_na(self, value: int | float) -> Call: return self._call("num.fill_na", params=(value,))


def walk(expr: Expr):
    """Every node of an expression tree, parents first."""
    yield expr
    for child in children(expr):
        yield from walk(child)


def children(expr: Expr) -> tuple[Expr, ...]:
    match expr:
        case BinOp(_, a, b): return (a, b)
        case UnOp(_, a) | Unwrap(a) | Cast(_, a) | IsNone(a, _): return (a,)
        case IfElse(c, t, o): return (c, t, o)
        case FillError(a, r): return (a, r)
        case Coalesce(args) | MakeTuple(args) | PointerFrom(args): return args
        case Require(v, args) | MethodCall(v, args): return (v, *args)
        case IxRef(_, pointer, _, _): return (pointer,)
        case GetItem(a, k, d, _): return (a, k) if d is None else (a, k, d)
        case Apply(_, args, _, _) | Call(_, args, _) | ReducerExpr(_, args, _): return args
    return ()


def replace_children(expr: Expr, new: tuple[Expr, ...]) -> Expr:
    """The same node over other children (in the order ``children`` gives)."""
    match expr:
        case BinOp(op, _, _): return BinOp(op, *new)
        case UnOp(op, _): return UnOp(op, new[0])
        case Unwrap(_): return Unwrap(new[0])
        case Cast(t, _, declared): return Cast(t, new[0], declared)
        case IsNone(_, neg): return IsNone(new[0], neg)
        case IfElse(): return IfElse(*new)
        case FillError(): return FillError(*new)
        case Coalesce(): return Coalesce(new)
        case MakeTuple(): return MakeTuple(new)
        case PointerFrom(_, optional, table): return PointerFrom(new, optional, table)
        case Require(): return Require(new[0], new[1:])
        case MethodCall(): return MethodCall(new[0], new[1:])
        case IxRef(target, _, name, optional): return IxRef(target, new[0], name, optional)
        case GetItem(_, _, d, checked): return GetItem(new[0], new[1], new[2] if d is not None else None, checked)
        case Apply(): return dataclasses.replace(expr, args=new)
        case Call(name, _, params): return Call(name, new, params)
        case ReducerExpr(kind, _, params): return ReducerExpr(kind, new, params)
    return expr


def transform(expr: Expr, fn: Callable[[Expr], Expr | None]) -> Expr:
    """Rebuild an expression bottom-up; ``fn`` returns a replacement or None to keep."""
    replaced = fn(expr)
    if replaced is not None:
        return replaced
    kids = children(expr)
    if not kids:
        return expr
    return replace_children(expr, tuple(transform(k, fn) for k in kids))


# -- expressions as text, as Pathway prints them (in errors and ``repr``) ----------------------

_UNARY = {"neg": "-", "not": "~"}
_REDUCER_PARAMETERS = {"tuple": ("skip_nones",), "sorted_tuple": ("skip_nones",)}
#: Call names printed as ``pathway.<name>(...)`` rather than as a method of their first argument
_FUNCTION_NAMES = {"json_as_int": "as_int", "json_as_float": "as_float", "json_as_str": "as_str", "json_as_bool": "as_bool"}


def expression_text(expr: Expr) -> str:
    """``expr`` as Pathway writes it: tables are numbered ``<table1>``, ``<table2>``... in
    the order the expression mentions them.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a | b\\n1 | 2")
    >>> pw.if_else(t.a > 1, -t.b, pw.this.a.str.lower())
    pathway.if_else((<table1>.a > 1), (-<table1>.b), (pathway.this.a).str.lower())
    """
    return _Printer().text(expr)


class _Printer:
    def __init__(self) -> None:
        self.tables: dict[int, int] = {}

    def text(self, e: Any) -> str:
        if not isinstance(e, Expr):
            return repr(e)
        return getattr(self, "_" + type(e).__name__.lower())(e)

    def _all(self, args: Any) -> str:
        return ", ".join(self.text(a) for a in args)

    def _columnref(self, e: ColumnRef) -> str:
        if getattr(type(e.table), "is_placeholder", False):  # pw.this, pw.left, pw.right
            return f"pathway.{e.table._label}.{e.name}"
        number = self.tables.setdefault(id(e.table), len(self.tables) + 1)
        return f"<table{number}>.{e.name}"

    def _const(self, e: Const) -> str:
        return repr(e.value)

    def _binop(self, e: BinOp) -> str:
        return f"({self.text(e.left)} {e.op} {self.text(e.right)})"

    def _unop(self, e: UnOp) -> str:
        if e.op in _UNARY:
            return f"({_UNARY[e.op]}{self.text(e.arg)})"
        return f"{e.op}({self.text(e.arg)})"

    def _ifelse(self, e: IfElse) -> str:
        return f"pathway.if_else({self._all((e.cond, e.then, e.otherwise))})"

    def _fillerror(self, e: FillError) -> str:
        return f"pathway.fill_error({self._all((e.arg, e.replacement))})"

    def _coalesce(self, e: Coalesce) -> str:
        return f"pathway.coalesce({self._all(e.args)})"

    def _require(self, e: Require) -> str:
        return f"pathway.require({self._all((e.value, *e.args))})"

    def _unwrap(self, e: Unwrap) -> str:
        return f"pathway.unwrap({self.text(e.arg)})"

    def _cast(self, e: Cast) -> str:
        kind = "declare_type" if e.declared else "cast"
        return f"pathway.{kind}({engine_name(e.dtype)}, {self.text(e.arg)})"

    def _isnone(self, e: IsNone) -> str:
        return f"({self.text(e.arg)}).{'is_not_none' if e.negate else 'is_none'}()"

    def _maketuple(self, e: MakeTuple) -> str:
        return f"pathway.make_tuple({self._all(e.args)})"

    def _getitem(self, e: GetItem) -> str:
        if e.checked:
            return f"({self.text(e.arg)})[{self.text(e.key)}]"
        return f"({self.text(e.arg)}).get({self._all((e.key, e.default))})"

    def _apply(self, e: Apply) -> str:
        fn = inspect.unwrap(e.fn)
        kind = "apply_async" if inspect.iscoroutinefunction(fn) else "apply"
        if e.dtype is not None and e.dtype.is_future:  # the fully async executor's
            kind = "apply_fully_async"
        return f"pathway.{kind}({getattr(fn, '__name__', repr(fn))}, {self._all(e.args)})"

    def _call(self, e: Call) -> str:
        arguments = self._all((*e.args[1:], *(p for p in e.params if p is not None)))
        if e.name in _FUNCTION_NAMES:
            return f"pathway.{_FUNCTION_NAMES[e.name]}({self._all(e.args)})"
        return f"({self.text(e.args[0])}).{e.name}({arguments})"

    def _ixref(self, e: IxRef) -> str:
        target = self.text(ColumnRef(e.target, "_")).removesuffix("._")
        return f"{target}.ix({self.text(e.pointer)}).{e.name}"

    def _methodcall(self, e: MethodCall) -> str:
        return f"{self.text(e.method)}({self._all(e.args)})"

    def _pointerfrom(self, e: PointerFrom) -> str:
        if e.table is None:
            return f"pathway.pointer_from({self._all(e.args)})"
        owner = self.text(ColumnRef(e.table, "_")).removesuffix("._")
        return f"{owner}.pointer_from({self._all(e.args)})"

    def _reducerexpr(self, e: ReducerExpr) -> str:
        if e.kind in ("argmin", "argmax"):  # Pathway's take the id as a second argument
            return f"pathway.reducers.{e.kind}({self._all(e.args)}, pathway.this.id)"
        names = _REDUCER_PARAMETERS.get(e.kind, ())
        params = [f"{name}={value!r}" for name, value in zip(names, e.params)] or [repr(p) for p in e.params]
        return f"pathway.reducers.{e.kind}({', '.join([self._all(e.args), *params])})"


