"""Table schemas: ``class S(pw.Schema): name: type``."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any, ClassVar

from sparkway.core.columns import NO_DEFAULT, Column
from sparkway.core.dtypes import DType, dtype_of


@dataclass(frozen=True)
class ColumnDefinition:
    """What ``pw.column_definition`` returns: options of one schema column."""

    primary_key: bool = False
    default_value: Any = NO_DEFAULT
    dtype: Any = None
    name: str | None = None

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

    ``append_only``, ``description`` and ``example`` describe the column for people and
    for Pathway's optimizer; sparkway accepts them and does not use them.
    """
    return ColumnDefinition(primary_key, default_value, dtype, name)


class _SchemaMeta(type):
    __columns__: dict[str, Column]

    def __new__(mcs, name: str, bases: tuple, namespace: dict, **kwargs: Any) -> type:
        cls = super().__new__(mcs, name, bases, namespace)
        columns: dict[str, Column] = {}
        for base in reversed(bases):
            columns.update(getattr(base, "__columns__", {}))
        hints = typing.get_type_hints(cls) if "__annotations__" in namespace else {}
        for col_name in namespace.get("__annotations__", {}):
            if col_name.startswith("__"):
                continue
            definition = namespace.get(col_name, ColumnDefinition())
            if not isinstance(definition, ColumnDefinition):
                definition = ColumnDefinition(default_value=definition)
            annotation = definition.dtype if definition.dtype is not None else hints[col_name]
            columns[col_name] = Column(
                name=col_name,
                dtype=dtype_of(annotation),
                primary_key=definition.primary_key,
                default_value=definition.default_value,
                source_name=definition.name,
            )
        cls.__columns__ = columns
        return cls

    def __repr__(cls) -> str:
        cols = ", ".join(f"{c.name}: {c.dtype}" for c in cls.__columns__.values())
        return f"<pw.Schema {cls.__name__}({cols})>"


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
    def primary_key_columns(cls) -> list[str] | None:
        keys = [c.name for c in cls.__columns__.values() if c.primary_key]
        return keys or None

    @classmethod
    def typehints(cls) -> dict[str, DType]:
        return {c.name: c.dtype for c in cls.__columns__.values()}


def schema_from_columns(columns: dict[str, Column], name: str = "Schema") -> type[Schema]:
    """A Schema class holding the given resolved columns."""
    cls = _SchemaMeta(name, (Schema,), {})
    cls.__columns__ = dict(columns)
    return cls


def schema_builder(columns: dict[str, ColumnDefinition], *, name: str | None = None, **_: Any) -> type[Schema]:
    """A schema from column definitions, each with its ``dtype``.

    >>> import sparkway as pw
    >>> S = pw.schema_builder({"key": pw.column_definition(dtype=int, primary_key=True),
    ...                        "value": pw.column_definition(dtype=str, default_value="")})
    >>> S.column_names(), S.primary_key_columns()
    (['key', 'value'], ['key'])
    """
    resolved = {
        col: Column(col, dtype_of(d.dtype if d.dtype is not None else Any), d.primary_key, d.default_value, d.name)
        for col, d in columns.items()
    }
    return schema_from_columns(resolved, name or "Schema")


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
    # AssertionError, as Pathway raises; not ``assert``, which ``python -O`` removes
    have, want = table.typehints(), schema.typehints()
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
    keys = table.schema.primary_key_columns()
    if not ignore_primary_keys and keys != schema.primary_key_columns():
        raise AssertionError(f"primary key {keys} differs from {schema.primary_key_columns()}")


def _is_subtype(given: DType, wanted: DType) -> bool:
    if given.optional and not wanted.optional:
        return False
    base_given, base_wanted = given.with_optional(False), wanted.with_optional(False)
    return base_given == base_wanted or base_wanted.name == "Any" or (base_given.name, base_wanted.name) == ("int", "float")
