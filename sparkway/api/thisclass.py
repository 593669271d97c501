"""``pw.this``, ``pw.left`` and ``pw.right``: columns of the table an operator works on."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Iterator

from sparkway.core.expression import ColumnRef, Expr, IxRef, PointerFrom, wrap


@dataclass(frozen=True)
class AllColumns:
    """What ``*pw.this`` (or ``*table``) unpacks to inside ``select``: every column of
    ``table`` but the ``exclude``d ones."""

    table: object
    exclude: frozenset[str] = frozenset()
    prefix: str = ""  # pw.left.with_prefix("l_"): the columns renamed
    suffix: str = ""

    def renamed(self, name: str) -> str:
        return f"{self.prefix}{name}{self.suffix}"


@dataclass(frozen=True)
class ColumnsWithout:
    """``pw.this.without("a")``: unpacked with ``*`` in ``select``, every column but ``a``."""

    table: object
    exclude: frozenset[str]

    def __iter__(self) -> Iterator[AllColumns]:
        yield AllColumns(self.table, self.exclude)


@dataclass(frozen=True)
class PendingIx:
    """``table.ix(pointer)`` whose pointer is read from the rows of the operation that uses
    it (``pw.this.ix(...)``, ``t.ix(pw.this.p)`` in ``select``, ``t.ix(pw.reducers.argmax(...))``
    in ``reduce``): its columns are expressions, looked up when that operation is built."""

    target: Any
    pointer: Expr
    optional: bool = False

    def __getattr__(self, name: str) -> IxRef:
        if name.startswith("__"):
            raise AttributeError(name)
        return IxRef(self.target, self.pointer, name, self.optional)

    def __getitem__(self, name: str | list[str]) -> IxRef | tuple[IxRef, ...]:
        if isinstance(name, list):  # select(*t.ix(pw.this.p)[["a", "b"]])
            return tuple(IxRef(self.target, self.pointer, c, self.optional) for c in name)
        return IxRef(self.target, self.pointer, name, self.optional)


# the key ``**pw.this`` gives: ``select`` expands it to every column
_ALL_COLUMNS = "_pw_all_columns_"
_expansions = itertools.count()


class Placeholder:
    """Stands for "the table this operator is applied to" (or its left/right side).

    >>> import sparkway as pw
    >>> pw.this.word.name
    'word'
    """

    is_placeholder = True  # how expressions tell it from a table (core cannot import this layer)

    def __init__(self, label: str) -> None:
        self._label = label

    def keys(self) -> list[str]:
        """Makes ``select(**pw.left)`` give every column: one key standing for them all
        (numbered, so that two such arguments do not collide), expanded by ``select``."""
        return [f"{_ALL_COLUMNS}{next(_expansions)}"]

    def with_prefix(self, prefix: str) -> "RenamedPlaceholder":
        """Every column, renamed ``prefix + name``: ``select(**pw.left.with_prefix("l_"))``.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("a | b\\n1 | 2")
        >>> t.select(**pw.this.with_prefix("x_")).column_names()
        ['x_a', 'x_b']
        """
        return RenamedPlaceholder(self, prefix, "")

    def with_suffix(self, suffix: str) -> "RenamedPlaceholder":
        """Every column, renamed ``name + suffix``: ``select(*pw.right.with_suffix("_r"))``."""
        return RenamedPlaceholder(self, "", suffix)

    def __getattr__(self, name: str) -> ColumnRef:
        if name.startswith("__"):
            raise AttributeError(name)
        return ColumnRef(self, name)

    def __getitem__(self, name: str) -> ColumnRef | AllColumns:
        if name.startswith(_ALL_COLUMNS):
            return AllColumns(self)
        return ColumnRef(self, name)

    def without(self, *columns: str | ColumnRef) -> ColumnsWithout:
        """Every column but these, for ``select(*pw.this.without("a"))``.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("a | b | c\\n1 | 2 | 3")
        >>> t.select(*pw.this.without("a", pw.this.c)).column_names()
        ['b']
        """
        return ColumnsWithout(self, frozenset(c.name if isinstance(c, ColumnRef) else c for c in columns))

    def pointer_from(self, *args: Any, optional: bool = False) -> PointerFrom:
        """The id that rows with these key values get (as ``Table.pointer_from``).

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("k\\n1")
        >>> t.select(p=pw.this.pointer_from(pw.this.k)).typehints()["p"]
        DType(name='Pointer', items=(), optional=False)
        """
        return PointerFrom(tuple(wrap(a) for a in args), optional)

    def ix(self, expression: Any, *, optional: bool = False, context: Any = None, allow_misses: bool = False) -> PendingIx:
        """Rows of the operation's own table looked up by a pointer, e.g. in ``reduce``:
        ``pw.this.ix(pw.reducers.argmax(pw.this.age)).name``.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("g | age | name\\n1 | 5 | a\\n1 | 7 | b")
        >>> oldest = t.groupby(t.g).reduce(name=pw.this.ix(pw.reducers.argmax(pw.this.age)).name)
        >>> pw.debug.compute_and_print(oldest, include_id=False)
        name
        b
        """
        return PendingIx(self, wrap(expression), optional or allow_misses)

    def ix_ref(self, *args: Any, optional: bool = False, context: Any = None, instance: Any = None) -> PendingIx:
        """Rows of the operation's own table looked up by the values their ids were made from."""
        keys = (*args, instance) if instance is not None else args
        return PendingIx(self, PointerFrom(tuple(wrap(a) for a in keys)), optional)

    def __iter__(self) -> Iterator[AllColumns]:
        yield AllColumns(self)

    def __repr__(self) -> str:
        return f"pw.{self._label}"


class RenamedPlaceholder(Placeholder):
    """``pw.left.with_prefix(...)``/``with_suffix(...)``: the columns of the placeholder's
    table under new names, in ``select(*...)`` or ``select(**...)``."""

    def __init__(self, base: Placeholder, prefix: str, suffix: str) -> None:
        super().__init__(base._label)
        self._base, self._prefix, self._suffix = base, prefix, suffix

    def __getattr__(self, name: str) -> ColumnRef:
        if name.startswith("__"):
            raise AttributeError(name)
        return ColumnRef(self._base, name)

    def __getitem__(self, name: str) -> ColumnRef | AllColumns:
        if name.startswith(_ALL_COLUMNS):
            return AllColumns(self._base, prefix=self._prefix, suffix=self._suffix)
        return ColumnRef(self._base, name)

    def __iter__(self) -> Iterator[AllColumns]:
        yield AllColumns(self._base, prefix=self._prefix, suffix=self._suffix)

    def with_prefix(self, prefix: str) -> "RenamedPlaceholder":
        return RenamedPlaceholder(self._base, prefix + self._prefix, self._suffix)

    def with_suffix(self, suffix: str) -> "RenamedPlaceholder":
        return RenamedPlaceholder(self._base, self._prefix, self._suffix + suffix)


this = Placeholder("this")
left = Placeholder("left")
right = Placeholder("right")
