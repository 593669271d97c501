"""Row transformers (``pw.transformer``): classes whose attributes are computed row by row.

A transformer is a class whose inner ``ClassArg`` classes each take a table.  The
attributes of a row are computed on demand, and read other attributes of the same row,
of other rows through their ids (``self.transformer.nodes[pointer].value``), and of other
transformers through method columns (``input_method``).  Each class gives a table with
its input table's ids and a column per output attribute and per method.

How it runs: following pointers from row to row is not a columnar operation, so a
transformer application is a part of the plan built like ``pw.pandas_transformer``.
Every input row becomes one pickled value (``select``), the rows of all the classes are
concatenated and gathered into one row (``concat_reindex`` + ``reduce``), a Spark UDF
evaluates the attributes of all rows from that gathered row (memoized, with a check for
attributes that depend on themselves), and its result is flattened back into rows with
the input ids (``flatten`` + ``with_id``).  A change of any input row recomputes the
transformer, and the step outputs only the rows whose values changed: incremental and
persistent like any other operator, but each change costs the whole tables, so
transformers are meant for small tables (as Pathway advises).

A method column holds, for each row, the row's id; its type (``Callable``) names the
application, class and method it calls.  Calling it (``table.method(10)`` in a
``select``) is itself a small transformer whose input is a table of the calls and whose
gathered row also holds the rows of the method's transformer (and of the transformers
its input methods come from), so that the method runs with everything it may read.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import os
import sys
import threading
import traceback
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from sparkway.api import reducers
from sparkway.api.functions import apply_with_type
from sparkway.api.schema import _assert_matches, schema_from_types
from sparkway.api.table import Table
from sparkway.api.thisclass import this
from sparkway.core import dtypes as dt
from sparkway.core.dtypes import DType, MethodTarget
from sparkway.core.expression import ColumnRef, Expr, MethodCall, transform
from sparkway.core.text import pointer_text
from sparkway.core.type_rules import return_type
from sparkway.engine.expressions import python_pointer_of
from sparkway.errors import ComputationError, PlanError, PlanTypeError, UnknownColumnError, traced
from sparkway.plan import nodes as n

# -- attributes of a ClassArg ---------------------------------------------------------------


class AbstractAttribute:
    """An attribute of a ``ClassArg`` class; its name is the class attribute's name."""

    #: read from the column of the same name of the class's input table
    is_input = False
    #: a column of the class's output table
    is_output = False

    def __init__(self, **params: Any) -> None:
        self.params = params
        self.name: str | None = params.get("name")
        self._dtype = dt.dtype_of(params["dtype"]) if "dtype" in params else None

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = self.name or name


class InputAttribute(AbstractAttribute):
    """A value read from the class's input table (``pw.input_attribute()``)."""

    is_input = True


class InputMethod(AbstractAttribute):
    """A method read from the class's input table, a method column of another
    transformer's output (``pw.input_method()``)."""

    is_input = True


class ComputedAttribute(AbstractAttribute):
    """An attribute computed by a function of the row (``self``)."""

    def __init__(self, func: Callable[..., Any], **params: Any) -> None:
        super().__init__(**params)
        self.func = func
        self.__doc__ = func.__doc__

    @property
    def output_name(self) -> str:
        return self.params.get("output_name", self.name)

    @functools.cached_property
    def dtype(self) -> DType:
        """The type of its values: ``dtype=`` if given, else the function's return annotation."""
        return self._dtype if self._dtype is not None else return_type(self.func)


class Attribute(ComputedAttribute):
    """A computed value other attributes may read, not output (``@pw.attribute``)."""


class OutputAttribute(ComputedAttribute):
    """A computed value, also a column of the output table (``@pw.output_attribute``)."""

    is_output = True


class Method(ComputedAttribute):
    """A function of the row and arguments (``@pw.method``); its output column can be
    called in later operations, or given to another transformer as an input method."""

    is_output = True


def input_attribute(type: Any = float) -> InputAttribute:  # noqa: A002 - Pathway's name
    """An attribute read from the column of the same name of the class's input table.

    >>> import sparkway as pw
    >>> class table(pw.ClassArg):
    ...     a = pw.input_attribute()
    >>> type(table._attributes["a"]).__name__
    'InputAttribute'
    """
    return InputAttribute(dtype=type)


def input_method(type: Any = float) -> InputMethod:  # noqa: A002 - Pathway's name
    """An attribute read from a method column of the class's input table: ``self.m(x)``
    calls the method of the row of the transformer the column comes from.

    >>> import sparkway as pw
    >>> class table(pw.ClassArg):
    ...     m = pw.input_method(int)
    >>> type(table._attributes["m"]).__name__
    'InputMethod'
    """
    return InputMethod(dtype=type)


def _decorator(kind: type[ComputedAttribute], name: str) -> Callable[..., Any]:
    def decorate(func: Callable[..., Any] | None = None, **params: Any) -> Any:
        if func is None:  # used with parameters: @pw.output_attribute(output_name="x")
            return functools.partial(decorate, **params)
        return kind(func, **params)

    decorate.__name__ = decorate.__qualname__ = name
    return decorate


attribute = _decorator(Attribute, "attribute")
attribute.__doc__ = """Decorates a function of the row (``self``) computing a value other
attributes may read, but that is not output.

>>> import sparkway as pw
>>> class table(pw.ClassArg):
...     a = pw.input_attribute()
...     @pw.attribute
...     def twice(self) -> int:
...         return self.a * 2
>>> table._attributes["twice"].dtype
DType(name='int', items=(), optional=False)
"""
output_attribute = _decorator(OutputAttribute, "output_attribute")
output_attribute.__doc__ = """Decorates a function of the row (``self``) computing a column of
the output table; ``output_name=`` names the column otherwise than the function.

>>> import sparkway as pw
>>> class table(pw.ClassArg):
...     a = pw.input_attribute()
...     @pw.output_attribute(output_name="b")
...     def plus_one(self) -> int:
...         return self.a + 1
>>> table._attributes["plus_one"].output_name
'b'
"""
method = _decorator(Method, "method")
method.__doc__ = """Decorates a function of the row and arguments: a method column of the
output table, which later operations can call (``result.select(v=result.m(10))``).

>>> import sparkway as pw
>>> class table(pw.ClassArg):
...     a = pw.input_attribute()
...     @pw.method
...     def times(self, k) -> int:
...         return self.a * k
>>> str(table.output_schema._dtypes()["times"])
'Callable(..., int)'
"""


# -- ClassArg and the transformer --------------------------------------------------------------


class ClassArgMeta(type):
    """The type of ``ClassArg`` classes.  Inside a transformer, ``Transformer.cls(self,
    pointer)`` is the row of class ``cls`` with that id, like
    ``self.transformer.cls[pointer]``."""

    name: str
    transformer: "RowTransformer"
    _attributes: dict[str, AbstractAttribute]

    def __set_name__(cls, owner: type, name: str) -> None:
        cls.name = name

    def __call__(cls, ref: Any, pointer: Any) -> Any:  # type: ignore[override]
        if not isinstance(ref, _Row):
            raise TypeError(
                f"{cls.__name__}(row, pointer) refers to a row of the class from a row of the same "
                "transformer; ClassArg classes are not instantiated"
            )
        evaluation = ref._pw_evaluation
        if cls.transformer.token != evaluation.transformer.token:
            raise ValueError(
                "creating a reference to a class_arg table defined for another transformer: "
                f"{cls.transformer.name}.{cls.name} is not a class of {evaluation.transformer.name}"
            )
        return evaluation.row(cls.name, pointer)


class ClassArg(metaclass=ClassArgMeta):
    """The base of the inner classes of a transformer: each takes a table, whose rows it
    computes attributes of.  ``output=`` a schema checks the output columns.

    >>> import sparkway as pw
    >>> class table(pw.ClassArg):
    ...     a = pw.input_attribute()
    ...     @pw.output_attribute
    ...     def b(self) -> int:
    ...         return self.a + 1
    >>> table.output_schema.column_names()
    ['b']
    """

    transformer: "RowTransformer"  # set by the transformer the class belongs to
    id: int  # the row's id, in the functions of its attributes
    _attributes: dict[str, AbstractAttribute] = {}

    def __init_subclass__(cls, input: Any = Any, output: Any = Any, **kwargs: Any) -> None:  # noqa: A002
        super().__init_subclass__(**kwargs)
        cls.name = cls.__name__
        cls._attributes = {
            name: value for name in dir(cls) if isinstance(value := getattr(cls, name), AbstractAttribute)
        }
        cls.input_schema = input
        cls.output_schema = _schema_of(cls)
        if output is not Any and not _is_subschema(cls.output_schema, output):
            raise RuntimeError(
                f"output schema validation error, received {output.typehints()} vs expected "
                f"{cls.output_schema.typehints()}: the output attributes of {cls.__name__} "
                "(by output_name) must be the schema's columns, with its types"
            )

    def pointer_from(self, *args: Any, optional: bool = False) -> int | None:
        """The id ``table.pointer_from(*args)`` gives to these values (int, str, bool,
        float and pointer values); with ``optional``, None when one is None."""
        return _pointer_from(args, optional)


def _schema_of(cls: type) -> Any:
    outputs = {name: a for name, a in cls._attributes.items() if a.is_output}  # type: ignore[attr-defined]
    return schema_from_types(**{a.output_name: _output_type(a) for a in outputs.values()})


def _output_type(attr: ComputedAttribute) -> DType:
    """The type of an output attribute's column (a method's, without its target yet)."""
    return DType("Callable", (attr.dtype,)) if isinstance(attr, Method) else attr.dtype


def _is_subschema(actual: Any, wanted: Any) -> bool:
    """Whether the output columns are the schema's, each of its type or a narrower one."""
    try:
        _assert_matches(actual, wanted, allow_superset=False, ignore_primary_keys=True, allow_subtype=True)
    except AssertionError:
        return False
    return True


@traced
class RowTransformer:
    """A transformer (``@pw.transformer``): called with a table per ``ClassArg`` class
    (positionally in the order of the classes' names, or by name), it gives their output
    tables."""

    def __init__(self, name: str, class_args: dict[str, ClassArgMeta]) -> None:
        self.name = name
        self.class_args = class_args
        self.token = uuid.uuid4().hex  # stays the same in copies sent to Spark's workers
        for class_name, class_arg in class_args.items():
            class_arg.transformer = self
            class_arg.name = class_name

    @classmethod
    def from_class(cls, transformer_cls: type) -> "RowTransformer":
        """The transformer whose classes are the ``ClassArg`` classes defined in ``transformer_cls``."""
        members = {name: getattr(transformer_cls, name) for name in dir(transformer_cls)}
        class_args = {name: m for name, m in members.items() if isinstance(m, ClassArgMeta)}
        return cls(transformer_cls.__name__, class_args)

    def __call__(self, *args: Table, **kwargs: Table) -> "TransformerResult":
        tables = self._tables_of(args, kwargs)
        return _Application.of(self, tables).result()

    def __getattr__(self, name: str) -> ClassArgMeta:
        class_args = self.__dict__.get("class_args")
        if name.startswith("__") or class_args is None:
            raise AttributeError(name)
        if name not in class_args:
            raise AttributeError(f"transformer {self.name} has no class {name!r}; its classes: {', '.join(class_args)}")
        return class_args[name]

    def _tables_of(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Table]:
        names = list(self.class_args)
        if len(args) > len(names):
            raise TypeError(f"transformer {self.name} takes {len(names)} tables ({', '.join(names)}), got {len(args)}")
        tables = dict(zip(names, args))
        for name, table in kwargs.items():
            if name not in self.class_args:
                raise TypeError(f"transformer {self.name} has no class {name!r}; its classes: {', '.join(names)}")
            if name in tables:
                raise TypeError(f"transformer {self.name} got two tables for class {name!r}")
            tables[name] = table
        missing = [name for name in names if name not in tables]
        if missing:
            raise TypeError(
                f"transformer {self.name} needs a table for each of its classes; missing: {', '.join(missing)}"
            )
        for name, table in tables.items():
            if not isinstance(table, Table):
                raise TypeError(f"transformer {self.name}: class {name!r} takes a table, got {type(table).__name__}")
        return {name: tables[name] for name in names}


def transformer(cls: type) -> RowTransformer:
    """Makes a row transformer of a class whose inner ``pw.ClassArg`` classes each take a
    table.  Attributes are computed for each row on demand, and may read other rows
    through their ids: ``self.transformer.<class>[pointer].<attribute>``.

    >>> import sparkway as pw
    >>> @pw.transformer
    ... class chain:
    ...     class nodes(pw.ClassArg):
    ...         parent = pw.input_attribute()
    ...         @pw.output_attribute
    ...         def depth(self) -> int:
    ...             if self.parent is None:
    ...                 return 0
    ...             return self.transformer.nodes[self.parent].depth + 1
    >>> t = pw.debug.table_from_markdown('''
    ...   | name | parent_name
    ... 1 | a    |
    ... 2 | b    | 1
    ... 3 | c    | 2
    ... ''')
    >>> t = t.select(pw.this.name, parent=t.pointer_from(pw.this.parent_name, optional=True))
    >>> depths = chain(t).nodes
    >>> pw.debug.compute_and_print(t.select(t.name, depths.depth), include_id=False)
    name | depth
    a    | 0
    b    | 1
    c    | 2
    """
    return RowTransformer.from_class(cls)


class TransformerResult:
    """The output tables of a transformer's classes: ``result.nodes`` or ``result["nodes"]``;
    iterating gives the tables in the order of the classes."""

    def __init__(self, tables: dict[str, Table]) -> None:
        self._tables = tables

    def __getattr__(self, name: str) -> Table:
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._tables:
            raise AttributeError(f"the transformer has no class {name!r}; its classes: {', '.join(self._tables)}")
        return self._tables[name]

    def __getitem__(self, name: str) -> Table:
        return self._tables[name]

    def __iter__(self) -> Iterator[Table]:
        return iter(self._tables.values())

    def __len__(self) -> int:
        return len(self._tables)

    def keys(self) -> Any:
        return self._tables.keys()

    def values(self) -> Any:
        return self._tables.values()

    def items(self) -> Any:
        return self._tables.items()


# -- applications: a transformer applied to tables, as plan nodes ----------------------------

# Every application made since the last ``graph.clear()``, by number: method column types
# name applications by number (types stay small values), and calling a method needs the
# tables of its application.
_applications: dict[int, "_Application"] = {}
_numbers = itertools.count()


def clear() -> None:
    """Forgets the applications of the program built so far (``graph.clear()``)."""
    _applications.clear()


@dataclass(frozen=True)
class _ClassSpec:
    """What the executor knows of one class of an application: the input columns it reads
    (in the order of the packed values) and which of them are methods it may call."""

    inputs: tuple[str, ...]
    calls: dict[str, MethodTarget]


@dataclass(frozen=True)
class _ApplicationSpec:
    transformer: RowTransformer
    classes: dict[str, _ClassSpec]


@dataclass(frozen=True)
class _Slot:
    """An output column in the rows the UDF returns: which class, attribute and type."""

    class_arg: str
    attribute: str
    dtype: DType


@dataclass(frozen=True)
class _Spec:
    """Everything the UDF needs: the applications whose rows it gets (the main one and
    those its method columns call), and the output columns of the main one."""

    applications: dict[int, _ApplicationSpec]
    pieces: tuple[tuple[int, str], ...]  # application number and class of each gathered table
    main: int
    outputs: tuple[str, ...]  # the classes whose rows are output, in the order of their tag
    slots: tuple[_Slot, ...]
    user_files: frozenset[str]  # where the transformers' code is: errors name its lines


@dataclass
class _Application:
    """A transformer applied to tables: the plan parts that compute its output tables."""

    number: int
    transformer: RowTransformer
    tables: dict[str, Table]
    classes: dict[str, _ClassSpec]
    evaluated: Table | None = field(default=None, repr=False)

    @staticmethod
    def of(transformer: RowTransformer, tables: dict[str, Table]) -> "_Application":
        classes = {name: _class_spec(transformer, name, table) for name, table in tables.items()}
        application = _Application(next(_numbers), transformer, tables, classes)
        _applications[application.number] = application
        return application

    def closure(self) -> list["_Application"]:
        """This application, and every application the methods it may call belong to."""
        found: dict[int, _Application] = {}
        pending = [self]
        while pending:
            application = pending.pop()
            if application.number in found:
                continue
            found[application.number] = application
            for spec in application.classes.values():
                for target in spec.calls.values():
                    if target.application not in _applications:
                        raise PlanError(
                            f"transformer {application.transformer.name}: a method column comes from a "
                            "transformer applied in an earlier program (before the graph was cleared)"
                        )
                    pending.append(_applications[target.application])
        return list(found.values())

    def result(self) -> TransformerResult:
        return TransformerResult({name: self._output(name) for name in self.tables})

    def _output(self, class_name: str) -> Table:
        """The output table of one class: its output attributes' and methods' columns
        (in the order of the attributes' names), with the input table's ids."""
        class_arg = self.transformer.class_args[class_name]
        source = self.tables[class_name]
        outputs = {name: a for name, a in class_arg._attributes.items() if a.is_output}
        computed = [name for name, a in outputs.items() if not isinstance(a, Method)]
        base = self._evaluated_rows(class_name) if computed else source
        columns: dict[str, DType] = {}
        exprs: list[tuple[str, Expr]] = []
        for name, attr in outputs.items():
            assert isinstance(attr, ComputedAttribute)
            if isinstance(attr, Method):
                target = MethodTarget(self.number, class_name, name)
                columns[attr.output_name] = dt.method_type(attr.dtype, target)
                exprs.append((attr.output_name, ColumnRef(n.InputRef(0), "id")))
            else:
                columns[attr.output_name] = attr.dtype
                exprs.append((attr.output_name, ColumnRef(n.InputRef(0), _slot_name(class_name, name))))
        return base._derive(n.Select(columns, base._node, tuple(exprs)), universe=source._universe)

    def _evaluated_rows(self, class_name: str) -> Table:
        """The computed output attributes of one class's rows, by id (a column per slot)."""
        if self.evaluated is None:
            self.evaluated = _evaluated(self)
        flat = self.evaluated
        position = self._output_classes().index(class_name)
        rows = flat.filter(flat._pw_out[0] == position)
        slots = {
            _slot_name(slot.class_arg, slot.attribute): rows._pw_out[2 + i]
            for i, slot in enumerate(self._slots()) if slot.class_arg == class_name
        }
        rows = rows.select(_pw_id=rows._pw_out[1], **slots)
        return rows.with_id(rows._pw_id)

    def _output_classes(self) -> list[str]:
        return [name for name in self.tables if _computed_outputs(self.transformer.class_args[name])]

    def _slots(self) -> list[_Slot]:
        return [
            _Slot(name, attr, self.transformer.class_args[name]._attributes[attr].dtype)  # type: ignore[attr-defined]
            for name in self._output_classes() for attr in _computed_outputs(self.transformer.class_args[name])
        ]

    def spec(self) -> _Spec:
        closure = self.closure()
        return _Spec(
            applications={a.number: _ApplicationSpec(a.transformer, a.classes) for a in closure},
            pieces=tuple((a.number, class_name) for a, class_name in _pieces(closure)),
            main=self.number,
            outputs=tuple(self._output_classes()),
            slots=tuple(self._slots()),
            user_files=frozenset(f for a in closure for f in _code_files(a.transformer)),
        )


def _computed_outputs(class_arg: ClassArgMeta) -> list[str]:
    return [name for name, a in class_arg._attributes.items() if a.is_output and not isinstance(a, Method)]


def _slot_name(class_name: str, attribute: str) -> str:
    return f"_pw_{class_name}_{attribute}"


def _class_spec(transformer: RowTransformer, class_name: str, table: Table) -> _ClassSpec:
    """The input columns one class reads from its table; those holding methods must be
    method columns (of another transformer's output)."""
    class_arg = transformer.class_args[class_name]
    inputs = tuple(name for name, a in class_arg._attributes.items() if a.is_input)
    columns = table._node.columns
    missing = [name for name in inputs if name not in columns]
    if missing:
        raise UnknownColumnError(
            f"transformer {transformer.name}: class {class_name} reads column(s) {', '.join(map(repr, missing))}, "
            f"which its table does not have (its columns: {', '.join(columns) or 'none'})"
        )
    calls = {name: columns[name].method for name in inputs if columns[name].method is not None}
    for name in inputs:
        if isinstance(class_arg._attributes[name], InputMethod) and name not in calls:
            raise PlanTypeError(
                f"transformer {transformer.name}: input method {class_name}.{name} needs a method column "
                f"(a @pw.method of another transformer's output), and column {name!r} is of type {columns[name]}"
            )
    return _ClassSpec(inputs, calls)


def _code_files(transformer: RowTransformer) -> Iterator[str]:
    for class_arg in transformer.class_args.values():
        for member in vars(class_arg).values():
            func = getattr(member, "func", None) or getattr(member, "__func__", None) or member
            code = getattr(func, "__code__", None)
            if code is not None:
                yield code.co_filename


def _evaluated(application: _Application) -> Table:
    """One row per output row of the application's classes, ``_pw_out = (class position,
    id, *slots)``, computed by the UDF from the gathered rows of the whole closure."""
    spec = application.spec()
    gathered = _gathered(application.closure())
    slot_types = [slot.dtype.with_optional() for slot in spec.slots]
    row_type = DType("list", (DType("tuple", (dt.INT, dt.POINTER, *slot_types)),))

    def evaluate(packed: tuple[tuple, ...]):  # unannotated: its type is given to apply_with_type
        return _evaluate(spec, packed)

    evaluate.__qualname__ = f"transformer {application.transformer.name}"
    applied = gathered.select(_pw_out=apply_with_type(evaluate, row_type, gathered._pw_rows))
    return applied.flatten(this._pw_out)


def _pieces(applications: list[_Application]) -> list[tuple[_Application, str]]:
    """The input tables of these applications, by application and class, in the order
    of their position in the gathered rows (the same whenever the program is built, so
    that a restarted program reads its stored rows alike)."""
    return [(application, class_name) for application in applications for class_name in application.tables]


def _gathered(applications: list[_Application]) -> Table:
    """One row holding every input row of these applications, each pickled with the
    position of its table among ``_pieces`` (``_pw_rows``); none while all are empty."""
    pieces = []
    for position, (application, class_name) in enumerate(_pieces(applications)):
        table = application.tables[class_name]
        columns = [table[name] for name in application.classes[class_name].inputs]
        pack = _packer(position, class_name)
        pieces.append(table.select(_pw_row=apply_with_type(pack, dt.ANY, table.id, *columns)))
    rows = pieces[0].concat_reindex(*pieces[1:]) if len(pieces) > 1 else pieces[0]
    return rows.reduce(_pw_rows=reducers.tuple(rows._pw_row))


def _packer(position: int, class_name: str) -> Callable[..., tuple]:
    def pack(row_id: int, *values: Any) -> tuple:
        return position, row_id, values

    pack.__qualname__ = f"transformer input {class_name}"
    return pack


# -- method calls in expressions --------------------------------------------------------------


def with_method_calls(table: Table, exprs: list[tuple[str, Expr]]) -> list[tuple[str, Expr]]:
    """The named expressions with each call of a method column (``t.method(10)``) over
    ``table``'s rows replaced by the column of its results: all the calls of one
    operation are computed by one transformer, whose output has ``table``'s ids."""
    calls: list[MethodCall] = []

    def collect(e: Expr) -> Expr | None:  # the outermost calls: the select of their arguments computes inner ones
        if isinstance(e, MethodCall):
            calls.append(e)
            return e
        return None

    for _, e in exprs:
        transform(e, collect)
    if not calls:
        return exprs
    arguments: dict[str, Expr] = {}
    for i, call in enumerate(calls):
        arguments[f"method_{i}"] = call.method
        arguments.update({f"arg_{i}_{j}": a for j, a in enumerate(call.args)})
    inputs = table.select(**arguments)
    kinds = [inputs._node.columns[f"method_{i}"] for i in range(len(calls))]
    signature = [(len(call.args), _result_type(call, kind), _method_name(kind)) for call, kind in zip(calls, kinds)]
    results = _method_caller(signature)(table=inputs).table
    positions = {id(call): i for i, call in enumerate(calls)}

    def computed(e: Expr) -> Expr | None:
        if isinstance(e, MethodCall) and id(e) in positions:
            return ColumnRef(results, f"result_{positions[id(e)]}")
        return None

    return [(name, transform(e, computed)) for name, e in exprs]


def _result_type(call: MethodCall, kind: DType) -> DType:
    if kind.name != "Callable" or kind.method is None:
        raise PlanTypeError(
            f"{call!r} calls a column of type {kind}: only method columns (a @pw.method of a "
            "transformer's output) can be called"
        )
    return kind.items[0].with_optional(kind.optional or kind.items[0].optional)


def _method_name(kind: DType) -> str:
    """The method a method column's values call, as errors about its results name it."""
    target = kind.method
    assert target is not None
    application = _applications.get(target.application)  # a stale one: closure() says so
    owner = application.transformer.name if application is not None else "?"
    return f"{owner}.{target.class_arg}.{target.method}"


def _method_caller(signature: list[tuple[int, DType, str]]) -> RowTransformer:
    """A transformer computing, for each row of a table of calls, ``result_i =
    method_i(arg_i_0, ...)`` for each call ``i`` (its number of arguments, result type
    and the method's name)."""
    namespace: dict[str, Any] = {}
    for i, (arity, result_type, name) in enumerate(signature):
        namespace[f"method_{i}"] = InputMethod()
        namespace.update({f"arg_{i}_{j}": InputAttribute() for j in range(arity)})
        namespace[f"result_{i}"] = OutputAttribute(_call_of(i, arity), dtype=result_type, description=name)
    return RowTransformer("method call", {"table": ClassArgMeta("table", (ClassArg,), namespace)})


def _call_of(i: int, arity: int) -> Callable[[Any], Any]:
    def result(self: Any) -> Any:
        method = getattr(self, f"method_{i}")
        return None if method is None else method(*(getattr(self, f"arg_{i}_{j}") for j in range(arity)))

    return result


# -- evaluation, in a Spark UDF ----------------------------------------------------------------

# Attributes that read attributes of other rows recurse in Python, one level per row on
# the path: the evaluation runs in a thread with a large stack, so that chains of many
# thousands of rows work.
_STACK_BYTES = 512 * 1024 * 1024
_RECURSION_LIMIT = 200_000
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _evaluate(spec: _Spec, packed: tuple[tuple, ...]) -> list[tuple]:
    """The output rows ``(class position, id, *slots)`` of the main application."""
    rows: dict[int, dict[str, dict[int, tuple]]] = defaultdict(lambda: defaultdict(dict))
    for position, row_id, values in packed:
        number, class_name = spec.pieces[position]
        rows[number][class_name][row_id] = values
    run = _Run(spec, rows)
    return _on_deep_stack(run.outputs)


def _on_deep_stack(compute: Callable[[], Any]) -> Any:
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = compute()
        except BaseException as error:  # handed to the calling thread
            outcome["error"] = error

    limit = sys.getrecursionlimit()
    size = threading.stack_size(_STACK_BYTES)
    try:
        sys.setrecursionlimit(max(limit, _RECURSION_LIMIT))
        thread = threading.Thread(target=target, name="sparkway-transformer")
        try:
            thread.start()
        except RuntimeError:  # no memory for such a stack here: the usual one, shallower chains
            threading.stack_size(size)
            sys.setrecursionlimit(limit)
            target()
        else:
            thread.join()
    finally:
        threading.stack_size(size)
        sys.setrecursionlimit(limit)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


class _Run:
    """One evaluation of the UDF: the applications' rows, evaluated on demand."""

    def __init__(self, spec: _Spec, rows: dict[int, dict[str, dict[int, tuple]]]) -> None:
        self.spec = spec
        self._rows = rows
        self._evaluations: dict[int, _Evaluation] = {}

    def evaluation(self, number: int) -> "_Evaluation":
        if number not in self._evaluations:
            self._evaluations[number] = _Evaluation(self, self.spec.applications[number], self._rows[number])
        return self._evaluations[number]

    def outputs(self) -> list[tuple]:
        main = self.evaluation(self.spec.main)
        width = len(self.spec.slots)
        out = []
        for position, class_name in enumerate(self.spec.outputs):
            slots = [(i, s) for i, s in enumerate(self.spec.slots) if s.class_arg == class_name]
            for row_id in sorted(main.row_ids(class_name)):
                values: list[Any] = [None] * width
                for i, slot in slots:
                    attr = main.transformer.class_args[class_name]._attributes[slot.attribute]
                    assert isinstance(attr, ComputedAttribute)
                    where = attr.params.get("description", f"{main.transformer.name}.{class_name}.{slot.attribute}")
                    try:
                        value = main.attribute(main.row(class_name, row_id), slot.attribute)
                        values[i] = _fitted(value, slot.dtype, where)
                    except ComputationError:
                        raise
                    except Exception as error:
                        raise _failure(error, self.spec, where, attr.func) from error
                out.append((position, row_id, *values))
        return out


class _Evaluation:
    """The rows of one application and their attributes, each computed once."""

    def __init__(self, run: _Run, spec: _ApplicationSpec, rows: dict[str, dict[int, tuple]]) -> None:
        self.run = run
        self.transformer = spec.transformer
        self._classes = spec.classes
        self._rows = rows
        self._positions = {name: {c: i for i, c in enumerate(s.inputs)} for name, s in spec.classes.items()}
        self._values: dict[tuple[str, int, str], Any] = {}
        self._pending: set[tuple[str, int, str]] = set()

    def row_ids(self, class_name: str) -> Iterator[int]:
        return iter(self._rows.get(class_name, {}))

    def row(self, class_name: str, pointer: Any) -> "_Row":
        if not isinstance(pointer, int) or isinstance(pointer, bool):
            raise TypeError(
                f"rows of {class_name} are found by their id (a pw.Pointer), "
                f"not by {type(pointer).__name__} {pointer!r}"
            )
        if pointer not in self._rows.get(class_name, {}):
            raise KeyError(f"{self.transformer.name}.{class_name} has no row with id {pointer_text(pointer, short=True)}")
        return _Row(self, class_name, pointer)

    def attribute(self, row: "_Row", name: str) -> Any:
        class_name = row._pw_class
        class_arg = self.transformer.class_args[class_name]
        attr = class_arg._attributes.get(name)
        if attr is None:
            return self._class_member(row, class_arg, name)
        if attr.is_input:
            return self._input(class_name, row.id, name)
        assert isinstance(attr, ComputedAttribute)
        if isinstance(attr, Method):
            return functools.partial(attr.func, row)
        key = (class_name, row.id, name)
        if key in self._values:
            return self._values[key]
        if key in self._pending:
            raise RecursionError(
                f"attribute {name} of {self.transformer.name}.{class_name} (row {pointer_text(row.id, short=True)}) depends on "
                "itself, through the attributes it reads"
            )
        self._pending.add(key)
        try:
            value = attr.func(row)
        finally:
            self._pending.discard(key)
        self._values[key] = value
        return value

    def call(self, class_name: str, row_id: int, method_name: str, args: tuple) -> Any:
        row = self.row(class_name, row_id)
        attr = self.transformer.class_args[class_name]._attributes[method_name]
        assert isinstance(attr, Method)
        return attr.func(row, *args)

    def _input(self, class_name: str, row_id: int, name: str) -> Any:
        value = self._rows[class_name][row_id][self._positions[class_name][name]]
        target = self._classes[class_name].calls.get(name)
        if target is None or value is None:
            return value
        return _BoundMethod(self.run, target, value)

    def _class_member(self, row: "_Row", class_arg: ClassArgMeta, name: str) -> Any:
        """What the class itself has under ``name`` (constants, functions, static
        methods, properties), for this row; ``transformer``: the classes' rows."""
        if name == "transformer":
            return _Classes(self)
        member = inspect.getattr_static(class_arg, name, _MISSING)
        if member is _MISSING or name.startswith("__"):
            raise AttributeError(f"`{class_arg.name}` has no attribute `{name}`")
        getter = getattr(type(member), "__get__", None)
        return getter(member, row, class_arg) if getter is not None else member


_MISSING = object()


class _Row:
    """``self`` in the functions of a class's attributes: one row, whose attributes are
    computed when read."""

    __slots__ = ("_pw_evaluation", "_pw_class", "id")

    def __init__(self, evaluation: _Evaluation, class_name: str, row_id: int) -> None:
        self._pw_evaluation = evaluation
        self._pw_class = class_name
        self.id = row_id

    def __getattr__(self, name: str) -> Any:
        return self._pw_evaluation.attribute(self, name)

    def __repr__(self) -> str:
        return f"<row {pointer_text(self.id, short=True)} of {self._pw_evaluation.transformer.name}.{self._pw_class}>"


class _Classes:
    """``self.transformer``: the rows of each class, by id (``self.transformer.nodes[p]``)."""

    def __init__(self, evaluation: _Evaluation) -> None:
        self._evaluation = evaluation

    def __getattr__(self, name: str) -> "_ClassRows":
        if name.startswith("__") or name not in self._evaluation.transformer.class_args:
            raise AttributeError(f"transformer has no attribute `{name}`")
        return _ClassRows(self._evaluation, name)


class _ClassRows:
    def __init__(self, evaluation: _Evaluation, class_name: str) -> None:
        self._evaluation = evaluation
        self._class_name = class_name

    def __getitem__(self, pointer: Any) -> _Row:
        return self._evaluation.row(self._class_name, pointer)


class _BoundMethod:
    """An input method's value: calls the method of the row of the transformer it comes from."""

    def __init__(self, run: _Run, target: MethodTarget, row_id: int) -> None:
        self._run = run
        self._target = target
        self._row_id = row_id

    def __call__(self, *args: Any) -> Any:
        target = self._target
        return self._run.evaluation(target.application).call(target.class_arg, self._row_id, target.method, args)


def _fitted(value: Any, kind: DType, where: str) -> Any:
    """An output attribute's value as its column stores it; a float that is a whole
    number fits an int column (Python's arithmetic gives them, e.g. ``a / 2 * 2``)."""
    if isinstance(value, float) and value.is_integer() and kind.with_optional(False) == dt.INT:
        return int(value)
    if not kind.is_value_compatible(value):
        raise TypeError(
            f"{where} returned {value!r} ({type(value).__name__}), which its type {kind} does not take: "
            "return such a value, or change the function's return annotation"
        )
    return value


def _failure(error: Exception, spec: _Spec, where: str, func: Callable[..., Any]) -> ComputationError:
    """The error of an attribute's computation, naming the line of the transformer's code
    that raised it (or that asked for what was missing), else the attribute's function."""
    kind = type(error).__name__
    message = error.args[0] if isinstance(error, KeyError) and len(error.args) == 1 else error  # unquoted
    text = " ".join(str(message).split())
    code = func.__code__
    origin = _user_line(error, spec.user_files) or (
        f"{code.co_filename}:{code.co_firstlineno}" if code.co_filename in spec.user_files else ""
    )
    at = f" at {origin}" if origin else ""
    return ComputationError.of(kind, f"transformer{at}: {where}: {kind}: {text}")


def _user_line(error: BaseException, user_files: frozenset[str]) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    for frame in reversed(frames):
        if frame.filename in user_files:
            return f"{frame.filename}:{frame.lineno}"
    for frame in reversed(frames):
        if not os.path.abspath(frame.filename).startswith(_PACKAGE):
            return f"{frame.filename}:{frame.lineno}"
    return ""




def _pointer_from(args: tuple, optional: bool) -> int | None:
    if optional and any(a is None for a in args):
        return None
    return python_pointer_of(args)
