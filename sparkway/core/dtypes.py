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
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import types as T

from sparkway.core import durations
from sparkway.errors import PlanTypeError


class Json:
    """A JSON value held in a column (``pw.Json``).

    >>> Json({"a": 1})["a"].value
    1
    """

    __slots__ = ("value",)
    NULL: "Json"

    def __init__(self, value: Any) -> None:
        while isinstance(value, Json):  # pw.Json(pw.Json(x)) is pw.Json(x)
            value = value.value
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
        return Json.dumps(self)

    @staticmethod
    def dumps(value: Any) -> str:
        """JSON text of a value, as Pathway writes it: non-ASCII characters as they are,
        date-times as ISO text with nanoseconds, durations as nanoseconds.

        >>> import datetime
        >>> Json.dumps({"when": datetime.datetime(2025, 3, 14, 10, 13), "city": "Łódź"})
        '{"when": "2025-03-14T10:13:00.000000000", "city": "Łódź"}'
        """
        return _json.dumps(value, ensure_ascii=False, default=_json_value)

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


def _json_value(value: Any) -> Any:
    """What ``Json.dumps`` writes for a value ``json`` cannot write by itself."""
    if isinstance(value, Json):
        return value.value
    if isinstance(value, _dt.datetime):
        nanoseconds = getattr(value, "nanosecond", 0)  # pandas Timestamps have them
        if value.tzinfo is None:
            return f"{value.strftime('%Y-%m-%dT%H:%M:%S.%f')}{nanoseconds:03d}"
        utc = value.astimezone(_dt.timezone.utc)
        return f"{utc.strftime('%Y-%m-%dT%H:%M:%S.%f')}{nanoseconds:03d}+00:00"
    if isinstance(value, _dt.timedelta):
        return durations.nanos(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_Wrapped = typing.TypeVar("_Wrapped")


class PyObjectWrapper(typing.Generic[_Wrapped]):
    """A Python object of any type as a column value (``pw.PyObjectWrapper[T]``); ``value``
    is the object. It is stored pickled, or with the serializer given to
    ``pw.wrap_py_object``.

    >>> wrap_py_object({"a": 1}).value
    {'a': 1}
    """

    __slots__ = ("value", "_serializer")

    def __init__(self, value: _Wrapped, serializer: Any = None) -> None:
        self.value = value
        self._serializer = serializer

    def __repr__(self) -> str:
        return f"PyObjectWrapper({self.value!r})"

    def __reduce__(self) -> tuple:
        if self._serializer is None:
            return (PyObjectWrapper, (self.value,))
        loads = self._serializer.loads  # a function (by reference), not a whole module
        return (_deserialized, (loads, self._serializer.dumps(self.value)))


def _deserialized(loads: Callable[[bytes], Any], data: bytes) -> PyObjectWrapper:
    return PyObjectWrapper(loads(data))


def wrap_py_object(object: _Wrapped, *, serializer: Any = None) -> PyObjectWrapper[_Wrapped]:  # noqa: A002 - Pathway's name
    """``object`` wrapped to be a column value of type ``pw.PyObjectWrapper``; a
    ``serializer`` (with ``dumps`` and ``loads``, such as ``dill``) replaces pickle.

    >>> wrap_py_object([1, 2])
    PyObjectWrapper([1, 2])
    """
    return PyObjectWrapper(object, serializer)


class Pointer:
    """The type of row ids (``pw.Pointer``); values are 64-bit integers.  ``Pointer[int]``
    is the type of ids made from int values (a primary key, a groupby, ``pointer_from``):
    as in Pathway, pointers made from values of other types do not compare.

    >>> dtype_of(Pointer[int, str]), dtype_of(Pointer)
    (DType(name='Pointer', items=(DType(name='int', items=(), optional=False), DType(name='str', items=(), optional=False)), optional=False), DType(name='Pointer', items=(), optional=False))
    """

    def __new__(cls, *items: "DType") -> "DType":  # type: ignore[misc]
        """``Pointer(INT)``: the type itself (ids are ints, never instances), as Pathway's
        ``dtype.Pointer(...)`` makes it."""
        return DType("Pointer", items)

    def __class_getitem__(cls, item: Any) -> Any:
        return types.GenericAlias(cls, item if isinstance(item, tuple) else (item,))


class DateTimeNaive(pd.Timestamp):
    """A date-time without a time zone (``pw.DateTimeNaive``): a pandas ``Timestamp``,
    with nanoseconds; made like one (from ISO text too).

    >>> when = DateTimeNaive("2025-03-14T10:13:00.123456789")
    >>> when, when.nanosecond
    (Timestamp('2025-03-14 10:13:00.123456789'), 789)
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        value = super().__new__(cls, *args, **kwargs)
        if value.tz is not None:
            raise ValueError("DateTimeNaive cannot contain timezone information. "
                             "Use pw.DateTimeUtc for datetimes with a timezone.")
        return value


class DateTimeUtc(pd.Timestamp):
    """A date-time in UTC (``pw.DateTimeUtc``): a pandas ``Timestamp`` with a time zone,
    given as ``tz`` or ``tzinfo`` (or in ISO text).

    >>> DateTimeUtc(2025, 1, 17, tz="UTC").isoformat()
    '2025-01-17T00:00:00+00:00'
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        value = super().__new__(cls, *args, **kwargs)
        if value.tz is None:
            raise ValueError("DateTimeUtc must contain timezone information. "
                             "Use pw.DateTimeNaive for naive datetimes.")
        return value


class Duration(pd.Timedelta):
    """A time span (``pw.Duration``): a pandas ``Timedelta``, with nanoseconds.

    >>> Duration(minutes=2, nanoseconds=5)
    Timedelta('0 days 00:02:00.000000005')
    """


@dataclass(frozen=True, repr=False)
class DType:
    """One column type: a name, optionally wrapping item types; an ``Array`` (numpy
    arrays) wraps its element type and knows its number of dimensions, when fixed; a
    ``Callable`` (a method column of a row transformer) wraps its result type and says
    which method its values call (``method``, see ``method_type``)."""

    name: str
    items: tuple["DType", ...] = ()
    optional: bool = False
    n_dim: int | None = None
    method: "MethodTarget | None" = None

    def __repr__(self) -> str:
        dims = f", n_dim={self.n_dim}" if self.n_dim is not None else ""
        method = f", method={self.method!r}" if self.method is not None else ""
        return f"DType(name={self.name!r}, items={self.items!r}, optional={self.optional!r}{dims}{method})"

    def __str__(self) -> str:
        if self.name == "Callable":
            text = f"Callable(..., {self.items[0]})"
        elif self.name == "Array":
            dims = [] if self.n_dim is None else [str(self.n_dim)]
            element = [] if self.items[0] == ANY else [str(self.items[0])]
            text = f"Array({', '.join(dims + element)})" if dims or element else "Array"
        else:
            inner = f"[{', '.join(map(str, self.items))}]" if self.items else ""
            text = f"{self.name}{inner}"
        return f"Optional[{text}]" if self.optional else text

    def with_optional(self, optional: bool = True) -> "DType":
        if self.is_future:  # a future of an optional value
            return DType(self.name, (self.items[0].with_optional(optional),))
        return replace(self, optional=optional)

    @property
    def typehint(self) -> Any:
        """The Python annotation of this type's values (Pathway's ``DType.typehint``)."""
        return python_type(self)

    @property
    def is_array(self) -> bool:
        return self.name == "Array"

    @property
    def is_pointer(self) -> bool:
        """A row id: of any origin (``POINTER``), or made from values of ``items``' types."""
        return self.name == "Pointer"

    @property
    def is_future(self) -> bool:
        """A fully async UDF's result before ``Table.await_futures()``: its values are
        ``items[0]``'s, but no operation takes it (as in Pathway)."""
        return self.name == "Future"

    def is_value_compatible(self, value: Any) -> bool:
        """Whether a Python value is one of this type's values.

        >>> DType("list", (INT,)).is_value_compatible([1, 2]), INT.is_value_compatible(1.5)
        (True, False)
        """
        if self.is_future:
            return self.items[0].is_value_compatible(value)
        if value is None:
            return self.optional or self.name == "Any"
        if self.name == "list":
            return isinstance(value, (list, tuple)) and all(self.items[0].is_value_compatible(v) for v in value)
        if self.name == "tuple":
            return (isinstance(value, (list, tuple)) and len(value) == len(self.items)
                    and all(t.is_value_compatible(v) for t, v in zip(self.items, value)))
        if self.is_array:
            kinds = {"int": "iu", "float": "iuf"}.get(self.items[0].name, "iuf")
            return (isinstance(value, np.ndarray) and value.dtype.kind in kinds
                    and self.n_dim in (None, value.ndim))
        check = _VALUE_CHECKS.get(self.name)
        return check is None or check(value)

    @property
    def is_numeric(self) -> bool:
        return self.name in ("int", "float")

    def spark_type(self) -> T.DataType:
        if self.is_future:
            return self.items[0].spark_type()
        simple = _SPARK_SIMPLE.get(self.name)
        if simple is not None:
            return simple
        if self.name == "list":
            return T.ArrayType(self.items[0].spark_type(), True)
        if self.name == "tuple":
            return T.StructType(
                [T.StructField(f"_{i}", t.spark_type(), True) for i, t in enumerate(self.items)]
            )
        if self.name == "Array":
            return _ARRAY_SPARK
        raise PlanTypeError(f"no Spark type for {self}")

    def arrow_type(self) -> pa.DataType:
        if self.is_future:
            return self.items[0].arrow_type()
        simple = _ARROW_SIMPLE.get(self.name)
        if simple is not None:
            return simple
        if self.name == "list":
            return pa.list_(self.items[0].arrow_type())
        if self.name == "tuple":
            return pa.struct([(f"_{i}", t.arrow_type()) for i, t in enumerate(self.items)])
        if self.name == "Array":
            return ARRAY_ARROW
        raise PlanTypeError(f"no Arrow type for {self}")


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


# per type name, whether a Python value is of the type (types not here take any value)
_VALUE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "int": _is_int,
    "float": lambda v: _is_int(v) or isinstance(v, (float, np.floating)),
    "str": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, (bool, np.bool_)),
    "bytes": lambda v: isinstance(v, bytes),
    "Pointer": _is_int,
    "DateTimeNaive": lambda v: isinstance(v, _dt.datetime) and v.tzinfo is None,
    "DateTimeUtc": lambda v: isinstance(v, _dt.datetime) and v.tzinfo is not None,
    "Duration": lambda v: isinstance(v, _dt.timedelta),
    "PyObjectWrapper": lambda v: isinstance(v, PyObjectWrapper),
}


def python_name(dtype: DType) -> str:
    """How Python names the type of the values of ``dtype``, as Pathway's errors about a
    column's type show it.

    >>> python_name(INT), python_name(FLOAT.with_optional()), python_name(DType("tuple", (INT, STR)))
    ("<class 'int'>", 'float | None', 'tuple[int, str]')
    """
    if dtype.is_future:
        inner = dtype.items[0]
        base = inner.with_optional(False)
        text = base.name if base.name in ("int", "float", "str", "bool", "bytes") else str(base)
        return f"_asyncio.Future[{text}{' | None' if inner.optional else ''}]"
    return str(python_type(dtype))


# Pathway's engine names of the types (its schemas and expressions print them)
_ENGINE_NAMES = {
    "int": "INT", "float": "FLOAT", "str": "STR", "bool": "BOOL", "bytes": "BYTES", "Json": "Json",
    "Pointer": "ANY_POINTER", "DateTimeNaive": "DATE_TIME_NAIVE", "DateTimeUtc": "DATE_TIME_UTC",
    "Duration": "DURATION", "Any": "ANY",
}
# the classes Pathway's annotations name (its schemas' reprs print them)
_PATHWAY_CLASSES = {
    "Json": "pathway.internals.json.Json",
    "DateTimeNaive": "pathway.internals.datetime_types.DateTimeNaive",
    "DateTimeUtc": "pathway.internals.datetime_types.DateTimeUtc",
    "Duration": "pathway.internals.datetime_types.Duration",
    "Pointer": "pathway.engine.Pointer",
}


def engine_name(dtype: "DType") -> str:
    """A type as Pathway names it in schemas and expressions.

    >>> engine_name(INT.with_optional()), engine_name(DType("tuple", (INT, JSON))), engine_name(POINTER)
    ('Optional(INT)', 'Tuple(INT, Json)', 'ANY_POINTER')
    """
    if dtype == NONE:
        return "NONE"
    base = dtype.with_optional(False)
    if base.name == "list":
        text = f"List({engine_name(base.items[0])})"
    elif base.name in ("tuple", "Future"):
        text = f"{base.name.capitalize()}({', '.join(engine_name(t) for t in base.items)})"
    elif base.is_array:
        parts = [str(base.n_dim)] * (base.n_dim is not None) + [engine_name(base.items[0])] * (base.items[0] != ANY)
        text = f"Array({', '.join(parts)})" if parts else "Array"
    elif base.name == "PyObjectWrapper":
        text = "PyObjectWrapper(<class 'object'>)"
    elif base.is_pointer and base.items:
        text = f"Pointer({', '.join(engine_name(t) for t in base.items)})"
    else:
        text = _ENGINE_NAMES[base.name]
    return f"Optional({text})" if dtype.optional and base != ANY else text


def python_source(dtype: "DType") -> str:
    """The annotation of a type as Python source, under ``import typing``, ``import numpy
    as np`` and ``import sparkway as pw``.

    >>> python_source(DType("tuple", (INT, JSON.with_optional()))), python_source(ANY)
    ('tuple[int, pw.Json | None]', 'typing.Any')
    """
    base = dtype.with_optional(False)
    if base.name == "Any":
        return "typing.Optional[typing.Any]" if dtype.optional else "typing.Any"
    if base.name in ("list", "tuple"):
        text = f"{base.name}[{', '.join(python_source(t) for t in base.items)}]"
    elif base.is_array:
        element = base.items[0].name if base.items[0].name in ("int", "float") else "typing.Any"
        shape = "typing.Any" if base.n_dim is None else "None" if base.n_dim == 0 else f"tuple[{', '.join(['int'] * base.n_dim)}]"
        text = f"np.ndarray[{shape}, np.dtype[{element}]]"
    elif base.is_pointer and base.items:
        text = f"pw.Pointer[{', '.join(python_source(t) for t in base.items)}]"
    elif base.name in ("int", "float", "str", "bool", "bytes"):
        text = base.name
    else:
        text = f"pw.{base.name}"
    return f"{text} | None" if dtype.optional else text


def pathway_annotation(dtype: "DType", nested: bool = False) -> str:
    """The Python annotation of a type as Pathway's schema reprs print it (a bare class as
    ``<class 'int'>``, inside a generic or a union by its name).

    >>> pathway_annotation(INT), pathway_annotation(JSON.with_optional()), pathway_annotation(DType("list", (INT,)))
    ("<class 'int'>", 'pathway.internals.json.Json | None', 'list[int]')
    """
    base = dtype.with_optional(False)
    if base.name == "Any":
        return "typing.Any"
    if base.name == "list":
        text = f"list[{pathway_annotation(base.items[0], True)}]"
    elif base.name == "tuple":
        text = f"tuple[{', '.join(pathway_annotation(t, True) for t in base.items)}]"
    elif base.is_array:
        element = base.items[0].name if base.items[0].name in ("int", "float") else "typing.Any"
        text = f"numpy.ndarray[tuple[int, ...], numpy.dtype[{element}]]"
    elif base.is_future:
        return pathway_annotation(base.items[0], nested)
    elif base.name == "PyObjectWrapper":
        text = "pathway.engine.PyObjectWrapper[object]"
    elif base.is_pointer and base.items:
        text = f"pathway.engine.Pointer[{', '.join(pathway_annotation(t, True) for t in base.items)}]"
    else:
        name = _PATHWAY_CLASSES.get(base.name, base.name)
        text = name if nested or dtype.optional else f"<class '{name}'>"
    return f"{text} | None" if dtype.optional else text


INT = DType("int")
FLOAT = DType("float")
STR = DType("str")
BOOL = DType("bool")
BYTES = DType("bytes")
JSON = DType("Json")
POINTER = DType("Pointer")


def pointer_to(*keys: "DType") -> "DType":
    """The type of ids made from values of the ``keys`` types (``Pointer[int, str]``)."""
    return DType("Pointer", tuple(keys))
DATE_TIME_NAIVE = DType("DateTimeNaive")
DATE_TIME_UTC = DType("DateTimeUtc")
DURATION = DType("Duration")
ANY = DType("Any")
PY_OBJECT = DType("PyObjectWrapper")


@dataclass(frozen=True)
class MethodTarget:
    """The method a method column's values call: ``method`` of the rows of class
    ``class_arg`` in the row transformer application numbered ``application`` (the
    values are those rows' ids)."""

    application: int
    class_arg: str
    method: str


def method_type(result: DType, target: MethodTarget) -> DType:
    """The type of a method column (Pathway's ``Callable(..., result)``) whose values call
    ``target``.

    >>> str(method_type(INT, MethodTarget(0, "table", "c")))
    'Callable(..., int)'
    """
    return DType("Callable", (result,), method=target)


def Optional(wrapped: Any) -> DType:  # noqa: N802 - Pathway's name
    """The type of ``wrapped``'s values or None: ``Optional(INT) == dtype_of(int | None)``."""
    return dtype_of(wrapped).with_optional(True)

#: the type of ``None`` alone (Pathway's ``dtype.NONE``): an optional ``Any``, which
#: unifies with any type into its optional version
NONE = ANY.with_optional()


def Array(n_dim: int | None = None, wrapped: Any = None) -> DType:  # noqa: N802 - Pathway's name
    """The type of numpy array columns: ``n_dim`` dimensions (None: any number), elements
    of type ``wrapped`` (int or float; None or Any: either).

    >>> str(Array(2, int)), str(Array())
    ('Array(2, int)', 'Array')
    """
    element = ANY if wrapped is None else wrapped if isinstance(wrapped, DType) else dtype_of(wrapped)
    if element.is_array:  # an array of arrays is an array of more dimensions
        inner = element.n_dim
        n_dim, element = (None if n_dim is None or inner is None else n_dim + inner), element.items[0]
    return DType("Array", (element,), n_dim=n_dim)


ANY_ARRAY = Array()
ANY_ARRAY_1D = Array(1)
ANY_ARRAY_2D = Array(2)
INT_ARRAY = Array(None, INT)
INT_ARRAY_1D = Array(1, INT)
INT_ARRAY_2D = Array(2, INT)
FLOAT_ARRAY = Array(None, FLOAT)
FLOAT_ARRAY_1D = Array(1, FLOAT)
FLOAT_ARRAY_2D = Array(2, FLOAT)

# An array value in Spark and Arrow: its shape and its values in row-major order, as
# int64 or float64 (the other one null), so that arrays of every shape and element type
# share one type (a column typed Array can hold int and float arrays, as in Pathway).
_ARRAY_SPARK = T.StructType([
    T.StructField("shape", T.ArrayType(T.LongType())),
    T.StructField("ints", T.ArrayType(T.LongType())),
    T.StructField("floats", T.ArrayType(T.DoubleType())),
])
ARRAY_ARROW = pa.struct([
    ("shape", pa.list_(pa.int64())), ("ints", pa.list_(pa.int64())), ("floats", pa.list_(pa.float64())),
])


def array_to_python(stored: Any) -> np.ndarray:
    """A stored array (a Spark Row or an Arrow dict with shape, ints, floats) as numpy's."""
    ints = stored["ints"]
    flat = np.array(ints, dtype=np.int64) if ints is not None else np.array(stored["floats"], dtype=np.float64)
    return flat.reshape(stored["shape"])


def array_from_python(value: Any, element: "DType | None" = None) -> dict[str, Any]:
    """What is stored for a numpy array (or anything ``np.asarray`` takes) of ints or
    floats; a column of float arrays (``element``) takes int arrays as floats, as Pathway.

    >>> array_from_python(np.array([[1, 2]]))
    {'shape': [1, 2], 'ints': [1, 2], 'floats': None}
    """
    array = np.asarray(value)
    shape = [int(d) for d in array.shape]
    kind = array.dtype.kind
    if kind in "iu" and element != FLOAT:
        return {"shape": shape, "ints": array.astype(np.int64).ravel().tolist(), "floats": None}
    if kind in "iuf" and element != INT:
        return {"shape": shape, "ints": None, "floats": array.astype(np.float64).ravel().tolist()}
    raise TypeError(
        f"cannot store a numpy array of {array.dtype} in a column of type {Array(None, element)}: "
        "convert it first, e.g. with .astype(int) or .astype(float)"
    )


_SPARK_SIMPLE: dict[str, T.DataType] = {
    "int": T.LongType(),
    "float": T.DoubleType(),
    "str": T.StringType(),
    "bool": T.BooleanType(),
    "bytes": T.BinaryType(),
    "Json": T.StringType(),  # JSON text; parsed where it is read
    "Pointer": T.LongType(),
    # nanoseconds since the epoch (naive: a wall-clock reading; UTC: an instant), and
    # nanoseconds of a duration, as Pathway keeps them (Spark's own types hold microseconds)
    "DateTimeNaive": T.LongType(),
    "DateTimeUtc": T.LongType(),
    "Duration": T.LongType(),
    "Any": T.BinaryType(),  # pickled Python object
    "PyObjectWrapper": T.BinaryType(),  # a pickled PyObjectWrapper
    "Callable": T.LongType(),  # a method column: the id of the row whose method it calls
}

_ARROW_SIMPLE: dict[str, pa.DataType] = {
    "int": pa.int64(),
    "float": pa.float64(),
    "str": pa.string(),
    "bool": pa.bool_(),
    "bytes": pa.binary(),
    "Json": pa.string(),
    "Pointer": pa.int64(),
    "DateTimeNaive": pa.int64(),
    "DateTimeUtc": pa.int64(),
    "Duration": pa.int64(),
    "Any": pa.binary(),
    "PyObjectWrapper": pa.binary(),
    "Callable": pa.int64(),
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
_TO_PYTHON: dict[DType, Any] = {
    INT: int, FLOAT: float, STR: str, BOOL: bool, BYTES: bytes, JSON: Json, POINTER: Pointer,
    DATE_TIME_NAIVE: DateTimeNaive, DATE_TIME_UTC: DateTimeUtc, DURATION: Duration, ANY: Any,
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
    if annotation is Pointer:
        return POINTER
    if origin is Pointer:
        return pointer_to(*(dtype_of(a) for a in args))
    if annotation is PyObjectWrapper or origin is PyObjectWrapper:
        return PY_OBJECT
    if annotation is np.ndarray or origin is np.ndarray:
        return _array_of_annotation(args)
    raise PlanTypeError(
        f"unsupported column type {annotation!r}: use int, float, str, bool, bytes, pw.Json, "
        "pw.Pointer, pw.DateTimeNaive, pw.DateTimeUtc, pw.Duration, Optional, list, tuple or np.ndarray"
    )


def python_type(dtype: DType) -> Any:
    """The Python annotation of ``dtype``'s values, as Pathway's ``typehints()`` give it.

    >>> python_type(INT.with_optional()), python_type(DType("tuple", (INT, STR)))
    (int | None, tuple[int, str])
    """
    base = dtype.with_optional(False)
    if base.is_array:
        annotation: Any = np.ndarray
    elif base.name == "list":
        annotation = list[python_type(base.items[0])]
    elif base.name == "tuple":
        annotation = tuple[tuple(python_type(item) for item in base.items)]
    elif base.name == "Future":  # a value a fully async UDF computes: its value's annotation
        annotation = python_type(base.items[0])
    elif base.is_pointer and base.items:
        annotation = Pointer[tuple(python_type(item) for item in base.items)]
    elif base.name == "Callable":
        annotation = typing.Callable[..., python_type(base.items[0])]
    else:
        annotation = _TO_PYTHON[base]
    if not dtype.optional:
        return annotation
    return typing.Optional[annotation] if annotation is Any else annotation | None


wrap = dtype_of  # Pathway's name (pw.internals.dtype.wrap)


def _array_of_annotation(args: tuple) -> DType:
    """``np.ndarray[shape, np.dtype[element]]`` (or bare ``np.ndarray``) as an Array type:
    ``tuple[int, int]`` fixes two dimensions, ``tuple[int, ...]`` or Any none, and None
    (as Pathway reads it) zero."""
    if not args:
        return ANY_ARRAY
    shape, element = args
    if shape is None:
        n_dim: int | None = 0
    elif typing.get_origin(shape) is tuple and Ellipsis not in typing.get_args(shape):
        n_dim = len(typing.get_args(shape))
    else:
        n_dim = None
    if typing.get_origin(element) is np.dtype:
        (element,) = typing.get_args(element)
    if isinstance(element, type) and issubclass(element, (np.integer, int)) and element is not bool:
        return Array(n_dim, INT)
    if isinstance(element, type) and issubclass(element, (np.floating, float)):
        return Array(n_dim, FLOAT)
    return Array(n_dim, ANY)


def unify(a: DType, b: DType) -> DType:
    """The type that holds values of both ``a`` and ``b`` (int and float give float)."""
    optional = a.optional or b.optional
    base_a, base_b = a.with_optional(False), b.with_optional(False)
    if base_a == base_b:
        return base_a.with_optional(optional)
    if base_a.is_pointer and base_b.is_pointer:
        return _unify_pointers(base_a, base_b).with_optional(optional)
    if base_a.is_array and base_b.is_array:  # what both have in common: dimensions, element type
        n_dim = base_a.n_dim if base_a.n_dim == base_b.n_dim else None
        element = base_a.items[0] if base_a.items == base_b.items else ANY
        return Array(n_dim, element).with_optional(optional)
    if {base_a, base_b} == {INT, FLOAT}:
        return FLOAT.with_optional(optional)
    if base_a == ANY.with_optional(False) and a.optional:  # a bare None
        return base_b.with_optional(True)
    if base_b == ANY.with_optional(False) and b.optional:
        return base_a.with_optional(True)
    if base_a.name == base_b.name == "Callable":
        raise PlanTypeError(
            "method columns of different transformers or methods cannot be combined in one column "
            "(if_else, coalesce, concat): a method column calls one method of one application of a transformer"
        )
    raise PlanTypeError(f"incompatible column types {a} and {b}")


def _unify_pointers(a: DType, b: DType) -> DType:
    """Ids of any origin take any ids; typed ids need the same key types (Any takes any)."""
    if not a.items or not b.items:
        return POINTER
    if len(a.items) != len(b.items) or any(x != y and ANY not in (x, y) for x, y in zip(a.items, b.items)):
        raise PlanTypeError(f"incompatible column types {engine_name(a)} and {engine_name(b)}")
    return DType("Pointer", tuple(x if x == y else ANY for x, y in zip(a.items, b.items)))


def related(a: DType, b: DType) -> bool:
    """Whether one type narrows the other: the same type but for Optional, ``Any`` and any
    type, or int and float.

    >>> related(INT.with_optional(), INT), related(ANY, STR), related(INT, STR)
    (True, True, False)
    >>> related(DType("tuple", (INT, FLOAT)), DType("tuple", (FLOAT, INT)))
    True
    """
    base_a, base_b = a.with_optional(False), b.with_optional(False)
    if base_a.is_array and base_b.is_array:
        return arrays_equivalent(base_a, base_b)
    if base_a.is_pointer and base_b.is_pointer:
        try:
            return _unify_pointers(base_a, base_b) is not None
        except PlanTypeError:
            return False
    if base_a.items and base_a.name == base_b.name and len(base_a.items) == len(base_b.items):
        return all(related(x, y) for x, y in zip(base_a.items, base_b.items))  # tuples item by item
    return base_a == base_b or ANY in (base_a, base_b) or {base_a, base_b} == {INT, FLOAT}


def arrays_equivalent(a: DType, b: DType) -> bool:
    """Whether two Array types may describe the same arrays: an unknown number of
    dimensions or element type (Any) matches any.

    >>> arrays_equivalent(Array(1, INT), Array(None, INT)), arrays_equivalent(Array(1), Array(2))
    (True, False)
    """
    dims = a.n_dim is None or b.n_dim is None or a.n_dim == b.n_dim
    elements = ANY in (a.items[0], b.items[0]) or a.items == b.items
    return dims and elements


def array_item(array: DType) -> DType:
    """The type of ``array[i]`` and of a flattened array's rows: one dimension less, and
    the element itself from a one-dimensional array (Array(2, int) -> Array(1, int) -> int)."""
    if array.n_dim is None:
        return array.with_optional(False)
    if array.n_dim <= 1:
        return array.items[0]
    return Array(array.n_dim - 1, array.items[0])


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
    if isinstance(value, _dt.timedelta):  # pandas Timedeltas too
        return DURATION
    if isinstance(value, tuple):
        return DType("tuple", tuple(dtype_of_value(v) for v in value))
    if isinstance(value, list):
        return DType("list", (dtype_of_value(value[0]) if value else ANY,))
    if isinstance(value, np.ndarray):
        kind = {"i": INT, "u": INT, "f": FLOAT}.get(value.dtype.kind, ANY)
        return Array(value.ndim, kind)
    return dtype_of(type(value))


def to_python(kind: DType) -> Callable[[Any], Any]:
    """Converts a stored value into the Python value users see, as Pathway gives them:
    JSON text -> ``Json``, tuples (structs, as Spark Rows or Arrow dicts) and lists ->
    tuples, ``Any`` (pickled) -> the object."""
    base = kind.with_optional(False)
    if base.is_future:
        return to_python(base.items[0])
    if base == JSON:
        return Json.parse
    if base in (ANY, PY_OBJECT):
        return lambda v: None if v is None else pickle.loads(v)
    if base.is_array:
        return lambda v: None if v is None else array_to_python(v)
    if base.name == "tuple":
        items = [to_python(t) for t in base.items]
        return lambda v: None if v is None else tuple(
            f(x) for f, x in zip(items, v.values() if isinstance(v, dict) else v)
        )
    if base.name == "list":
        item = to_python(base.items[0])
        return lambda v: None if v is None else tuple(item(x) for x in v)
    if base.name in _TIME_OF_NANOS:
        of_nanos = _TIME_OF_NANOS[base.name]
        return lambda v: None if v is None else of_nanos(v)
    return lambda v: v


# the Python value of a date-time or duration stored as nanoseconds, as Pathway gives it
_TIME_OF_NANOS: dict[str, Callable[[int], Any]] = {
    "DateTimeNaive": durations.naive_of, "DateTimeUtc": durations.utc_of, "Duration": durations.timedelta_of,
}


_EXACT_PYTHON = {STR: (str, "String"), INT: (numbers.Integral, "Int")}


def from_python(kind: DType) -> Callable[[Any], Any]:
    """Converts a Python value (a user function's result) into what is stored for ``kind``."""
    base = kind.with_optional(False)
    if base.is_future:
        return from_python(base.items[0])
    if base == JSON:
        return lambda v: None if v is None else Json.dumps(v)
    if base == ANY:
        return lambda v: None if v is None else pickle.dumps(v)
    if base == PY_OBJECT:
        return lambda v: None if v is None else pickle.dumps(_exactly(PyObjectWrapper, "PyObjectWrapper", v))
    if base.is_array:
        return lambda v: None if v is None else array_from_python(v, base.items[0])
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
    if base.name in _TIME_OF_NANOS:
        return functools.partial(_time_nanos, base.name)
    return lambda v: v


def _time_nanos(name: str, value: Any) -> int | None:
    """The nanoseconds stored for a date-time or duration a user's code gave, refusing
    values of another kind as Pathway does (a naive date-time for a UTC column...)."""
    if value is None:
        return None
    if name == "Duration":
        if not isinstance(value, _dt.timedelta):
            raise TypeError(f"cannot create an object of type Duration from value {value}")
        return durations.nanos(value)
    if not isinstance(value, _dt.datetime):
        raise ValueError(f"cannot convert {type(value).__name__} to {name}: give a datetime or a pd.Timestamp")
    if name == "DateTimeUtc" and value.tzinfo is None:
        raise ValueError("cannot create DateTimeUtc from a datetime without timezone information. Pass a "
                         "datetime with timezone information or change the type to DateTimeNaive")
    if name == "DateTimeNaive" and value.tzinfo is not None:
        raise ValueError("cannot create DateTimeNaive from a datetime with timezone information. Pass a "
                         "datetime without timezone information or change the type to DateTimeUtc")
    return durations.nanos(value)


def _exactly(python_type: type, name: str, value: Any) -> Any:
    if value is None or isinstance(value, python_type):
        return value
    raise TypeError(f"cannot create an object of type {name} from value {value}")
