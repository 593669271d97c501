"""``pw.this``, ``pw.left`` and ``pw.right``: columns of the table an operator works on."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterator

from sparkway.core.expression import ColumnRef


@dataclass(frozen=True)
class AllColumns:
    """What ``*pw.this`` (or ``*table``) unpacks to inside ``select``: every column of
    ``table`` but the ``exclude``d ones."""

    table: object
    exclude: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ColumnsWithout:
    """``pw.this.without("a")``: unpacked with ``*`` in ``select``, every column but ``a``."""

    table: object
    exclude: frozenset[str]

    def __iter__(self) -> Iterator[AllColumns]:
        yield AllColumns(self.table, self.exclude)


# the key ``**pw.this`` gives: ``select`` expands it to every column
_ALL_COLUMNS = "_pw_all_columns_"
_key_numbers = itertools.count()


class Placeholder:
    """Stands for "the table this operator is applied to" (or its left/right side).

    >>> import sparkway as pw
    >>> pw.this.word.name
    'word'
    """

    is_placeholder = True  # how expressions tell it from a table (core cannot import this layer)

    def __init__(self, label: str) -> None:
        self._label = label

    def __getattr__(self, name: str) -> ColumnRef:
        if name.startswith("__"):
            raise AttributeError(name)
        return ColumnRef(self, name)

    def __getitem__(self, name: str) -> "ColumnRef | AllColumns":
        if name.startswith(_ALL_COLUMNS):
            return AllColumns(self)
        return ColumnRef(self, name)

    def keys(self) -> list[str]:
        """Makes ``select(**pw.left)`` give every column of the table: one key standing
        for all of them (unique, so that ``**pw.left, **pw.right`` keeps both)."""
        return [f"{_ALL_COLUMNS}{next(_key_numbers)}"]

    def without(self, *columns: str | ColumnRef) -> ColumnsWithout:
        """Every column but these, for ``select(*pw.this.without("a"))``.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("a | b | c\\n1 | 2 | 3")
        >>> t.select(*pw.this.without("a", pw.this.c)).column_names()
        ['b']
        """
        return ColumnsWithout(self, frozenset(c.name if isinstance(c, ColumnRef) else c for c in columns))

    def __iter__(self) -> Iterator[AllColumns]:
        yield AllColumns(self)

    def __repr__(self) -> str:
        return f"pw.{self._label}"


this = Placeholder("this")
left = Placeholder("left")
right = Placeholder("right")
