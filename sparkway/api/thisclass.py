"""``pw.this``, ``pw.left`` and ``pw.right``: columns of the table an operator works on."""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Any, Iterator

from sparkway.core.expression import ColumnRef, Expr, IxRef, PointerFrom, wrap
from sparkway.errors import PlanError, UnknownColumnError, traced


@dataclass(frozen=True)
class AllColumns:
    """What ``*x`` and ``**x`` unpack to inside ``select`` (``x`` a table, ``pw.this``, or
    a ``TableSlice`` of them): the columns of ``table``, after the slice's operations."""

    table: object
    ops: tuple[tuple[str, Any], ...] = ()

    def resolve(self, names: list[str]) -> list[tuple[str, str]]:
        """(output name, column of the table) pairs, given the table's columns."""
        pairs = [(c, c) for c in names]
        for op, arg in self.ops:
            if op == "without":
                pairs = [(out, src) for out, src in pairs if out not in arg]
            elif op == "rename":
                pairs = [(arg.get(out, out), src) for out, src in pairs]
            elif op == "pick":
                found = dict(pairs)
                missing = [c for c in arg if c not in found]
                if missing:
                    raise KeyError(f"no column {missing[0]!r} among {', '.join(found)}")
                pairs = [(c, found[c]) for c in arg]
            else:  # prefix, suffix
                pairs = [(arg + out if op == "prefix" else out + arg, src) for out, src in pairs]
        return pairs

    def source_of(self, name: str) -> str:
        """The table's column that the output column ``name`` is (KeyError: none)."""
        for op, arg in reversed(self.ops):
            if op == "without" and name in arg or op == "pick" and name not in arg:
                raise KeyError(f"column {name!r} is not in this selection of columns")
            if op == "rename":
                sources = [old for old, new in arg.items() if new == name]
                if not sources and name in arg:
                    raise KeyError(f"column {name!r} was renamed to {arg[name]!r}")
                name = sources[0] if sources else name
            elif op in ("prefix", "suffix"):
                fits = name.startswith(arg) if op == "prefix" else name.endswith(arg)
                if not fits:
                    raise KeyError(f"column {name!r} does not have the {op} {arg!r}")
                name = name[len(arg):] if op == "prefix" else name[: len(name) - len(arg)]
        return name


def _name(column: str | ColumnRef) -> str:
    return column.name if isinstance(column, ColumnRef) else column


class ColumnNamespace:
    """``t.C`` (or ``pw.this.C``): the columns as attributes, also those named like a
    method (``t.C.select``)."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def __getattr__(self, name: str) -> ColumnRef:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._table[name]

    def __getitem__(self, name: str) -> ColumnRef:
        return self._table[name]


@traced
class TableSlice:
    """Some columns of a table (``t.slice``, ``pw.this.without("a")``, ``pw.left.rename(...)``),
    maybe renamed, to unpack in ``select``: ``select(*pw.this.without("a"))``,
    ``select(**pw.right.with_suffix("_r"))``; ``slice.name`` is one of its columns.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a | b | c\\n1 | 2 | 3")
    >>> t.select(**t.slice.without("a").rename({"b": "x"}).with_prefix("t_")).column_names()
    ['t_x', 't_c']
    """

    def __init__(self, table: object, ops: tuple[tuple[str, Any], ...] = ()) -> None:
        self._columns = AllColumns(table, ops)

    def _then(self, op: str, arg: Any) -> "TableSlice":
        return TableSlice(self._columns.table, (*self._columns.ops, (op, arg)))

    def without(self, *columns: str | ColumnRef) -> "TableSlice":
        """Every column but these."""
        return self._then("without", frozenset(self._own(c) for c in columns))

    def rename(self, names: dict | None = None, **kwargs: str | ColumnRef) -> "TableSlice":
        """Columns renamed: ``rename({"a": "b"})`` or ``rename(b=pw.this.a)``."""
        mapping = {self._own(old): _name(new) for old, new in (names or {}).items()}
        mapping |= {self._own(old): new for new, old in kwargs.items()}
        return self._then("rename", mapping)

    def with_prefix(self, prefix: str) -> "TableSlice":
        """Every column renamed ``prefix + name``."""
        return self._then("prefix", prefix)

    def with_suffix(self, suffix: str) -> "TableSlice":
        """Every column renamed ``name + suffix``."""
        return self._then("suffix", suffix)

    def __getattr__(self, name: str) -> ColumnRef:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in _table_methods():  # Pathway's words
            raise PlanError(
                f"{name!r} is a method name. It is discouraged to use it as a column name. "
                f"If you really want to use it, use [{name!r}]."
            )
        return ColumnRef(self._columns.table, self._columns.source_of(name))

    def __getitem__(self, name: Any) -> Any:
        if isinstance(name, list):
            return self._then("pick", tuple(self._own(c) for c in name))
        if isinstance(name, str) and name.startswith(_ALL_COLUMNS):
            return self._columns
        return self.__getattr__(self._own(name))

    def _own(self, column: str | ColumnRef) -> str:
        """The name of a column of this slice's table, given as a name, ``this.name`` or
        ``table.name`` (Pathway's errors for others; a slice of ``pw.left`` takes any)."""
        owner, table = getattr(column, "table", None), self._columns.table
        if isinstance(column, ColumnRef) and owner is not table and not getattr(table, "is_placeholder", False):
            if getattr(owner, "is_placeholder", False) and getattr(owner, "_label", None) != "this":
                raise PlanError("TableSlice expects 'col' or this.col argument as column reference.")
            if not getattr(owner, "is_placeholder", False):
                raise PlanError("TableSlice method arguments should refer to table of which the slice was created.")
        name = _name(column)
        if not getattr(table, "is_placeholder", False) and name not in dict(self._columns.resolve(list(table._node.columns))):
            raise UnknownColumnError(f"Column name {name!r} not found in a {self!r}.")
        return name

    def __repr__(self) -> str:
        table = self._columns.table
        if getattr(table, "is_placeholder", False):
            return f"TableSlice({table!r}, {self._columns.ops!r})"
        pairs = self._columns.resolve(list(table._node.columns))
        return "TableSlice({" + ", ".join(f"{out!r}: {ColumnRef(table, src)!r}" for out, src in pairs) + "})"

    def keys(self) -> list[str]:
        """``select(**slice)``: one key standing for all its columns."""
        return [f"{_ALL_COLUMNS}{next(_expansions)}"]

    def __iter__(self) -> Iterator[AllColumns]:
        yield self._columns


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


@traced
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

    @property
    def slice(self) -> TableSlice:
        """Every column, to pick, rename or leave out some (``pw.left.slice.without("a")``)."""
        return TableSlice(self)

    @property
    def C(self) -> ColumnNamespace:  # noqa: N802 - Pathway's name
        """The columns, also those named like a method: ``pw.this.C.select``."""
        return ColumnNamespace(self)

    def with_prefix(self, prefix: str) -> TableSlice:
        """Every column, renamed ``prefix + name``: ``select(**pw.left.with_prefix("l_"))``.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("a | b\\n1 | 2")
        >>> t.select(**pw.this.with_prefix("x_")).column_names()
        ['x_a', 'x_b']
        """
        return self.slice.with_prefix(prefix)

    def with_suffix(self, suffix: str) -> TableSlice:
        """Every column, renamed ``name + suffix``: ``select(*pw.right.with_suffix("_r"))``."""
        return self.slice.with_suffix(suffix)

    def rename(self, names: dict | None = None, **kwargs: Any) -> TableSlice:
        """Every column, some renamed: ``select(**pw.right.rename({"col": "col2"}))``."""
        return self.slice.rename(names, **kwargs)

    def __getattr__(self, name: str) -> ColumnRef:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in _table_methods():
            raise PlanError(
                f"{name} is a method name. It is discouraged to use it as a column name. "
                f"If you really want to use it, use pw.{self._label}[{name!r}]."
            )
        return ColumnRef(self, name)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(f"You cannot instantiate `{self._label}` class.")

    def __getitem__(self, name: Any) -> Any:
        if isinstance(name, list):
            return self.slice[name]
        if name.startswith(_ALL_COLUMNS):
            return AllColumns(self)
        return ColumnRef(self, name)

    def without(self, *columns: str | ColumnRef) -> TableSlice:
        """Every column but these, for ``select(*pw.this.without("a"))``.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("a | b | c\\n1 | 2 | 3")
        >>> t.select(*pw.this.without("a", pw.this.c)).column_names()
        ['b']
        """
        return self.slice.without(*columns)

    def pointer_from(self, *args: Any, optional: bool = False) -> PointerFrom:
        """The id that rows with these key values get (as ``Table.pointer_from``).

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("k\\n1")
        >>> t.select(p=pw.this.pointer_from(pw.this.k)).typehints()["p"].__name__
        'Pointer'
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


@functools.cache
def _table_methods() -> frozenset[str]:
    """Names ``pw.this.<name>`` cannot mean a column by (Pathway refuses them too)."""
    from sparkway.api.table import Table  # the table module imports this one

    return frozenset(name for name in dir(Table) if not name.startswith("_"))


this = Placeholder("this")
left = Placeholder("left")
right = Placeholder("right")
