"""Column types: the Pathway type names, and how each maps to Spark and Arrow.

A ``DType`` is a small immutable value.  Every column of every table has one; the
engine uses it to build Spark schemas, Arrow schemas, and to parse text input.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json as _json
import numbers
import operator
import pickle
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Callable

import pyarrow as pa
from pyspark.sql import types as T

from sparkway.errors import PlanTypeError


class Json:
    """A JSON value held in a column (``pw.Json``).

    >>> Json({"a": 1})["a"].value
    1
    """

    __slots__ = ("value",)
    NULL: "Json"

    def __init__(self, value: Any) -> None:
        self.value = value

    def __getitem__(self, key: Any) -> "Json":
        return Json(self.value[key])

    # Python's protocols act on the value, with Python's errors for a value of the wrong
    # kind (len(Json(42)) is "object of type 'int' has no len()"); items come out as Json
    def __int__(self) -> int:
        return int(self.value)

    def __float__(self) -> float:
        return float(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __index__(self) -> int:
        return operator.index(self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __iter__(self) -> Iterator["Json"]:
        return (Json(item) for item in iter(self.value))

    def __reversed__(self) -> Iterator["Json"]:
        return (Json(item) for item in reversed(self.value))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Json) and self.value == other.value

    def __hash__(self) -> int:
        return hash(_json.dumps(self.value, sort_keys=True))

    def __repr__(self) -> str:
        return f"pw.Json({self.value!r})"

    def __str__(self) -> str:
        return _json.dumps(self.value)

    @staticmethod
    def dumps(value: Any) -> str:
        return _json.dumps(value.value if isinstance(value, Json) else value)

    @staticmethod
    def parse(text: str | None) -> "Json | None":
        return None if text is None else Json(_json.loads(text))

    def as_int(self) -> int:
        """The value, when it is an int; else ValueError (``as_str``, ``as_list``... alike).

        >>> Json({"n": 3})["n"].as_int()
        3
        """
        return self._as(int)

    def as_float(self) -> float:
        return self._as(float)

    def as_str(self) -> str:
        return self._as(str)

    def as_bool(self) -> bool:
        return self._as(bool)

    def as_list(self) -> list:
        return self._as(list)

    def as_dict(self) -> dict:
        return self._as(dict)

    def _as(self, kind: type) -> Any:
        # an isinstance check, as Pathway's: Json(True).as_int() is True, and any number
        # (bools too) is a float
        if kind is float and isinstance(self.value, int):
            return float(self.value)
        if not isinstance(self.value, kind):
            raise ValueError(f"Cannot convert Json {self.value} to {kind}")
        return self.value


Json.NULL = Json(None)


class Pointer:
    """The type of row ids (``pw.Pointer``); values are 64-bit integers."""

    def __class_getitem__(cls, item: Any) -> type:
        return cls


class DateTimeNaive(_dt.datetime):
    """A timestamp without a time zone (``pw.DateTimeNaive``)."""


class DateTimeUtc(_dt.datetime):
    """A timestamp in UTC (``pw.DateTimeUtc``)."""


class Duration(_dt.timedelta):
    """A time span (``pw.Duration``)."""


@dataclass(frozen=True)
class DType:
    """One column type: a name, optionally wrapping item types."""

    name: str
    items: tuple["DType", ...] = ()
    optional: bool = False

    def __str__(self) -> str:
        inner = f"[{', '.join(map(str, self.items))}]" if self.items else ""
        text = f"{self.name}{inner}"
        return f"Optional[{text}]" if self.optional else text

    def with_optional(self, optional: bool = True) -> "DType":
        return DType(self.name, self.items, optional)

    @property
    def is_numeric(self) -> bool:
        return self.name in ("int", "float")

    def spark_type(self) -> T.DataType:
        simple = _SPARK_SIMPLE.get(self.name)
        if simple is not None:
            return simple
        if self.name == "list":
            return T.ArrayType(self.items[0].spark_type(), True)
        if self.name == "tuple":
            return T.StructType(
                [T.StructField(f"_{i}", t.spark_type(), True) for i, t in enumerate(self.items)]
            )
        raise PlanTypeError(f"no Spark type for {self}")

    def arrow_type(self) -> pa.DataType:
        simple = _ARROW_SIMPLE.get(self.name)
        if simple is not None:
            return simple
        if self.name == "list":
            return pa.list_(self.items[0].arrow_type())
        if self.name == "tuple":
            return pa.struct([(f"_{i}", t.arrow_type()) for i, t in enumerate(self.items)])
        raise PlanTypeError(f"no Arrow type for {self}")


def python_name(dtype: DType) -> str:
    """How Python names the type of the values of ``dtype`` (``<class 'int'>``), as errors
    about a column's type show it."""
    simple = {"int": int, "float": float, "str": str, "bool": bool, "bytes": bytes}.get(dtype.name)
    if simple is None or dtype.items:
        return str(dtype)
    return f"Optional[{simple}]" if dtype.optional else str(simple)


INT = DType("int")
FLOAT = DType("float")
STR = DType("str")
BOOL = DType("bool")
BYTES = DType("bytes")
JSON = DType("Json")
POINTER = DType("Pointer")
DATE_TIME_NAIVE = DType("DateTimeNaive")
DATE_TIME_UTC = DType("DateTimeUtc")
DURATION = DType("Duration")
ANY = DType("Any")

_SPARK_SIMPLE: dict[str, T.DataType] = {
    "int": T.LongType(),
    "float": T.DoubleType(),
    "str": T.StringType(),
    "bool": T.BooleanType(),
    "bytes": T.BinaryType(),
    "Json": T.StringType(),  # JSON text; parsed where it is read
    "Pointer": T.LongType(),
    "DateTimeNaive": T.TimestampNTZType(),
    "DateTimeUtc": T.TimestampType(),
    "Duration": T.DayTimeIntervalType(),
    "Any": T.BinaryType(),  # pickled Python object
}

_ARROW_SIMPLE: dict[str, pa.DataType] = {
    "int": pa.int64(),
    "float": pa.float64(),
    "str": pa.string(),
    "bool": pa.bool_(),
    "bytes": pa.binary(),
    "Json": pa.string(),
    "Pointer": pa.int64(),
    "DateTimeNaive": pa.timestamp("us"),
    "DateTimeUtc": pa.timestamp("us", tz="UTC"),
    "Duration": pa.duration("us"),
    "Any": pa.binary(),
}

_FROM_PYTHON: dict[Any, DType] = {
    int: INT,
    float: FLOAT,
    str: STR,
    bool: BOOL,
    bytes: BYTES,
    Json: JSON,
    Pointer: POINTER,
    DateTimeNaive: DATE_TIME_NAIVE,
    DateTimeUtc: DATE_TIME_UTC,
    Duration: DURATION,
    _dt.datetime: DATE_TIME_NAIVE,
    _dt.timedelta: DURATION,
    Any: ANY,
    dict: JSON,
}


def dtype_of(annotation: Any) -> DType:
    """The DType of a Python annotation such as ``int``, ``Optional[str]`` or ``list[int]``.

    >>> str(dtype_of(typing.Optional[int]))
    'Optional[int]'
    """
    if isinstance(annotation, DType):
        return annotation
    if annotation is None or annotation is type(None):
        return ANY.with_optional()
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        inner = dtype_of(rest[0]) if len(rest) == 1 else ANY
        return inner.with_optional(len(rest) < len(args) or inner.optional)
    if origin in (list, tuple) and args:
        if origin is list or (len(args) == 2 and args[1] is Ellipsis):
            return DType("list", (dtype_of(args[0]),))
        return DType("tuple", tuple(dtype_of(a) for a in args))
    if origin is list or annotation is list or origin is tuple or annotation is tuple:
        return DType("list", (ANY,))
    if annotation in _FROM_PYTHON:
        return _FROM_PYTHON[annotation]
    if typing.get_origin(annotation) is Pointer or annotation is Pointer:
        return POINTER
    raise PlanTypeError(
        f"unsupported column type {annotation!r}: use int, float, str, bool, bytes, pw.Json, "
        "pw.Pointer, pw.DateTimeNaive, pw.DateTimeUtc, pw.Duration, Optional, list or tuple"
    )


def unify(a: DType, b: DType) -> DType:
    """The type that holds values of both ``a`` and ``b`` (int and float give float)."""
    optional = a.optional or b.optional
    base_a, base_b = a.with_optional(False), b.with_optional(False)
    if base_a == base_b:
        return base_a.with_optional(optional)
    if {base_a, base_b} == {INT, FLOAT}:
        return FLOAT.with_optional(optional)
    if base_a == ANY.with_optional(False) and a.optional:  # a bare None
        return base_b.with_optional(True)
    if base_b == ANY.with_optional(False) and b.optional:
        return base_a.with_optional(True)
    raise PlanTypeError(f"incompatible column types {a} and {b}")


def related(a: DType, b: DType) -> bool:
    """Whether one type narrows the other: the same type but for Optional, ``Any`` and any
    type, or int and float.

    >>> related(INT.with_optional(), INT), related(ANY, STR), related(INT, STR)
    (True, True, False)
    >>> related(DType("tuple", (INT, FLOAT)), DType("tuple", (FLOAT, INT)))
    True
    """
    base_a, base_b = a.with_optional(False), b.with_optional(False)
    if base_a.items and base_a.name == base_b.name and len(base_a.items) == len(base_b.items):
        return all(related(x, y) for x, y in zip(base_a.items, base_b.items))  # tuples item by item
    return base_a == base_b or ANY in (base_a, base_b) or {base_a, base_b} == {INT, FLOAT}


def dtype_of_value(value: Any) -> DType:
    """The DType of a Python constant, e.g. ``dtype_of_value(3) == INT``."""
    if value is None:
        return ANY.with_optional()
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, Json):
        return JSON
    if isinstance(value, _dt.datetime):
        return DATE_TIME_UTC if value.tzinfo is not None else DATE_TIME_NAIVE
    if isinstance(value, tuple):
        return DType("tuple", tuple(dtype_of_value(v) for v in value))
    if isinstance(value, list):
        return DType("list", (dtype_of_value(value[0]) if value else ANY,))
    return dtype_of(type(value))


def to_python(kind: DType) -> Callable[[Any], Any]:
    """Converts a stored value into the Python value users see, as Pathway gives them:
    JSON text -> ``Json``, tuples (structs, as Spark Rows or Arrow dicts) and lists ->
    tuples, ``Any`` (pickled) -> the object."""
    base = kind.with_optional(False)
    if base == JSON:
        return Json.parse
    if base == ANY:
        return lambda v: None if v is None else pickle.loads(v)
    if base.name == "tuple":
        items = [to_python(t) for t in base.items]
        return lambda v: None if v is None else tuple(
            f(x) for f, x in zip(items, v.values() if isinstance(v, dict) else v)
        )
    if base.name == "list":
        item = to_python(base.items[0])
        return lambda v: None if v is None else tuple(item(x) for x in v)
    return lambda v: v


_EXACT_PYTHON = {STR: (str, "String"), INT: (numbers.Integral, "Int")}


def from_python(kind: DType) -> Callable[[Any], Any]:
    """Converts a Python value (a user function's result) into what is stored for ``kind``."""
    base = kind.with_optional(False)
    if base == JSON:
        return lambda v: None if v is None else Json.dumps(v)
    if base == ANY:
        return lambda v: None if v is None else pickle.dumps(v)
    if base.name == "tuple":
        items = [from_python(t) for t in base.items]
        return lambda v: None if v is None else tuple(f(x) for f, x in zip(items, v))
    if base.name == "list":
        item = from_python(base.items[0])
        return lambda v: None if v is None else [item(x) for x in v]
    if base == FLOAT:
        return lambda v: None if v is None else float(v)
    if base in _EXACT_PYTHON:  # as Pathway, no silent conversion of another type
        python_type, name = _EXACT_PYTHON[base]
        return functools.partial(_exactly, python_type, name)
    return lambda v: v


def _exactly(python_type: type, name: str, value: Any) -> Any:
    if value is None or isinstance(value, python_type):
        return value
    raise TypeError(f"cannot create an object of type {name} from value {value}")
