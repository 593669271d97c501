"""A resolved schema column: its name, type and options, as every layer sees it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparkway.core.dtypes import DType

class _NoDefault:
    """The default value of a column that has none: one object, in every process (a
    schema is pickled to executors, which parse input with it)."""

    def __repr__(self) -> str:
        return "NO_DEFAULT"

    def __reduce__(self) -> str:
        return "NO_DEFAULT"  # pickled as a reference to this module's object


NO_DEFAULT: Any = _NoDefault()


@dataclass(frozen=True)
class Column:
    """One column of a schema: its name in the table, its type, and its options.

    >>> from sparkway.core.dtypes import INT
    >>> Column("n", INT, default_value=0).has_default
    True
    """

    name: str
    dtype: DType
    primary_key: bool = False
    default_value: Any = field(default=NO_DEFAULT, compare=False)
    source_name: str | None = None  # the name in the input file, when it differs
    #: ``pw.column_definition(append_only=...)``, or the schema's (None: not said)
    append_only: bool | None = field(default=None, compare=False)

    @property
    def has_default(self) -> bool:
        return self.default_value is not NO_DEFAULT

    @property
    def input_name(self) -> str:
        """The name under which the column appears in input data."""
        return self.source_name or self.name
