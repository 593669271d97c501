"""Table schemas: ``class S(pw.Schema): name: type``."""

from __future__ import annotations

import csv
import functools
import inspect
import itertools
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from sparkway.core.columns import NO_DEFAULT, Column
from sparkway.core import dtypes as dt
from sparkway.core import serialized
from sparkway.core.dtypes import DType, dtype_of


@dataclass(frozen=True)
class SchemaProperties:
    """Options of a whole schema: ``append_only`` says that its table's rows are only
    ever inserted.

    >>> import sparkway as pw
    >>> class Event(pw.Schema, append_only=True):
    ...     name: str
    >>> Event.universe_properties.append_only
    True
    """

    append_only: bool | None = None


@dataclass(frozen=True)
class ColumnDefinition:
    """What ``pw.column_definition`` returns: options of one schema column."""

    primary_key: bool = False
    default_value: Any = NO_DEFAULT
    dtype: Any = None
    name: str | None = None
    append_only: bool | None = None

    @property
    def has_default(self) -> bool:
        return self.default_value is not NO_DEFAULT


def column_definition(
    *,
    primary_key: bool = False,
    default_value: Any = NO_DEFAULT,
    dtype: Any = None,
    name: str | None = None,
    append_only: bool | None = None,
    description: str | None = None,
    example: Any = None,
) -> Any:
    """Options of one schema column.

    >>> import sparkway as pw
    >>> class S(pw.Schema):
    ...     key: int = pw.column_definition(primary_key=True)
    ...     label: str = pw.column_definition(default_value="none")
    >>> S.primary_key_columns()
    ['key']

    ``description`` and ``example`` describe the column for people and for Pathway's
    optimizer; sparkway accepts them and does not use them.
    """
    return ColumnDefinition(primary_key, default_value, dtype, name, append_only)


class _SchemaMeta(type):
    __columns__: dict[str, Column]

    def __new__(mcs, name: str, bases: tuple, namespace: dict, append_only: bool | None = None, **kwargs: Any) -> type:
        cls = super().__new__(mcs, name, bases, namespace)
        columns: dict[str, Column] = {}
        for base in reversed(bases):
            columns.update(getattr(base, "__columns__", {}))
        annotated = namespace.get("__annotations__", {})
        unannotated = [k for k, v in namespace.items() if isinstance(v, ColumnDefinition) and k not in annotated]
        if unannotated:
            raise ValueError(
                f"definitions of columns {', '.join(unannotated)} lack type annotation; write name: type = pw.column_definition(...)"
            )
        hints = typing.get_type_hints(cls) if annotated else {}
        for col_name in annotated:
            if col_name.startswith("__"):
                continue
            definition = namespace.get(col_name, ColumnDefinition())
            if not isinstance(definition, ColumnDefinition):
                raise ValueError(
                    f"column {col_name!r} of schema {name} is given {definition!r}: a column's default "
                    f"is written {col_name}: ... = pw.column_definition(default_value={definition!r})"
                )
            column = _column(col_name, definition, hints[col_name], append_only)
            columns[column.name] = column
        cls.__columns__ = columns
        inherited = next((b.__properties__ for b in bases if hasattr(b, "__properties__")), SchemaProperties())
        cls.__properties__ = SchemaProperties(append_only if append_only is not None else inherited.append_only)
        return cls

    # Pathway's texts, word for word (programs and doctests print schemas)
    def __repr__(cls) -> str:
        types = ", ".join(f"{c.name!r}: {dt.pathway_annotation(c.dtype)}" for c in cls.__columns__.values())
        return f"<pathway.Schema types={{{types}}}, id_type={cls._id_annotation()}>"

    def __str__(cls) -> str:
        """The columns and their types as a table, the id first."""
        header = ["id", *cls.__columns__]
        kinds = [cls._id_engine_name(), *(dt.engine_name(c.dtype) for c in cls.__columns__.values())]
        widths = [max(len(a), len(b)) for a, b in zip(header, kinds)]
        return "\n".join(" | ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in (header, kinds))

    @property
    def id(cls) -> Column:
        """The id column, as Pathway's ``schema.id``: its ``dtype`` is the ids' type."""
        return Column("id", cls._id_type())

    def _id_type(cls) -> DType:
        """The type of the ids: a table's, or made from the primary key (none: of any origin)."""
        given = getattr(cls, "__id_type__", None)
        if given is not None:
            return given
        keys = [c.dtype for c in cls.__columns__.values() if c.primary_key]
        return dt.pointer_to(*keys) if keys else dt.POINTER

    def _id_annotation(cls) -> str:
        return dt.pathway_annotation(cls._id_type())

    def _id_engine_name(cls) -> str:
        return dt.engine_name(cls._id_type())

    def __eq__(cls, other: object) -> bool:
        """Schemas are equal when their columns (in order, with types and options) and
        their properties are; their names do not matter."""
        if not isinstance(other, _SchemaMeta):
            return NotImplemented
        return list(cls.__columns__.values()) == list(other.__columns__.values()) and (
            cls.__properties__ == other.__properties__
        )

    def __hash__(cls) -> int:
        return hash(tuple(cls.__columns__.values()))

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"a schema ({cls.__name__}) describes columns: it is not called; use it as a type")

    def __getitem__(cls, name: str) -> Column:
        return cls.__columns__[name]

    def __or__(cls, other: "_SchemaMeta") -> type:
        """The columns of both schemas (Pathway's order: ``other``'s first)."""
        return schema_from_columns({**other.__columns__, **cls.__columns__}, f"{cls.__name__}_{other.__name__}")

    def keys(cls) -> list[str]:
        return list(cls.__columns__)

    @property
    def universe_properties(cls) -> SchemaProperties:
        """Whether the rows are only ever inserted: as the schema says, else as soon as a
        column says so (as in Pathway)."""
        said = cls.__properties__.append_only
        if said is None:
            said = any(c.append_only for c in cls.__columns__.values())
        return SchemaProperties(bool(said))


def _column(name: str, definition: ColumnDefinition, annotation: Any, schema_append_only: bool | None) -> Column:
    """The resolved column of a schema class attribute ``name: annotation = definition``."""
    kind = dtype_of(annotation)
    if definition.dtype is not None and dtype_of(definition.dtype) != kind:
        raise TypeError(
            f"column {name!r} is annotated {kind} but its definition says dtype={dtype_of(definition.dtype)}; keep one"
        )
    given = definition.append_only
    if given is not None and schema_append_only is not None and given != schema_append_only:
        raise ValueError(
            f"ambiguous property; schema property `append_only` has value {schema_append_only} "
            f"but column `{name}` got {given}"
        )
    column_append_only = given if given is not None else bool(schema_append_only)
    # ``name=`` names the column, in the table as in the input
    return Column(definition.name or name, kind, definition.primary_key, definition.default_value,
                  append_only=column_append_only)


class Schema(metaclass=_SchemaMeta):
    """Base class of table schemas.

    >>> import sparkway as pw
    >>> class InputSchema(pw.Schema):
    ...     user_id: str
    ...     access_time: int
    >>> InputSchema.column_names()
    ['user_id', 'access_time']
    """

    __columns__: ClassVar[dict[str, Column]] = {}

    @classmethod
    def columns(cls) -> dict[str, Column]:
        return dict(cls.__columns__)

    @classmethod
    def column_names(cls) -> list[str]:
        return list(cls.__columns__)

    @classmethod
    def default_values(cls) -> dict[str, Any]:
        """The defaults of the columns that have one."""
        return {name: c.default_value for name, c in cls.__columns__.items() if c.has_default}

    @classmethod
    def to_json_serializable_dict(cls) -> dict[str, Any]:
        """The schema as JSON-able data, in Pathway's layout (defaults in its binary value
        format), which ``pw.schema_from_dict(**data)`` reads back.

        >>> import sparkway as pw
        >>> class S(pw.Schema):
        ...     n: int = pw.column_definition(primary_key=True, default_value=5)
        >>> data = S.to_json_serializable_dict()
        >>> data["columns"]["n"]["dtype"], pw.schema_from_dict(**data).default_values()
        ({'type': 'INT'}, {'n': 5})
        """
        return {"columns": {name: _column_json(column) for name, column in cls.__columns__.items()}}

    @classmethod
    def primary_key_columns(cls) -> list[str] | None:
        keys = [c.name for c in cls.__columns__.values() if c.primary_key]
        return keys or None

    @classmethod
    def typehints(cls) -> dict[str, Any]:
        """The Python annotation of each column's values.

        >>> import sparkway as pw
        >>> pw.schema_from_types(a=int, b=str | None).typehints()
        {'a': <class 'int'>, 'b': str | None}
        """
        return {c.name: dt.python_type(c.dtype) for c in cls.__columns__.values()}

    @classmethod
    def generate_class(cls, class_name: str | None = None, generate_imports: bool = False) -> str:
        """Python source of a schema class with these columns (for code generators, or to
        write down an inferred schema), for a program that does ``import sparkway as pw``.

        >>> import sparkway as pw
        >>> S = pw.schema_builder({"k": pw.column_definition(dtype=int, primary_key=True),
        ...                        "v": pw.column_definition(dtype=str | None, default_value="x")})
        >>> print(S.generate_class(class_name="Row"))
        class Row(pw.Schema):
            k: int = pw.column_definition(primary_key=True)
            v: str | None = pw.column_definition(default_value='x')
        <BLANKLINE>
        """
        lines = [f"class {class_name or cls.__name__}(pw.Schema):"]
        for position, column in enumerate(cls.__columns__.values()):
            options = {"primary_key": column.primary_key or None, "append_only": column.append_only or None}
            if column.has_default:
                options["default_value"] = column.default_value
            attribute = column.name
            if not column.name.isidentifier():  # e.g. "@timestamp": an attribute naming it
                attribute, options["name"] = f"column_{position}", column.name
            given = ", ".join(f"{k}={v!r}" for k, v in options.items() if v is not None)
            definition = f" = pw.column_definition({given})" if given else ""
            lines.append(f"    {attribute}: {dt.python_source(column.dtype)}{definition}")
        if len(lines) == 1:
            lines.append("    pass")
        imports = "import typing\n\nimport numpy as np\n\nimport sparkway as pw\n\n\n" if generate_imports else ""
        return imports + "\n".join(lines) + "\n"

    @classmethod
    def generate_class_to_file(cls, path: Any, class_name: str | None = None, generate_imports: bool = False) -> None:
        """Writes ``generate_class``'s source to a file."""
        with open(path, "w") as file:
            file.write(cls.generate_class(class_name, generate_imports))

    @classmethod
    def with_types(cls, **types: Any) -> type["Schema"]:
        """This schema with the given columns' types changed.

        >>> import sparkway as pw
        >>> pw.schema_from_types(a=int, b=str).with_types(a=str).typehints()
        {'a': <class 'str'>, 'b': <class 'str'>}
        """
        unknown = sorted(set(types) - set(cls.__columns__))
        if unknown:
            raise ValueError(f"Schema.with_types() argument name has to be an existing column name, received {unknown}.")
        columns = {name: replace(c, dtype=dt.dtype_of(types[name])) if name in types else c
                   for name, c in cls.__columns__.items()}
        return schema_from_columns(columns, cls.__name__, cls.__properties__)

    @classmethod
    def assert_matches_schema(
        cls, other: type["Schema"], *, allow_superset: bool = True, ignore_primary_keys: bool = True,
        allow_subtype: bool = True, ignore_properties: bool = False,
    ) -> None:
        """Raises ``AssertionError`` unless this schema has ``other``'s columns and types
        (see ``pw.assert_table_has_schema``).

        >>> import sparkway as pw
        >>> pw.schema_from_types(a=int, b=str).assert_matches_schema(pw.schema_from_types(a=float))
        """
        _assert_matches(cls, other, allow_superset, ignore_primary_keys, allow_subtype)
        if not ignore_properties and cls.universe_properties != other.universe_properties:
            raise AssertionError(f"properties {cls.universe_properties} differ from {other.universe_properties}")

    @classmethod
    def _dtypes(cls) -> dict[str, DType]:
        """Each column's type (Pathway's internal name, which its tests use)."""
        return {c.name: c.dtype for c in cls.__columns__.values()}


def schema_from_columns(
    columns: dict[str, Column], name: str = "Schema", properties: SchemaProperties | None = None,
    id_type: DType | None = None,
) -> type[Schema]:
    """A Schema class holding the given resolved columns (and, for a table's schema, the
    type of its ids)."""
    cls = _SchemaMeta(name, (Schema,), {})
    cls.__columns__ = dict(columns)
    cls.__properties__ = properties or SchemaProperties()
    cls.__id_type__ = id_type
    return cls


def schema_builder(
    columns: dict[str, ColumnDefinition], *, name: str | None = None, properties: SchemaProperties | None = None,
    **_: Any,
) -> type[Schema]:
    """A schema from column definitions, each with its ``dtype``.

    >>> import sparkway as pw
    >>> S = pw.schema_builder({"key": pw.column_definition(dtype=int, primary_key=True),
    ...                        "value": pw.column_definition(dtype=str, default_value="")})
    >>> S.column_names(), S.primary_key_columns()
    (['key', 'value'], ['key'])
    """
    append_only = properties.append_only if properties is not None else None
    resolved = {c.name: c for c in (_column(col, d, d.dtype if d.dtype is not None else Any, append_only)
                                    for col, d in columns.items())}
    return schema_from_columns(resolved, name or "Schema", properties)


def schema_from_dict(
    columns: dict[str, Any], *, name: str | None = None, properties: dict[str, Any] | SchemaProperties | None = None
) -> type[Schema]:
    """A schema from a dict: each column's type (a type or its name, e.g. ``"int"``), or a
    dict of its ``pw.column_definition`` options with ``dtype``; also what
    ``Schema.to_json_serializable_dict()`` gives (``pw.schema_from_dict(**data)``).

    >>> import sparkway as pw
    >>> S = pw.schema_from_dict({"key": {"dtype": "int", "primary_key": True}, "value": str})
    >>> S.typehints()["key"], S.primary_key_columns()
    (<class 'int'>, ['key'])
    """
    definitions = {}
    for col, spec in columns.items():
        options = dict(spec) if isinstance(spec, dict) else {"dtype": spec}
        for described in ("description", "source_component", "example"):  # not used here
            options.pop(described, None)
        if "_serialized_default_value" in options:
            options["default_value"] = serialized.decode_value(options.pop("_serialized_default_value"))
        kind = options.get("dtype", Any)
        options["dtype"] = serialized.dtype_from_json(kind) if isinstance(kind, dict) else _type_named(kind)
        definitions[col] = ColumnDefinition(**options)
    if isinstance(properties, dict):
        properties = SchemaProperties(**properties)
    return schema_builder(definitions, name=name, properties=properties)


def _column_json(column: Column) -> dict[str, Any]:
    data: dict[str, Any] = {
        "dtype": serialized.dtype_to_json(column.dtype), "name": column.name, "primary_key": column.primary_key,
        "append_only": bool(column.append_only), "description": None, "source_component": "payload",
    }
    if column.has_default:
        data["_serialized_default_value"] = serialized.encode_value(column.default_value)
    return data


_TYPE_NAMES = {"int": int, "float": float, "str": str, "bool": bool, "bytes": bytes, "Any": Any, "typing.Any": Any}


def _type_named(dtype: Any) -> Any:
    if not isinstance(dtype, str):
        return dtype
    if dtype not in _TYPE_NAMES:
        raise ValueError(f"unknown type name {dtype!r}: use one of {', '.join(_TYPE_NAMES)}, or a type")
    return _TYPE_NAMES[dtype]


def schema_from_csv(
    path: str, *, name: str | None = None, properties: SchemaProperties | None = None, delimiter: str = ",",
    quote: str = '"', comment_character: str | None = None, escape: str | None = None,
    double_quote_escapes: bool = True, num_parsed_rows: int | None = None,
) -> type[Schema]:
    """A schema from a CSV file's header, each column's type inferred from its values
    (the first ``num_parsed_rows``, or all): int, float if a value is not an int, str if
    one is not a number; Any when no row is read.

    >>> import sparkway as pw, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "data.csv")
    >>> _ = open(path, "w").write("word,count,share\\nfoo,2,0.5\\n")
    >>> pw.schema_from_csv(path).typehints()["share"]
    <class 'float'>
    """
    with open(path, newline="") as f:
        lines = (line for line in f if comment_character is None or not line.lstrip().startswith(comment_character))
        reader = csv.reader(lines, delimiter=delimiter, quotechar=quote, escapechar=escape, doublequote=double_quote_escapes)
        header = next(reader)
        rows = list(itertools.islice(reader, num_parsed_rows))
    types = {col: _inferred_type([row[i] for row in rows if i < len(row)]) for i, col in enumerate(header)}
    return schema_from_columns({c: Column(c, dtype_of(t)) for c, t in types.items()}, name or "Schema", properties)


def _inferred_type(values: list[str]) -> Any:
    if not values:
        return Any
    for kind in (int, float):
        try:
            for value in values:
                kind(value)
            return kind
        except ValueError:
            continue
    return str


def schema_from_types(_name: str = "Schema", **types: Any) -> type[Schema]:
    """A schema from column names and types.

    >>> import sparkway as pw
    >>> pw.schema_from_types(word=str, count=int).column_names()
    ['word', 'count']
    """
    return schema_from_columns({n: Column(n, dtype_of(t)) for n, t in types.items()}, _name)


def assert_table_has_schema(
    table: Any, schema: type[Schema], *, allow_superset: bool = True, ignore_primary_keys: bool = True,
    allow_subtype: bool = True,
) -> None:
    """Raises ``AssertionError`` unless ``table`` has the columns and types of ``schema``:
    more columns pass when ``allow_superset``; a narrower type (``int`` for ``float``, ``T``
    for ``Optional[T]``, any type for ``Any``) passes when ``allow_subtype``.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a | b\\n1 | x")
    >>> pw.assert_table_has_schema(t, pw.schema_from_types(a=float))
    >>> pw.assert_table_has_schema(t, pw.schema_from_types(a=str))
    Traceback (most recent call last):
    ...
    AssertionError: column 'a' is of type int, not str
    """
    _assert_matches(table.schema, schema, allow_superset, ignore_primary_keys, allow_subtype)


def table_transformer(
    func: Callable[..., Any] | None = None, *, allow_superset: bool | Mapping[str, bool] = True,
    ignore_primary_keys: bool | Mapping[str, bool] = True, allow_subtype: bool | Mapping[str, bool] = True,
    locals: dict[str, Any] | None = None,  # noqa: A002 - Pathway's name
) -> Any:
    """Marks a function of tables: each argument and the return value annotated
    ``pw.Table[S]`` is checked to have schema ``S`` (``AssertionError`` otherwise), as
    ``assert_table_has_schema`` checks, with its options given for all tables or per
    argument name (``"return"`` for the result).  ``locals``: the local names the
    annotations use (a schema defined in a function).

    >>> import sparkway as pw
    >>> t1 = pw.debug.table_from_markdown('''
    ... A | B
    ... 1 | 6
    ... 3 | 8
    ... ''')
    >>> schema = pw.schema_from_types(A=int, B=int)
    >>> result_schema = pw.schema_from_types(A=int, B=int, C=int)
    >>> @pw.table_transformer
    ... def sum_columns(t: pw.Table[schema]) -> pw.Table[result_schema]:
    ...     return t.with_columns(C=pw.this.A + pw.this.B)
    >>> pw.debug.compute_and_print(sum_columns(t1), include_id=False)
    A | B | C
    1 | 6 | 7
    3 | 8 | 11
    >>> sum_columns(t1.select(pw.this.A))
    Traceback (most recent call last):
    ...
    AssertionError: argument t of sum_columns has incorrect schema: the table has no column 'B'; its columns: A
    """

    def decorator(f: Callable[..., Any]) -> Callable[..., Any]:
        from sparkway.api.table import Table  # tables build on schemas

        hints = typing.get_type_hints(f, localns=locals)
        signature = inspect.signature(f)

        def check(name: str, value: Any) -> None:
            annotation = hints.get(name)
            if typing.get_origin(annotation) is not Table or not typing.get_args(annotation):
                return
            try:
                _assert_matches(
                    value.schema, typing.get_args(annotation)[0], _option(allow_superset, name),
                    _option(ignore_primary_keys, name), _option(allow_subtype, name),
                )
            except AssertionError as error:
                what = "the return value" if name == "return" else f"argument {name}"
                raise AssertionError(f"{what} of {f.__name__} has incorrect schema: {error}") from error

        @functools.wraps(f)
        def checked(*args: Any, **kwargs: Any) -> Any:
            for name, value in signature.bind(*args, **kwargs).arguments.items():
                check(name, value)
            result = f(*args, **kwargs)
            check("return", result)
            return result

        return checked

    return decorator(func) if func is not None else decorator


def _option(value: bool | Mapping[str, bool], name: str) -> bool:
    """A ``table_transformer`` option for one argument: the same for all, or by name."""
    return value if isinstance(value, bool) else value.get(name, True)


def _assert_matches(
    actual: type[Schema], schema: type[Schema], allow_superset: bool, ignore_primary_keys: bool, allow_subtype: bool,
) -> None:
    # AssertionError, as Pathway raises; not ``assert``, which ``python -O`` removes
    have, want = actual._dtypes(), schema._dtypes()
    missing = [c for c in want if c not in have]
    if missing:
        raise AssertionError(f"the table has no column {', '.join(map(repr, missing))}; its columns: {', '.join(have)}")
    extra = [c for c in have if c not in want]
    if extra and not allow_superset:
        raise AssertionError(f"the table has columns the schema does not: {', '.join(extra)}")
    for name, wanted in want.items():
        given = have[name]
        if given != wanted and not (allow_subtype and _is_subtype(given, wanted)):
            raise AssertionError(f"column {name!r} is of type {given}, not {wanted}")
    keys = actual.primary_key_columns()
    if not ignore_primary_keys and keys != schema.primary_key_columns():
        raise AssertionError(f"primary key {keys} differs from {schema.primary_key_columns()}")


def _is_subtype(given: DType, wanted: DType) -> bool:
    if given.optional and not wanted.optional:
        return False
    if given == dt.NONE:  # None alone is a value of every optional type
        return True
    base_given, base_wanted = given.with_optional(False), wanted.with_optional(False)
    return base_given == base_wanted or base_wanted.name == "Any" or (base_given.name, base_wanted.name) == ("int", "float")
