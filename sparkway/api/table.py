"""``pw.Table``: the user-facing table.  Each method builds one or a few plan nodes."""

from __future__ import annotations

import copy
import enum
import functools
import re
from types import GenericAlias, MappingProxyType
from typing import Any, Callable, Iterable, Iterator

from sparkway.api.schema import Schema, schema_from_columns
from sparkway.api.temporal import check_time_types, check_window_types, with_behavior
from sparkway.api.thisclass import AllColumns, ColumnNamespace, PendingIx, Placeholder, TableSlice, left, right, this
from sparkway.core import dtypes as dt
from sparkway.core.columns import Column
from sparkway.core.dtypes import DType
from sparkway.core.expression import (
    Apply, BinOp, Cast, Coalesce, ColumnRef, Expr, IsNone, IxRef, MethodCall, PointerFrom, ReducerExpr, Require, Unwrap,
    transform, walk, wrap,
)
from sparkway.core.portable import portable
from sparkway.core.type_rules import PaddedColumns, check_condition, infer, reducer_type, refuse_future
from sparkway.errors import PlanError, PlanTypeError, UnknownColumnError, traced, warn_user
from sparkway.plan import nodes as n


#: Pathway's words for a filter whose condition is not a bool that is never None
_FILTER_CONDITION = "Filter argument of Table.filter() has to be bool, found {}."

class JoinMode(enum.Enum):
    """The kind of a join, for ``how=``.

    >>> import sparkway as pw
    >>> left = pw.debug.table_from_markdown("k | a\\n1 | x\\n2 | y")
    >>> right = pw.debug.table_from_markdown("k | b\\n1 | u")
    >>> pairs = left.join(right, left.k == right.k, how=pw.JoinMode.LEFT).select(left.a, right.b)
    >>> pw.debug.compute_and_print(pairs, include_id=False)
    a | b
    x | u
    y |
    """

    INNER = "inner"
    LEFT = "left"
    RIGHT = "right"
    OUTER = "outer"


class Universe:
    """The set of row ids of a table, as far as the program knows it: a table that keeps
    its input's ids shares its universe; a filter's is a subset of its input's; promises
    (``pw.universes``) add relations.  Columns of a table can be used in another table's
    operation when the other's universe is a subset of theirs, as in Pathway.
    """

    __slots__ = ("supersets", "disjoint", "empty")

    def __init__(self, parent: "Universe | None" = None, empty: bool = False) -> None:
        self.supersets: list[Universe] = [parent] if parent is not None else []
        self.disjoint: list[Universe] = []  # promised to share no id with this one
        self.empty = empty  # a table that never has rows (Table.empty)

    def is_subset_of(self, other: "Universe") -> bool:
        return any(u is other for u in self.with_supersets())

    def with_supersets(self) -> Iterator["Universe"]:
        """This universe and every universe known to include it."""
        todo, seen = [self], set()
        while todo:
            universe = todo.pop()
            if id(universe) not in seen:
                seen.add(id(universe))
                yield universe
                todo.extend(universe.supersets)

    def is_disjoint_from(self, other: "Universe") -> bool:
        """Whether a promise says the two share no id (or supersets of them share none)."""
        if self.empty or other.empty:
            return True
        theirs = {id(u) for u in other.with_supersets()}
        return any(id(d) in theirs for u in self.with_supersets() for d in u.disjoint)


class _Promises:
    """Promises about the ids of a table (or of a join's rows), as ``pw.universes`` makes them."""

    _universe: Universe

    def promise_universe_is_subset_of(self, other: Any) -> Any:
        """Promises that these ids are all among ``other``'s; returns self."""
        self._universe.supersets.append(other._universe)
        return self

    def promise_universes_are_disjoint(self, other: Any) -> Any:
        """Promises that no id is also ``other``'s (so that they can be concatenated); returns self."""
        mine, theirs = self._universe, other._universe
        if (mine.is_subset_of(theirs) or theirs.is_subset_of(mine)) and not (mine.empty or theirs.empty):
            warn_user("Found universe that is always empty, but wasn't declared as such -- this is potentially a bug.")
            mine.empty = theirs.empty = True  # what the promise implies; warned once
        mine.disjoint.append(theirs)
        theirs.disjoint.append(mine)
        return self

    def promise_universe_is_equal_to(self, other: Any) -> Any:
        """Promises that these ids are exactly ``other``'s; returns self."""
        self._universe.supersets.append(other._universe)
        other._universe.supersets.append(self._universe)
        return self


# every table the program built, used or not: ``pw.run_all`` computes them all
_built: dict[int, n.Node] = {}


def built_nodes() -> list[n.Node]:
    """The plan nodes of every table built since the last ``graph.clear()``."""
    return list(_built.values())


def forget_built() -> None:
    _built.clear()


class _IdColumn:
    """``Table._id_column``: what Pathway's tests read of a table's id column."""

    def __init__(self, universe: Universe, dtype: DType) -> None:
        self.universe = universe
        self.dtype = dtype


@traced
class Table(_Promises):
    """A table whose contents change over time; columns are attributes.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown('''
    ... word | n
    ... a    | 1
    ... b    | 2
    ... ''')
    >>> t.select(pw.this.word, double=pw.this.n * 2).schema.column_names()
    ['word', 'double']
    """

    def __init__(
        self, node: n.Node, label: str = "table", equivalents: tuple[int, ...] = (), universe: Universe | None = None,
        id_type: DType = dt.POINTER,
    ) -> None:
        self._node = node
        self._label = label
        _built[id(node)] = node
        # plan nodes whose columns this table also answers for (a window's source table)
        self._equivalents = equivalents
        self._universe = universe or Universe()
        # what the ids are made from (``Pointer[int]``: an int key), checked where ids meet
        self._id_type = id_type

    def __class_getitem__(cls, schema: Any) -> Any:
        """``pw.Table[Schema]``: the annotation of a table with that schema, which
        ``pw.table_transformer`` checks.

        >>> import typing
        >>> import sparkway as pw
        >>> class S(pw.Schema):
        ...     a: int
        >>> typing.get_args(pw.Table[S]) == (S,)
        True
        """
        return GenericAlias(cls, schema)

    # -- columns -------------------------------------------------------------------------
    def __getattr__(self, name: str) -> ColumnRef:
        if name.startswith("_"):
            if name in self._node.columns:
                return ColumnRef(self, name)
            raise AttributeError(name)
        if name != "id" and name not in self._node.columns:
            raise AttributeError(
                f"table has no column {name!r}; its columns are: {', '.join(self._node.columns)}"
            )
        return ColumnRef(self, name)

    def __getitem__(self, name: str | ColumnRef | list[str | ColumnRef]) -> Any:
        if isinstance(name, list):
            return self.select(*(self[c] for c in name))
        if isinstance(name, ColumnRef):
            if name.table is not self and name.table is not this:
                raise PlanError(
                    "Table.__getitem__ argument has to be a ColumnReference to the same table or pw.this, or a "
                    "string (or a list of those)."
                )
            name = name.name
        if name != "id" and name not in self._node.columns:
            raise KeyError(f"table has no column {name!r}; its columns are: {', '.join(self._node.columns)}")
        return ColumnRef(self, name)

    def __iter__(self):
        yield AllColumns(self)

    @property
    def slice(self) -> TableSlice:
        """The columns, to pick, rename or leave out some in ``select`` (``**t.slice.without("a")``).

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("a | b\\n1 | 2")
        >>> t.select(**t.slice.with_suffix("_x")).column_names()
        ['a_x', 'b_x']
        """
        return TableSlice(self)

    def keys(self) -> list[str]:
        """The column names: with ``__getitem__`` this makes ``**table`` give its columns,
        e.g. ``other.select(**table)``."""
        return self.column_names()

    def __add__(self, other: "Table") -> "Table":
        """The columns of both tables, whose rows have the same ids (the same universe).

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("a\\n1")
        >>> (t + t.select(b=pw.this.a * 2)).column_names()
        ['a', 'b']
        """
        return self.select(*self, *other)

    def assert_append_only(self) -> "Table":
        """The same table, said to only ever get insertions: it counts as append-only
        (``is_append_only``), and a deletion or update of its rows stops the run.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("a\\n1").select(b=pw.this.a)
        >>> t.assert_append_only().is_append_only
        True
        """
        return self._derive(n.AppendOnly(dict(self._node.columns), self._node, check=True), universe=self._universe)

    def to_stream(self, upsert_column_name: str = "is_upsert") -> "Table":
        """The changes of this table as rows, never retracted: at each time, per changed
        row, its new values with ``True`` in ``upsert_column_name`` (inserted or
        updated), or its last values with ``False`` (deleted).  The rows keep the ids of
        the rows they describe, so an id appears once per time it changed.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown('''
        ... k | v | __time__ | __diff__
        ... 1 | a | 2        | 1
        ... 1 | a | 4        | -1
        ... 1 | b | 4        | 1
        ... 1 | b | 6        | -1
        ... ''', id_from=["k"])
        >>> pw.debug.compute_and_print_update_stream(t.to_stream(), include_id=False)
        k | v | is_upsert | __time__ | __diff__
        1 | a | True      | 2        | 1
        1 | b | True      | 4        | 1
        1 | b | False     | 6        | 1
        """
        if upsert_column_name in self._node.columns:
            raise PlanError(f"to_stream: the table already has a column {upsert_column_name!r}; name the new one "
                            "with upsert_column_name=")
        node = n.ToStream({**self._node.columns, upsert_column_name: dt.BOOL}, self._node, upsert_column_name)
        return self._derive(node)

    def stream_to_table(self, is_upsert: Any) -> "Table":
        """The table this stream of changes describes: per id, the values of its latest
        row where ``is_upsert`` is True; an id whose latest row has it False (a deletion:
        only its id counts) has no row.  Of several rows of one id at one time, upserts
        count after deletions.

        >>> import sparkway as pw
        >>> s = pw.debug.table_from_markdown('''
        ... k | v | is_upsert | __time__
        ... 1 | a | True      | 2
        ... 1 | b | True      | 4
        ... 1 | b | False     | 6
        ... ''', id_from=["k"])
        >>> pw.debug.compute_and_print_update_stream(s.stream_to_table(pw.this.is_upsert), include_id=False)
        k | v | is_upsert | __time__ | __diff__
        1 | a | True      | 2        | 1
        1 | a | True      | 4        | -1
        1 | b | True      | 4        | 1
        1 | b | True      | 6        | -1
        """
        flag = self._bind(is_upsert)
        kind = infer(flag, [self._node.columns])
        if kind != dt.BOOL:
            raise TypeError(f"Expected 'is_upsert' to be of type 'bool', got '{dt.python_type(kind)}'")
        return self._derive(n.StreamToTable(dict(self._node.columns), (self._node,), flag))

    @staticmethod
    def from_streams(upserts: "Table", deletions: "Table") -> "Table":
        """The table described by a stream of upserts (rows inserted or updated, by id) and
        a stream of deletions (only their ids count), as ``stream_to_table`` reads one
        stream.

        >>> import sparkway as pw
        >>> ups = pw.debug.table_from_markdown("k | v | __time__\\n1 | a | 2\\n2 | b | 2", id_from=["k"])
        >>> dels = pw.debug.table_from_markdown("k | __time__\\n1 | 4", id_from=["k"])
        >>> pw.debug.compute_and_print_update_stream(pw.Table.from_streams(ups, dels), include_id=False)
        k | v | __time__ | __diff__
        1 | a | 2        | 1
        2 | b | 2        | 1
        1 | a | 4        | -1
        """
        return upserts._derive(n.StreamToTable(dict(upserts._node.columns), (upserts._node, deletions._node)))

    def unpack_snapshots(self) -> "Table":
        """At each time this table changes, all the rows it holds then, each under an id
        new at that time; rows are never retracted (each time is a full snapshot, so
        this is meant for small tables).

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("v | __time__\\n1 | 2\\n2 | 4")
        >>> pw.debug.compute_and_print_update_stream(t.unpack_snapshots(), include_id=False)
        v | __time__ | __diff__
        1 | 2        | 1
        1 | 4        | 1
        2 | 4        | 1
        """
        return self._derive(n.Snapshots(dict(self._node.columns), self._node))

    def _remove_retractions(self) -> "Table":
        """Only the insertions: deleted rows stay (Pathway's internal method)."""
        return self._derive(n.AppendOnly(dict(self._node.columns), self._node), universe=Universe(self._universe))

    @property
    def _id_column(self) -> Any:
        """The table's ids as Pathway's internals show them: their ``universe`` (the set
        of ids, see ``Universe``), which Pathway's tests compare, and their ``dtype``."""
        return _IdColumn(self._universe, self._id_type)

    @property
    def is_append_only(self) -> bool:
        """Whether rows of this table are only ever inserted, never updated or deleted,
        as far as the program can tell from its sources and operators.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("a\\n1\\n2")
        >>> t.is_append_only, t.groupby(t.a).reduce(t.a).is_append_only
        (True, False)
        """
        return n.is_append_only(self._node)

    @property
    def schema(self) -> type[Schema]:
        """The columns, their types and the type of the ids; a table read with a primary key
        has it in its schema (as in Pathway, tables computed from it do not).

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("a | b\\n1 | x")
        >>> print(t.groupby(t.b).reduce(t.b).schema)
        id           | b
        Pointer(STR) | STR
        """
        keys = set(self._node.source.key_columns) if isinstance(self._node, n.Input) else set()
        columns = {k: Column(k, v, primary_key=k in keys) for k, v in self._node.columns.items()}
        return schema_from_columns(columns, id_type=self._id_type)

    def update_id_type(self, id_type: Any, *, id_append_only: bool | None = None) -> "Table":
        """The same table, its ids declared to be of ``id_type`` (e.g. ``pw.Pointer[int]``).

        >>> import sparkway as pw
        >>> t = pw.Table.empty(a=int).update_id_type(pw.Pointer[int])
        >>> t.schema.typehints() == {"a": int}, repr(t.schema).endswith("id_type=pathway.engine.Pointer[int]>")
        (True, True)
        """
        kind = dt.dtype_of(id_type)
        if not kind.is_pointer:
            raise PlanTypeError(f"update_id_type() takes a pointer type such as pw.Pointer[int], not {id_type!r}")
        return Table(self._node, self._label, self._equivalents, self._universe, kind)

    def column_names(self) -> list[str]:
        return list(self._node.columns)

    def typehints(self) -> MappingProxyType:
        """The Python annotation of each column's values.

        >>> import sparkway as pw
        >>> pw.debug.table_from_markdown("a | b\\n1 | x\\n2 |").typehints()
        mappingproxy({'a': <class 'int'>, 'b': str | None})
        """
        return MappingProxyType({c: dt.python_type(kind) for c, kind in self._node.columns.items()})

    def __repr__(self) -> str:
        # Pathway's text, word for word (programs and doctests print tables)
        return f"<pathway.Table schema={self.typehints()}>"

    # -- stateless operators ---------------------------------------------------------------
    def select(self, *args: Any, **kwargs: Any) -> "Table":
        """New columns computed from each row; ids are kept.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("a | b\\n1 | 2")
        >>> t.select(s=pw.this.a + pw.this.b).column_names()
        ['s']
        """
        base, exprs = self._with_lookups(_named_exprs(args, kwargs, [self]))
        bound = tuple((name, base._bind(e)) for name, e in exprs)
        return self._derive(n.Select(_types(bound, [base._node.columns]), base._node, bound), universe=self._universe)

    def filter(self, predicate: Expr) -> "Table":
        """The rows where ``predicate`` is true.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("a\\n1\\n5")
        >>> t.filter(pw.this.a > 2).column_names()
        ['a']
        """
        base, [(_, predicate)] = self._with_lookups([("", wrap(predicate))])
        bound = base._bind(predicate)
        check_condition(infer(bound, [base._node.columns]), _FILTER_CONDITION, dt.engine_name)
        required = _not_none(bound)
        columns = {c: kind.with_optional(False) if c in required else kind for c, kind in base._node.columns.items()}
        filtered = self._derive(n.Filter(columns, base._node, bound), universe=Universe(self._universe))
        if base is self:
            return filtered
        return filtered.select(**{c: filtered[c] for c in self._node.columns})  # drop looked-up columns

    def remove_errors(self) -> "Table":
        """The rows that hold no Error value (see ``pw.fill_error``).

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("a | b\\n4 | 0\\n6 | 2")
        >>> t = t.with_columns(q=pw.this.a // pw.this.b).remove_errors()
        >>> pw.debug.compute_and_print(t, include_id=False, terminate_on_error=False)
        a | b | q
        6 | 2 | 3
        """
        return self._derive(n.RemoveErrors(dict(self._node.columns), self._node), universe=Universe(self._universe))

    def copy(self) -> "Table":
        """The same rows and columns, as a table of its own (with the same ids)."""
        return self.select(*self)

    def with_columns(self, *args: Any, **kwargs: Any) -> "Table":
        """All columns, plus new or replaced ones."""
        return self.select(*self, *args, **kwargs)

    def without(self, *columns: Any) -> "Table":
        """All columns but the named ones (names or column references)."""
        drop = {c.name if isinstance(c, ColumnRef) else c for c in columns}
        return self.select(*(self[c] for c in self._node.columns if c not in drop))

    def rename(self, names: dict[Any, str] | None = None, **kwargs: Any) -> "Table":
        """Columns renamed: ``rename(new=pw.this.old)`` or ``rename({"old": "new"})``; as in
        Pathway, the renamed columns come after the others, in the order given.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("a | b | c\\n1 | 2 | 3")
        >>> t.rename(x=t.a).column_names()
        ['b', 'c', 'x']
        """
        mapping = {(k.name if isinstance(k, ColumnRef) else k): v for k, v in (names or {}).items()}
        mapping.update({(v.name if isinstance(v, ColumnRef) else v): k for k, v in kwargs.items()})
        unknown = [old for old in mapping if old not in self._node.columns]
        if unknown:
            raise UnknownColumnError(f"Table has no column with name {unknown[0]}; its columns are: {', '.join(self._node.columns)}")
        kept = {c: self[c] for c in self._node.columns if c not in mapping}
        return self.select(**kept, **{new: self[old] for old, new in mapping.items()})

    rename_columns = rename

    def with_prefix(self, prefix: str) -> "Table":
        """Every column renamed ``prefix + name``.

        >>> import sparkway as pw
        >>> pw.debug.table_from_markdown("a | b\\n1 | 2").with_prefix("u_").column_names()
        ['u_a', 'u_b']
        """
        return self.rename_by_dict({c: prefix + c for c in self._node.columns})

    def with_suffix(self, suffix: str) -> "Table":
        """Every column renamed ``name + suffix``."""
        return self.rename_by_dict({c: c + suffix for c in self._node.columns})

    @property
    def C(self) -> "ColumnNamespace":  # noqa: N802 - Pathway's name
        """The columns, also those named like a method: ``t.C.filter``.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("age | filter\\n10 | True\\n9 | False")
        >>> pw.debug.compute_and_print(t.filter(t.C.filter), include_id=False)
        age | filter
        10  | True
        """
        return ColumnNamespace(self)

    def split(self, condition: Expr) -> tuple["Table", "Table"]:
        """The rows where ``condition`` holds, and the others.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("v\\n1\\n7")
        >>> big, small = t.split(t.v > 5)
        >>> pw.debug.compute_and_print(small, include_id=False)
        v
        1
        """
        return self.filter(condition), self.filter(~wrap(condition))

    def rename_by_dict(self, names: dict[Any, str]) -> "Table":
        """Columns renamed by a dict ``{old: new}``, as ``rename``."""
        return self.rename(names)

    def cast_to_types(self, **types: Any) -> "Table":
        """Columns converted to other types: ``cast_to_types(x=float)``."""
        return self.with_columns(**{k: Cast(dt.dtype_of(v), self[k]) for k, v in types.items()})

    def update_types(self, **types: Any) -> "Table":
        """The same values under narrower or wider types, e.g. ``Optional[int]`` -> ``int``,
        or ``Any`` -> ``str`` for values that are known to be strings.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("a\\n1").select(a=pw.apply(lambda x: x, pw.this.a))
        >>> t.update_types(a=int).typehints()["a"]
        <class 'int'>
        """
        columns = dict(self._node.columns)
        exprs = []
        for name in columns:
            ref: Expr = ColumnRef(n.InputRef(0), name)
            if name in types:
                old, new = columns[name], dt.dtype_of(types[name])
                if not dt.related(old, new):
                    raise PlanTypeError(
                        f"update_types({name}=...): to convert values, use cast_to_types().\n"
                        f"Cannot change type from {dt.engine_name(old)} to {dt.engine_name(new)}.\n"
                        "Table.update_types() should be used only for type narrowing or type extending."
                    )
                if old.with_optional(False) != new.with_optional(False):
                    ref = Apply(_same_value, (ref,), new)  # stored differently (e.g. Any is pickled)
                columns[name] = new
            exprs.append((name, ref))
        unknown = sorted(set(types) - set(columns))
        if unknown:
            raise PlanError(
                "Table.update_types() argument name has to be an existing table column name. "
                f"{unknown} are not among {list(columns)}."
            )
        return self._derive(n.Select(columns, self._node, tuple(exprs)), universe=self._universe)

    @staticmethod
    def empty(**types: Any) -> "Table":
        """A table with the given columns and no rows.

        >>> import sparkway as pw
        >>> pw.Table.empty(age=float, pet=str).column_names()
        ['age', 'pet']
        """
        from sparkway.api.debug import table_from_rows  # debug builds on Table
        from sparkway.api.schema import schema_from_types

        table = table_from_rows(schema_from_types(**types), [])
        table._universe = Universe(empty=True)  # disjoint from every table: it can be concatenated
        return table

    def flatten(self, to_flatten: Any, *, origin_id: str | None = None) -> "Table":
        """One row per element of a list (or JSON array) column; ``origin_id`` names a
        column to add with the id of the row each element comes from.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("n\\n2")
        >>> t.select(xs=pw.apply_with_type(lambda n: list(range(n)), list[int], pw.this.n)).flatten(
        ...     pw.this.xs, origin_id="origin").column_names()
        ['xs', 'origin']
        """
        name = to_flatten.name if isinstance(to_flatten, ColumnRef) else to_flatten
        item = _flattened_item(self._node.columns[name].with_optional(False))
        columns = {name: item, **{k: v for k, v in self._node.columns.items() if k != name}}  # Pathway's order
        if origin_id is not None:
            columns[origin_id] = dt.POINTER
        return self._derive(n.Flatten(columns, self._node, name, origin_id))

    def with_id_from(self, *args: Any, instance: Any = None) -> "Table":
        """Same rows, with ids computed from the given values (and the ``instance``, last,
        as ``groupby(..., instance=...)`` makes them)."""
        args = (*args, instance) if instance is not None else args
        base, exprs = self._with_lookups([(str(k), wrap(a)) for k, a in enumerate(args)])
        keys = tuple(base._bind(e) for _, e in exprs)
        id_type = dt.pointer_to(*(infer(k, [base._node.columns]) for k in keys))
        return self._derive(n.Reindex(dict(self._node.columns), base._node, keys), id_type=id_type)

    def with_id(self, new_id: Expr) -> "Table":
        """Same rows, with ids taken from a pointer column (its values must be distinct).

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("k | v\\n1 | a")
        >>> moved = t.with_id(t.pointer_from(t.k))
        >>> pw.debug.compute_and_print(moved.select(same=moved.id == t.pointer_from(pw.this.k)), include_id=False)
        same
        True
        """
        base, [(_, looked_up)] = self._with_lookups([("id", wrap(new_id))])  # a column of a table with the same rows
        pointer = base._bind(looked_up)
        kind = infer(pointer, [base._node.columns])
        if not (kind.is_pointer or kind.with_optional(False) == dt.ANY):
            raise PlanTypeError(f"with_id needs a pointer column (e.g. t.pointer_from(...)), got one of type {kind}")
        id_type = kind.with_optional(False) if kind.is_pointer else dt.POINTER
        return self._derive(n.Reindex(dict(self._node.columns), base._node, (pointer,), use_pointer=True), id_type=id_type)

    def pointer_from(self, *args: Any, optional: bool = False, instance: Any = None) -> PointerFrom:
        """The id that ``groupby(...).reduce`` or ``with_id_from`` give to these values;
        with ``optional``, None where a value is None."""
        args = (*args, instance) if instance is not None else args
        return PointerFrom(tuple(wrap(a) for a in args), optional, self)

    @staticmethod
    def from_columns(*args: ColumnRef, **kwargs: ColumnRef) -> "Table":
        """A table of columns of tables with the same ids (one universe); named ones are renamed.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("a | b\\n1 | 2")
        >>> pw.Table.from_columns(t.a, c=t.b).column_names()
        ['a', 'c']
        """
        columns = [*args, *kwargs.values()]
        if not columns:
            raise PlanError("Table.from_columns() cannot have empty arguments list")
        if not all(isinstance(c, ColumnRef) and isinstance(c.table, Table) for c in columns):
            raise PlanError("Table.from_columns takes columns of tables, e.g. Table.from_columns(t.a, u.b)")
        names = [c.name for c in args] + list(kwargs)
        if len(set(names)) != len(names):
            raise PlanError(f"Table.from_columns: two columns are named alike in {names}; rename one (name=t.column)")
        base: Table = columns[0].table
        for c in columns[1:]:
            if not (base._universe.is_subset_of(c.table._universe) and c.table._universe.is_subset_of(base._universe)):
                raise PlanError(
                    f"Table.from_columns: column {c.name!r} belongs to a table with other ids; "
                    "use with_universe_of() if the ids are in fact equal"
                )
        return base.select(*args, **kwargs)

    def concat(self, *others: "Table") -> "Table":
        """Rows of all tables, with their ids; a promise must say that no two tables share
        an id (``pw.universes.promise_are_pairwise_disjoint``), as in Pathway.

        >>> import sparkway as pw
        >>> a = pw.debug.table_from_markdown("  | v\\n1 | x")
        >>> b = pw.debug.table_from_markdown("  | v\\n2 | y")
        >>> pw.universes.promise_are_pairwise_disjoint(a, b)
        >>> a.concat(b).column_names()
        ['v']
        """
        return self._concat(others, reindex=False)

    def concat_reindex(self, *others: "Table") -> "Table":
        """Rows of all tables, with new ids."""
        return self._concat(others, reindex=True)

    def _concat(self, others: Iterable["Table"], reindex: bool) -> "Table":
        columns = dict(self._node.columns)
        others = tuple(others)
        if not reindex:
            universes = [t._universe for t in (self, *others)]
            if any(not a.is_disjoint_from(b) for i, a in enumerate(universes) for b in universes[i + 1:]):
                raise ValueError(
                    "Universes of the arguments of Table.concat() have to be disjoint.\n"
                    "Consider using Table.promise_universes_are_disjoint() to assert it.\n"
                    "(However, untrue assertion might result in runtime errors.)"
                )
        tables = (self, *(_in_order(t, list(columns)) for t in others))
        for t in tables[1:]:
            if list(t._node.columns) != list(columns):
                raise PlanError(
                    f"concat needs tables with the same columns: {list(columns)} != {list(t._node.columns)}"
                )
            columns = {k: dt.unify(v, t._node.columns[k]) for k, v in columns.items()}
        return self._derive(n.Concat(columns, tuple(t._node for t in tables), reindex), id_type=_concat_id_type(tables, reindex))

    # -- stateful operators ----------------------------------------------------------------
    def groupby(
        self, *args: Any, id: Any = None, instance: Any = None, sort_by: Any = None, **kwargs: Any
    ) -> "GroupedTable":
        """Groups rows by the values of the given columns; follow with ``.reduce(...)``.
        ``sort_by`` orders the values of ``tuple`` and ``ndarray`` reducers (else ids do).

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("w\\na\\nb\\na")
        >>> t.groupby(t.w).reduce(t.w, count=pw.reducers.count()).column_names()
        ['w', 'count']
        """
        args = tuple(c for a in args for c in (_all_columns(a, [self]).values() if isinstance(a, AllColumns) else (a,)))
        extra = set(kwargs) - {"_skip_errors"}
        if extra:
            raise PlanError(
                "Table.groupby() received extra kwargs.\nYou probably want to use "
                f"Table.groupby(...).reduce(**kwargs) to compute output columns. Got: {sorted(extra)}."
            )
        if id is not None and len(args) > 1:
            raise PlanError("Table.groupby() cannot have id argument when grouping by multiple columns.")
        if id is not None and args and getattr(args[0], "name", None) != getattr(id, "name", None):
            raise PlanError(
                "Table.groupby() received id argument and is grouped by a single column, but the arguments are "
                "not equal.\nConsider using <table>.groupby(id=...), skipping the positional argument."
            )
        keys = [a for a in args] + ([instance] if instance is not None else [])
        if id is not None and not args:
            keys.append(id)
        for k in keys:
            if not isinstance(k, ColumnRef):
                raise PlanError(
                    f"groupby takes columns, not {k!r}: compute the value with with_columns() first"
                )
        # keys of tables with the same rows, or looked up by a pointer (other.ix(t.p).k)
        base, looked_up = self._with_lookups([(k.name, k) for k in keys])
        # _skip_errors=False: a reducer over an Error value gives an Error (Pathway's option)
        return base._grouped(looked_up, id, sort_by, kwargs.get("_skip_errors", True))

    def _grouped(self, keys: list[tuple[str, Expr]], id: Any, sort_by: Any, skip_errors: bool) -> "GroupedTable":
        id_key = None
        if id is not None:
            id_key = id.name
            kind = infer(self._bind(id), [self._node.columns])
            if not (kind.is_pointer or kind.with_optional(False) == dt.ANY):
                raise PlanTypeError(f"groupby(id=...) needs a pointer column (e.g. t.pointer_from(...)), got {id!r}")
        order = self._bind(sort_by) if sort_by is not None else None
        return GroupedTable(
            self, [(name, self._key(k)) for name, k in keys], id_key=id_key, sort_by=order, skip_errors=skip_errors,
        )

    def reduce(self, *args: Any, **kwargs: Any) -> "Table":
        """Aggregates of the whole table in one row."""
        return GroupedTable(self, []).reduce(*args, **kwargs)

    def deduplicate(
        self,
        *,
        value: Any,
        instance: Any = None,
        acceptor: Callable[[Any, Any], bool],
        persistent_id: str | None = None,
        name: str | None = None,
    ) -> "Table":
        """Per instance, the last row whose value ``acceptor(new, old)`` accepted: each
        inserted row meets the accepted one (a step's rows in the order of their values);
        deletions do not change the result, as in Pathway.  The state (the accepted rows)
        is kept across runs with persistence, also when the acceptor's code changes.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("v | __time__\\n1 | 2\\n2 | 4\\n4 | 6")
        >>> r = t.deduplicate(value=pw.this.v, acceptor=lambda new, old: new >= old + 2)
        >>> pw.debug.compute_and_print(r, include_id=False)
        v
        4
        """
        node = n.Deduplicate(
            dict(self._node.columns),
            self._node,
            self._key(wrap(value)),
            self._key(instance) if instance is not None else None,
            portable(acceptor),
        )
        return self._derive(node)

    def _key(self, expr: Any) -> Expr:
        """``expr`` bound to this table, to key rows by (never a future: ``await_futures()`` first)."""
        bound = self._bind(expr)
        refuse_future(infer(bound, [self._node.columns]))
        return bound

    def ignore_late(self, time_column: Any, threshold: Any) -> "Table":
        """The rows but those late when they arrive: with ``time_column <= now - threshold``,
        where ``now`` is the largest ``time_column`` of the steps before (a change
        arriving late is dropped, a retraction too).

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("t | __time__\\n1 | 2\\n5 | 4\\n2 | 6\\n4 | 8")
        >>> pw.debug.compute_and_print(t.ignore_late(pw.this.t, 2), include_id=False)
        t
        1
        4
        5
        """
        return self._freeze(wrap(time_column) + threshold, time_column)

    def forget(self, time_column: Any, threshold: Any, mark_forgetting_records: bool = False) -> "Table":
        """The rows, each retracted once ``time_column <= now - threshold``, where ``now``
        is the largest ``time_column`` so far (at the first step with input after ``now``
        got there); late rows are dropped, as ``ignore_late`` drops them.  Operators
        after it then forget the rows too.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("t | __time__\\n1 | 2\\n5 | 4\\n6 | 6")
        >>> pw.debug.compute_and_print_update_stream(t.forget(pw.this.t, 2), include_id=False)
        t | __time__ | __diff__
        1 | 2        | 1
        5 | 4        | 1
        1 | 6        | -1
        6 | 6        | 1
        """
        return self._forget(wrap(time_column) + threshold, time_column, mark_forgetting_records)

    def buffer(self, time_column: Any, threshold: Any) -> "Table":
        """The rows, each held back until ``time_column <= now - threshold``, where ``now``
        is the largest ``time_column`` so far (this step's included); rows still held
        when the input ends come out then.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("t | __time__\\n1 | 2\\n2 | 4\\n5 | 6")
        >>> pw.debug.compute_and_print_update_stream(  # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
        ...     t.buffer(pw.this.t, 3), include_id=False)
        t | __time__ | __diff__
        1 | 6 | 1
        2 | 6 | 1
        5 | ... | 1
        """
        return self._buffer(wrap(time_column) + threshold, time_column)

    def _freeze(self, threshold_column: Any, time_column: Any, instance_column: Any = None) -> "Table":
        """``ignore_late`` with the threshold given per row, per instance."""
        return self._gate("ignore_late", threshold_column, time_column, instance_column)

    def _forget(
        self, threshold_column: Any, time_column: Any, mark_forgetting_records: bool, instance_column: Any = None,
    ) -> "Table":
        """``forget`` with the threshold given per row, per instance."""
        mode = "forget_marked" if mark_forgetting_records else "forget"
        return self._gate(mode, threshold_column, time_column, instance_column)

    def filter_out_results_of_forgetting(self, ensure_consistency: bool = False) -> "Table":
        """The table without the changes that forgetting caused (``forget`` with
        ``mark_forgetting_records=True``, earlier in the program): rows forgotten stay,
        and results computed from them are not retracted.  With ``ensure_consistency``,
        an id whose row was kept and gets a new one has the kept row retracted first.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("t | __time__\\n1 | 2\\n5 | 4\\n9 | 6")
        >>> counted = t.forget(pw.this.t, 2, mark_forgetting_records=True).reduce(n=pw.reducers.count())
        >>> pw.debug.compute_and_print_update_stream(
        ...     counted.filter_out_results_of_forgetting(ensure_consistency=True), include_id=False)
        n | __time__ | __diff__
        1 | 2        | 1
        1 | 4        | -1
        2 | 4        | 1
        2 | 6        | -1
        3 | 6        | 1

        (``t=1`` is forgotten at time 7, right after the step at 6; the count keeps it.)
        """
        node = n.FilterOutForgetting(dict(self._node.columns), self._node, ensure_consistency)
        return self._derive(node, universe=Universe(self._universe))

    def _buffer(self, threshold_column: Any, time_column: Any, instance_column: Any = None) -> "Table":
        """``buffer`` with the threshold given per row, per instance."""
        return self._gate("buffer", threshold_column, time_column, instance_column)

    def _gate(self, mode: str, threshold: Any, time: Any, instance: Any, equivalent: bool = False) -> "Table":
        """A ``TimeGate``; with ``equivalent``, the result answers for this table's columns
        (a temporal operator's rows passing through gates before it)."""
        bound_instance = self._bind(instance) if instance is not None else None
        node = n.TimeGate(dict(self._node.columns), self._node, mode, self._bind(threshold), self._bind(time), bound_instance)
        # ignore_late and forget keep some of the rows, a buffer all of them (in the end)
        universe = self._universe if mode == "buffer" else Universe(self._universe)
        return self._derive(node, equivalent=self if equivalent else None, universe=universe)

    def sort(self, key: Any, instance: Any = None) -> "Table":
        """Columns ``prev`` and ``next``: ids of the neighbouring rows in key order."""
        columns = {"prev": dt.POINTER.with_optional(), "next": dt.POINTER.with_optional()}
        node = n.Sort(columns, self._node, self._key(key), self._key(instance) if instance is not None else None)
        return self._derive(node, universe=self._universe)  # one row per row, same ids

    def diff(self, timestamp: Any, *values: ColumnRef, instance: Any = None) -> "Table":
        """For each row, ``diff_<value>``: its value minus the value of the row before it in
        ``timestamp`` order (per ``instance``); None for the first row.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("t | v\\n1 | 1\\n2 | 3\\n3 | 7")
        >>> pw.debug.compute_and_print(t.diff(t.t, t.v), include_id=False)
        diff_v
        None
        2
        4
        """
        order = self.sort(key=timestamp, instance=instance)
        previous = self.ix(order.prev, optional=True)
        return self.select(**{
            f"diff_{v.name}": Require(wrap(self[v.name] - previous[v.name]), (previous[v.name],)) for v in values
        })

    def update_rows(self, other: "Table") -> "Table":
        """Rows of ``other`` replace the rows of this table with the same ids, and its
        other rows are added."""
        if set(other._node.columns) != set(self._node.columns):
            raise PlanError(
                "Columns do not match between argument of Table.update_rows() and the updated table: "
                f"{list(other._node.columns)} and {list(self._node.columns)}"
            )
        if self._universe.is_subset_of(other._universe):
            warn_user("Universe of self is a subset of universe of other in update_rows. Returning other.")
            return other.select(*[other[c] for c in self._node.columns])
        if other._universe.is_subset_of(self._universe):
            return self._merge("update_cells", (self, other), dict(self._node.columns), self._universe)
        return self._merge("update_rows", (self, other), dict(self._node.columns))

    def update_cells(self, other: "Table") -> "Table":
        """For the ids of ``other``, which must be ids of this table (say so with
        ``pw.universes.promise_is_subset_of``), its columns replace this table's values.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("  | a | b\\n1 | 1 | x\\n2 | 2 | y")
        >>> u = pw.debug.table_from_markdown("  | b\\n2 | z")
        >>> pw.universes.promise_is_subset_of(u, t)
        >>> pw.debug.compute_and_print(t.update_cells(u), include_id=False)
        a | b
        1 | x
        2 | z
        """
        missing = set(other._node.columns) - set(self._node.columns)
        if missing:
            raise PlanError(
                f"Columns of the argument in Table.update_cells() not present in the updated table: {sorted(missing)}."
            )
        same_rows = self._universe.is_subset_of(other._universe) and other._universe.is_subset_of(self._universe)
        if same_rows:
            warn_user("Key sets of self and other in update_cells are the same. Using with_columns instead of update_cells.")
            return self.with_columns(*[other[c] for c in other._node.columns])
        if not other._universe.is_subset_of(self._universe):
            raise PlanError(
                "Universe of the argument of Table.update_cells() needs to be a subset of the universe of the "
                "updated table.\nConsider using pw.universes.promise_is_subset_of() to assert this.\n"
                "(However, untrue assertion might result in runtime errors.)"
            )
        return self._merge("update_cells", (self, other), dict(self._node.columns), self._universe)

    def __lshift__(self, other: "Table") -> "Table":
        """``t << other`` is ``t.update_cells(other)``, as in Pathway."""
        return self.update_cells(other)

    def difference(self, other: "Table") -> "Table":
        """The rows whose ids are not in ``other``."""
        return self._merge("difference", (self, other), dict(self._node.columns), Universe(self._universe))

    def intersect(self, *others: "Table") -> "Table":
        """The rows whose ids are in every one of ``others`` (with none: the table itself)."""
        if not others:
            return self
        universe = Universe(self._universe)
        universe.supersets.extend(other._universe for other in others)  # its ids are among every table's
        return self._merge("intersect", (self, *others), dict(self._node.columns), universe)

    def restrict(self, other: "Table") -> "Table":
        """The rows whose ids are in ``other``, whose ids must be among this table's
        (say so with ``pw.universes.promise_is_subset_of(other, self)``)."""
        if not other._universe.is_subset_of(self._universe):
            raise PlanError(
                "other universe has to be a subset of self universe. Consider using "
                "pw.universes.promise_is_subset_of(other, self) to assert this."
            )
        return self._merge("restrict", (self, other), dict(self._node.columns), other._universe)

    def having(self, *indexers: Expr) -> "Table":
        """The rows whose ids the given pointer columns of another table name."""
        return self.ix(indexers[0], optional=True).filter(this.id.is_not_none())

    def ix(
        self, expression: Expr, *, optional: bool = False, context: Any = None, allow_misses: bool = False
    ) -> "Table | PendingIx":
        """Rows of this table looked up by a pointer column of another table.

        The result has the rows (and ids) of the table that ``expression`` reads.  A
        pointer over ``pw.this`` or reducers is read in the operation that uses the
        result's columns (``t.ix(pw.this.p).name`` in ``select``); ``allow_misses`` (or
        ``optional``) gives None where no row has the id.

        >>> import sparkway as pw
        >>> people = pw.debug.table_from_markdown("  | name\\n1 | Ann\\n2 | Bob")
        >>> pets = pw.debug.table_from_markdown("pet | owner\\ncat | 2").select(
        ...     pw.this.pet, owner=people.pointer_from(pw.this.owner))
        >>> pw.debug.compute_and_print(pets.select(pets.pet, who=people.ix(pets.owner).name), include_id=False)
        pet | who
        cat | Bob
        """
        optional = optional or allow_misses
        holder = _table_of(expression) or (context if isinstance(context, Table) else None)
        if holder is None:
            return PendingIx(self, wrap(expression), optional)
        return self._lookup(holder, expression, optional)

    def _lookup(self, holder: "Table", pointer: Expr, optional: bool) -> "Table":
        """For each row of ``holder``, this table's row whose id ``pointer`` gives."""
        bound = holder._bind(pointer)
        kind = infer(bound, [holder._node.columns]).with_optional(False)
        if kind.is_pointer and not dt.related(kind, self._id_type):  # Pathway's words
            raise PlanTypeError(
                "Indexing a table with a Pointer type with probably mismatched primary keys. Type used was "
                f"{dt.engine_name(kind)}. Indexed id type was {dt.engine_name(self._id_type)}."
            )
        columns = {k: v.with_optional(v.optional or optional) for k, v in self._node.columns.items()}
        node = n.KeyedMerge(columns, (holder._node, self._node), "ix", (bound, None), optional)
        return self._derive(node, universe=holder._universe)  # a row per row of the holder

    def ix_ref(
        self, *args: Any, optional: bool = False, context: Any = None, instance: Any = None, allow_misses: bool = False,
    ) -> "Table | PendingIx":
        """Rows of this table looked up by the values its ids were made from; with
        ``optional``, None where a value is None (or no row has the id).

        >>> import sparkway as pw
        >>> totals = pw.debug.table_from_markdown("k | n\\nA | 1\\nA | 2").groupby(pw.this.k).reduce(
        ...     pw.this.k, n=pw.reducers.sum(pw.this.n))
        >>> keys = pw.debug.table_from_markdown("k\\nA").select(k=pw.this.k)
        >>> pw.debug.compute_and_print(keys.select(n=totals.ix_ref(keys.k).n), include_id=False)
        n
        3
        """
        return self.ix(
            self.pointer_from(*args, optional=optional, instance=instance),
            optional=optional, context=context, allow_misses=allow_misses,
        )

    def _resolve_ix(self, expr: Expr) -> Expr:
        """``IxRef`` columns as columns of ``target.ix(pointer)``, the pointer read from
        this table's rows (``pw.this`` in it, and a placeholder target, mean this table)."""

        def resolve(e: Expr) -> Expr | None:
            if not isinstance(e, IxRef) or any(isinstance(x, ReducerExpr) for x in walk(e.pointer)):
                return None  # a pointer computed per group is looked up after the reduce
            target = self if isinstance(e.target, Placeholder) else e.target
            pointer = transform(self._resolve_ix(e.pointer), lambda x: ColumnRef(self, x.name) if (
                isinstance(x, ColumnRef) and x.table is this) else None)
            return ColumnRef(target._lookup(self, pointer, e.optional), e.name)

        return transform(expr, resolve)

    def _with_lookups(self, exprs: list[tuple[str, Expr]]) -> tuple["Table", list[tuple[str, Expr]]]:
        """Columns of other tables with one row per row of this table, used in this
        table's own operation: ``other.ix(self.p)``, and tables of the same universe
        (``t2 = t.select(...)``, then ``t.select(t.a, t2.b)``: row by row, by id).

        Pathway lets such columns be read like ``t``'s own.  The result is a table holding
        this table's columns plus the looked-up ones (under a prefix), and the expressions
        rewritten to read it.  Columns of tables whose universe may lack some of this
        table's rows are left alone: ``bind`` refuses them.  Calls of method columns
        (``t.method(10)``) become such columns too: the results of a row transformer
        computing them for this table's rows.
        """
        exprs = [(name, self._resolve_ix(e)) for name, e in exprs]
        if any(isinstance(x, MethodCall) for _, e in exprs for x in walk(e)):
            from sparkway.api.row_transformer import with_method_calls  # transformers build on Table

            exprs = with_method_calls(self, exprs)
        lookups: dict[int, tuple[tuple[Expr | None, ...], n.Node, bool]] = {}
        own = {id(self._node), *self._equivalents}
        for _, e in exprs:
            for ref in walk(e):
                if not isinstance(ref, ColumnRef) or not isinstance(ref.table, Table) or id(ref.table._node) in own:
                    continue
                node = ref.table._node
                if self._is_lookup(ref.table):
                    lookups.setdefault(id(node), (node.keys, node.tables[1], node.optional))
                elif self._universe.is_subset_of(ref.table._universe):
                    lookups.setdefault(id(node), ((ColumnRef(n.InputRef(0), "id"), None), node, False))
        if not lookups:
            return self, exprs
        base: Table = self
        prefixes: dict[int, str] = {}
        for j, (key, (keys, target, optional)) in enumerate(lookups.items(), start=_lookups_in(self._node.columns)):
            prefix = prefixes[key] = f"_pw_ix{j}_"
            looked_up = {prefix + c: t.with_optional(t.optional or optional) for c, t in target.columns.items()}
            columns = {**base._node.columns, **looked_up}
            merged = n.KeyedMerge(columns, (base._node, target), "ix", keys, optional, prefix)
            base = base._derive(merged, equivalent=base, universe=base._universe)
        final = base

        def reroute(e: Expr) -> Expr | None:
            if isinstance(e, ColumnRef) and isinstance(e.table, Table) and id(e.table._node) in prefixes:
                return ColumnRef(final, e.name if e.name == "id" else prefixes[id(e.table._node)] + e.name)
            return None

        return final, [(name, transform(e, reroute)) for name, e in exprs]

    def _is_lookup(self, table: "Table") -> bool:
        """Whether ``table`` is ``other.ix(pointer)`` with the pointer in this table."""
        node = table._node
        if not (isinstance(node, n.KeyedMerge) and node.mode == "ix" and node.prefix is None):
            return False
        holder = id(node.tables[0])
        return holder == id(self._node) or holder in self._equivalents

    def _merge(
        self, mode: str, tables: tuple["Table", ...], columns: dict[str, DType], universe: Universe | None = None
    ) -> "Table":
        node = n.KeyedMerge(columns, tuple(t._node for t in tables), mode, (None,) * len(tables))
        return self._derive(node, universe=universe)

    # -- joins and windows ------------------------------------------------------------------
    def join(self, other: "Table", *on: Expr, id: Any = None, how: Any = None, **kwargs: Any) -> "JoinResult":
        """Pairs of rows of this table and ``other`` whose ``on`` conditions hold.

        >>> import sparkway as pw
        >>> a = pw.debug.table_from_markdown("k | x\\n1 | 10")
        >>> b = pw.debug.table_from_markdown("k | y\\n1 | 20")
        >>> a.join(b, a.k == b.k).select(a.k, b.y).column_names()
        ['k', 'y']
        """
        return _joined(self, other, on, how, id, {}, kwargs)

    def join_inner(self, other: "Table", *on: Expr, **kwargs: Any) -> "JoinResult":
        return self.join(other, *on, how=_fixed_mode(JoinMode.INNER, kwargs), **kwargs)

    def join_left(self, other: "Table", *on: Expr, **kwargs: Any) -> "JoinResult":
        return self.join(other, *on, how=_fixed_mode(JoinMode.LEFT, kwargs), **kwargs)

    def join_right(self, other: "Table", *on: Expr, **kwargs: Any) -> "JoinResult":
        return self.join(other, *on, how=_fixed_mode(JoinMode.RIGHT, kwargs), **kwargs)

    def join_outer(self, other: "Table", *on: Expr, **kwargs: Any) -> "JoinResult":
        return self.join(other, *on, how=_fixed_mode(JoinMode.OUTER, kwargs), **kwargs)

    def interval_join(
        self, other: "Table", self_time: Expr, other_time: Expr, interval: Any, *on: Expr,
        behavior: Any = None, how: Any = JoinMode.INNER, **kwargs: Any,
    ) -> "JoinResult":
        """Pairs of rows whose ``on`` conditions hold and whose times are close:
        ``interval.lower_bound <= other_time - self_time <= interval.upper_bound``.

        ``behavior`` (``pw.temporal.common_behavior``) delays rows, ignores late ones and,
        without ``keep_results``, forgets old ones, on each side by its own time.

        >>> import sparkway as pw
        >>> a = pw.debug.table_from_markdown("t\\n1\\n5")
        >>> b = pw.debug.table_from_markdown("t\\n2")
        >>> a.interval_join(b, a.t, b.t, pw.temporal.interval(0, 1)).select(lt=a.t, rt=b.t).column_names()
        ['lt', 'rt']
        """
        if other is self:  # its columns could not say which side they are read from
            raise PlanError("Cannot join table with itself. Use <table>.copy() as one of the arguments of the join.")
        lower, upper = interval.lower_bound, interval.upper_bound
        self_time, other_time = _placeholders_as_this(self_time), _placeholders_as_this(other_time)
        check_time_types(
            {"self_time_expression": (self, self_time), "other_time_expression": (other, other_time)},
            {"lower_bound": lower, "upper_bound": upper},
        )
        if lower > upper:
            raise PlanError(f"an interval's lower bound ({lower}) must not exceed its upper bound ({upper})")
        mode = getattr(how, "value", how) or "inner"
        left, right = with_behavior(self, self_time, behavior), with_behavior(other, other_time, behavior)
        return IntervalJoinResult(left, right, on, mode, None, (self_time, other_time, lower, upper))

    def interval_join_inner(self, other: "Table", *args: Any, **kwargs: Any) -> "JoinResult":
        return self.interval_join(other, *args, how="inner", **kwargs)

    def interval_join_left(self, other: "Table", *args: Any, **kwargs: Any) -> "JoinResult":
        return self.interval_join(other, *args, how="left", **kwargs)

    def interval_join_right(self, other: "Table", *args: Any, **kwargs: Any) -> "JoinResult":
        return self.interval_join(other, *args, how="right", **kwargs)

    def interval_join_outer(self, other: "Table", *args: Any, **kwargs: Any) -> "JoinResult":
        return self.interval_join(other, *args, how="outer", **kwargs)

    def window_join(
        self, other: "Table", self_time: Expr, other_time: Expr, window: Any, *on: Expr,
        how: Any = JoinMode.INNER, **kwargs: Any,
    ) -> "JoinResult":
        """Pairs of rows whose ``on`` conditions hold and that are in the same window
        (``pw.temporal.tumbling/sliding/session``); a row in several sliding windows
        pairs once per window.  The result has ``_pw_window_start``, ``_pw_window_end``
        and ``_pw_window``; in left/right/outer joins a row without a partner in a
        window comes out once for that window.

        >>> import sparkway as pw
        >>> a = pw.debug.table_from_markdown("x | t\\n1 | 1\\n2 | 5")
        >>> b = pw.debug.table_from_markdown("y | t\\n7 | 2")
        >>> pw.debug.compute_and_print(
        ...     a.window_join_left(b, a.t, b.t, pw.temporal.tumbling(4)).select(a.x, b.y, pw.this._pw_window_start),
        ...     include_id=False)
        x | y | _pw_window_start
        1 | 7 | 0
        2 |   | 4
        """
        self_time, other_time = _placeholders_as_this(self_time), _placeholders_as_this(other_time)
        check_window_types(window, {"left_time_expression": (self, self_time), "right_time_expression": (other, other_time)})
        left, right = window.join_sides(self, other, self_time, other_time, on)
        same_window = tuple(ColumnRef(left, c) == ColumnRef(right, c) for c in ("_pw_window_start", "_pw_window_end"))
        mode = getattr(how, "value", how) or "inner"
        return WindowJoinResult(left, right, (*on, *same_window), mode, None, shared=("_pw_window",))

    def window_join_inner(self, other: "Table", *args: Any, **kwargs: Any) -> "JoinResult":
        return self.window_join(other, *args, how="inner", **kwargs)

    def window_join_left(self, other: "Table", *args: Any, **kwargs: Any) -> "JoinResult":
        return self.window_join(other, *args, how="left", **kwargs)

    def window_join_right(self, other: "Table", *args: Any, **kwargs: Any) -> "JoinResult":
        return self.window_join(other, *args, how="right", **kwargs)

    def window_join_outer(self, other: "Table", *args: Any, **kwargs: Any) -> "JoinResult":
        return self.window_join(other, *args, how="outer", **kwargs)

    def asof_join(
        self, other: "Table", self_time: Expr, other_time: Expr, *on: Expr, how: Any,
        behavior: Any = None, defaults: dict | None = None, direction: Any = None,
        left_instance: Any = None, right_instance: Any = None,
    ) -> "JoinResult":
        """Each row of this table (``how=pw.JoinMode.LEFT``), of ``other`` (``RIGHT``) or of
        both (``OUTER``) with the row of the other table nearest in time among those with
        equal ``on`` keys (and ``left_instance == right_instance``): by default
        (``direction=pw.temporal.Direction.BACKWARD``) the latest one at or before its
        time.  Columns of a missing row are None, or their value in ``defaults``.
        ``select`` also reads ``pw.this.instance``, ``pw.this.t`` and ``pw.this.side``
        (the row's keys, its time, and whether it is from ``other``).

        ``behavior`` (``pw.temporal.common_behavior``) delays rows (``delay``), ignores
        rows late by ``cutoff`` and forgets rows older than that: they are no longer
        peers of new rows, and without ``keep_results`` their results are retracted.

        >>> import sparkway as pw
        >>> trades = pw.debug.table_from_markdown("t | qty\\n3 | 10\\n7 | 20")
        >>> quotes = pw.debug.table_from_markdown("t | price\\n1 | 5\\n5 | 6")
        >>> pw.debug.compute_and_print(
        ...     trades.asof_join_left(quotes, trades.t, quotes.t).select(trades.qty, quotes.price),
        ...     include_id=False)
        qty | price
        10  | 5
        20  | 6
        """
        from sparkway.api import asof, temporal

        direction = temporal.Direction.BACKWARD if direction is None else direction
        return asof.asof_join(
            self, other, self_time, other_time, on, how, defaults, direction, left_instance, right_instance, behavior,
        )

    def asof_join_left(self, other: "Table", *args: Any, **kwargs: Any) -> "JoinResult":
        return self.asof_join(other, *args, how="left", **kwargs)

    def asof_join_right(self, other: "Table", *args: Any, **kwargs: Any) -> "JoinResult":
        return self.asof_join(other, *args, how="right", **kwargs)

    def asof_join_outer(self, other: "Table", *args: Any, **kwargs: Any) -> "JoinResult":
        return self.asof_join(other, *args, how="outer", **kwargs)

    def asof_now_join(
        self, other: "Table", *on: Expr, how: Any = JoinMode.INNER, id: Any = None,
        left_instance: Any = None, right_instance: Any = None,
    ) -> "JoinResult":
        """Each row of this table joined, when it arrives, with the rows of ``other`` at
        that moment (after the changes of the same time); its results are never updated.
        This table has to be append-only; its rows are not kept.  ``how`` is
        ``pw.JoinMode.INNER`` or ``LEFT``; ``id=pw.left.id`` keeps this table's ids.

        >>> import sparkway as pw
        >>> queries = pw.debug.table_from_markdown("k | q | __time__\\n1 | 10 | 2\\n1 | 11 | 6")
        >>> data = pw.debug.table_from_markdown(
        ...     "id | k | v | __time__ | __diff__\\n1 | 1 | 5 | 2 | 1\\n1 | 1 | 5 | 4 | -1\\n2 | 1 | 7 | 4 | 1")
        >>> pw.debug.compute_and_print(
        ...     queries.asof_now_join(data, queries.k == data.k).select(queries.q, data.v), include_id=False)
        q  | v
        10 | 5
        11 | 7
        """
        mode = getattr(how, "value", how)
        if mode not in ("inner", "left"):
            raise PlanError(f"an asof_now_join is an inner or left join, not {mode!r}: use how=pw.JoinMode.INNER or LEFT")
        if (left_instance is None) != (right_instance is None):
            raise PlanError("give both left_instance= and right_instance=, or neither")
        if left_instance is not None:
            on = (*on, left_instance == right_instance)
        return JoinResult(self, other, on, mode, id, keep_left=False)

    def asof_now_join_inner(self, other: "Table", *on: Expr, **kwargs: Any) -> "JoinResult":
        return self.asof_now_join(other, *on, how="inner", **kwargs)

    def asof_now_join_left(self, other: "Table", *on: Expr, **kwargs: Any) -> "JoinResult":
        return self.asof_now_join(other, *on, how="left", **kwargs)

    def windowby(
        self,
        time_expr: Expr,
        *args: Any,
        window: Any,
        instance: Any = None,
        shard: Any = None,
        behavior: Any = None,
        **kwargs: Any,
    ) -> "GroupedTable":
        """Groups rows into time windows (``pw.temporal.session/tumbling/sliding``),
        per ``instance`` (``shard`` is its older name); follow with ``.reduce(...)``.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("t | v\\n1 | 10\\n7 | 20")
        >>> w = t.windowby(t.t, window=pw.temporal.tumbling(duration=5))
        >>> pw.debug.compute_and_print(w.reduce(start=pw.this._pw_window_start, n=pw.reducers.count()), include_id=False)
        start | n
        0     | 1
        5     | 1
        """
        if args:
            raise PlanError("Table.windowby() received extra args.\nIt handles grouping only by a single column.")
        if kwargs:
            raise PlanError(
                "Table.windowby() received extra kwargs.\nYou probably want to use "
                f"Table.windowby(...).reduce(**kwargs) to compute output columns. Got: {sorted(kwargs)}."
            )
        if shard is not None:
            if instance is not None:
                raise PlanError("give instance= or its older name shard=, not both")
            instance = shard
        check_window_types(window, {"time_expr": (self, time_expr)})
        return window.assign(self, time_expr, instance, behavior)

    # -- plumbing ------------------------------------------------------------------------------
    def _derive(
        self, node: n.Node, equivalent: "Table | None" = None, universe: Universe | None = None,
        id_type: DType | None = None,
    ) -> "Table":
        """A table of ``node``; a new universe unless ``universe`` says which it shares (the
        ids then keep their type, unless ``id_type`` says otherwise)."""
        same = (id(equivalent._node), *equivalent._equivalents) if equivalent is not None else ()
        if id_type is None:
            kept = universe is not None and universe.is_subset_of(self._universe)
            id_type = self._id_type if kept else dt.POINTER
        return Table(node, self._label, same, universe, id_type)

    def _bind(self, expr: Any) -> Expr:
        """The expression with its column references pointing at input 0."""
        sides = {id(self._node): 0, **{e: 0 for e in self._equivalents}}
        return bind(wrap(expr), sides, this_index=0)

    def debug(self, name: str) -> "Table":
        return self

    def await_futures(self) -> "Table":
        """The table with the results of fully async UDFs (``pw.udfs.fully_async_executor``)
        usable in operations; sparkway computes them within the step, so none is pending.

        >>> import sparkway as pw
        >>> @pw.udf(executor=pw.udfs.fully_async_executor())
        ... async def inc(a: int) -> int:
        ...     return a + 1
        >>> t = pw.debug.table_from_markdown("a\\n1").with_columns(b=inc(pw.this.a))
        >>> str(t.schema._dtypes()["b"]), str(t.await_futures().schema._dtypes()["b"])
        ('Future[int]', 'int')
        """
        columns = {name: kind.items[0] if kind.is_future else kind for name, kind in self._node.columns.items()}
        if columns == dict(self._node.columns):
            return self
        exprs = tuple((name, ColumnRef(n.InputRef(0), name)) for name in columns)
        return self._derive(n.Select(columns, self._node, exprs), universe=self._universe)

    def with_universe_of(self, other: "Table") -> "Table":
        """The same rows, declared to have exactly ``other``'s ids, so that the columns of
        each can be used in the other's operations (not checked: a missing id stops the
        run where a column is read).

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("  | a\\n1 | 8\\n2 | 9")
        >>> positive = t.filter(t.a > 0).with_universe_of(t)  # a filter that keeps every row
        >>> t.select(t.a, b=positive.a * 2).column_names()
        ['a', 'b']
        """
        columns = dict(self._node.columns)
        same = tuple((c, ColumnRef(n.InputRef(0), c)) for c in columns)
        return self._derive(n.Select(columns, self._node, same), universe=other._universe)


def _same_value(value: Any) -> Any:
    return value


def bind(expr: Expr, sides: dict[int, int], this_index: int | None, columns: list[dict] | None = None) -> Expr:
    """Rewrites column references to ``InputRef`` of the node being built.

    ``sides`` maps plan nodes (by identity) to input positions; ``pw.this`` means
    ``this_index``, or, when None (in a join), whichever side has the column.
    """

    def rebind(e: Expr) -> Expr | None:
        if not isinstance(e, ColumnRef):
            return None
        table = e.table
        if isinstance(table, n.InputRef):
            return e
        if table is left:
            return ColumnRef(n.InputRef(0), e.name)
        if table is right:
            return ColumnRef(n.InputRef(1), e.name)
        if isinstance(table, Placeholder):
            if this_index is not None:
                return ColumnRef(n.InputRef(this_index), e.name)
            return ColumnRef(n.InputRef(_side_having(e.name, columns or [])), e.name)
        node = getattr(table, "_node", None)
        if node is not None and id(node) in sides:
            return ColumnRef(n.InputRef(sides[id(node)]), e.name)
        raise PlanError(
            f"You cannot use <table1>.{e.name} in this context. Its universe is different than the universe "
            "of the table the method was called on. You can use <table1>.with_universe_of(<table2>) to assign "
            "universe of <table2> to <table1> if you're sure their sets of keys are equal. (Or join the tables.)"
        )

    return transform(expr, rebind)


def _side_having(name: str, columns: list[dict]) -> int:
    sides = [i for i, cols in enumerate(columns) if name in cols]
    if not sides:
        raise UnknownColumnError(f"pw.this.{name}: neither side of the join has a column {name!r}")
    if len(sides) > 1:
        raise UnknownColumnError(f"pw.this.{name} is ambiguous in a join: both tables have it; use pw.left or pw.right")
    return sides[0]


def _in_order(table: Table, names: list[str]) -> Table:
    """``table`` with its columns in the order of ``names`` when it has the same ones
    (concat matches columns by name, as Pathway does)."""
    if list(table._node.columns) == names or set(table._node.columns) != set(names):
        return table
    return table.select(*(table[c] for c in names))


def _not_none(predicate: Expr) -> set[str]:
    """The columns a filter's predicate requires to be set (``pw.this.a.is_not_none() & ...``):
    the filtered table's are not optional, as in Pathway."""
    if isinstance(predicate, BinOp) and predicate.op == "&":
        return _not_none(predicate.left) | _not_none(predicate.right)
    if isinstance(predicate, IsNone) and predicate.negate and isinstance(predicate.arg, ColumnRef):
        return {predicate.arg.name}
    return set()


def _table_of(expr: Expr) -> Table | None:
    """The table whose rows an expression reads; None when that is left to the operation
    that uses it (``pw.this``, reducers, constants)."""
    nodes = list(walk(wrap(expr)))
    if any(isinstance(e, ReducerExpr) for e in nodes):
        return None
    return next((e.table for e in nodes if isinstance(e, ColumnRef) and isinstance(e.table, Table)), None)


def _lookups_in(columns: dict[str, DType]) -> int:
    """How many lookups added columns to a table already (their prefixes are numbered)."""
    numbers = [int(m.group(1)) for c in columns if (m := re.match(r"_pw_ix(\d+)_", c))]
    return max(numbers, default=-1) + 1


def _named_exprs(
    args: tuple, kwargs: dict, tables: list[Any], this_columns: list[str] | None = None, method: str = "select",
) -> list[tuple[str, Expr]]:
    """``select``'s arguments as (name, expression) pairs; ``*pw.this`` expands, and so
    does ``**pw.left``, after the other named expressions (as in Pathway)."""
    out: dict[str, Expr] = {}
    expanded = [v for v in kwargs.values() if isinstance(v, AllColumns)]
    for a in args:
        if isinstance(a, AllColumns):
            out.update(_all_columns(a, tables, this_columns))
        elif isinstance(a, (ColumnRef, IxRef)):
            out[a.name] = a
        elif isinstance(a, ReducerExpr) and a.args and isinstance(a.args[0], ColumnRef):
            out[a.args[0].name] = a  # reduce(pw.reducers.any(t.pet)) names the column pet
        elif isinstance(a, str):
            raise PlanError(f"Expected a ColumnReference, found a string. Did you mean this.{a} instead of {a!r}?")
        else:
            raise PlanError(
                f"In {method}() all positional arguments have to be a ColumnReference. "
                f"Got {a!r}: give expressions a name, {method}(name=...)."
            )
    if "id" in kwargs:
        raise PlanError("Can't use 'id' as a column name: set the ids with with_id() or with_id_from()")
    for k, v in kwargs.items():
        if not isinstance(v, AllColumns):
            out[k] = wrap(v)
    for a in expanded:  # select(**pw.left): every column (Placeholder.keys)
        out.update(_all_columns(a, tables, this_columns))
    return list(out.items())


def _all_columns(columns: AllColumns, tables: list[Any], this_columns: list[str] | None = None) -> dict[str, Expr]:
    """The columns ``*x``/``**x`` unpack to; ``this_columns``: what ``pw.this`` has (a join's)."""
    source = columns.table
    if source is this and this_columns is not None:
        return {out: ColumnRef(this, c) for out, c in columns.resolve(this_columns)}
    if isinstance(source, Placeholder):
        source = tables[0] if source is this else tables[0 if source is left else 1]
    ref_table = source if isinstance(source, Table) else columns.table
    return {out: ColumnRef(ref_table, c) for out, c in columns.resolve(list(source._node.columns))}


def _types(exprs: Iterable[tuple[str, Expr]], inputs: list[dict]) -> dict[str, DType]:
    return {name: infer(e, inputs) for name, e in exprs}


def _pairs_columns(left: dict[str, DType], right: dict[str, DType], how: str) -> PaddedColumns:
    """The columns of a join's pairs: each side's, prefixed, optional where that side
    may be missing (an outer join's padding), which ``pw.require(..., pw.right.id)``
    undoes (``PaddedColumns``)."""
    columns, ids, sides = {}, {}, {}
    for prefix, side, padded in (("_l_", left, how in ("right", "outer")), ("_r_", right, how in ("left", "outer"))):
        own = {f"{prefix}{k}": v for k, v in side.items()}
        columns.update({k: v.with_optional(v.optional or padded) for k, v in own.items()})
        ids[f"{prefix}id"] = dt.POINTER.with_optional(padded)
        if padded:
            sides[f"{prefix}id"] = own
    return PaddedColumns({**columns, **ids}, sides)


@traced
class GroupedTable(_Promises):
    """A table grouped by key columns; ``reduce`` gives one row per group.  Promises
    about it (``pw.universes``) are about the ids of its groups, i.e. of ``reduce``'s rows.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("w | n\\na | 1\\nb | 2\\na | 3")
    >>> pw.debug.compute_and_print(t.groupby(t.w).reduce(t.w, total=pw.reducers.sum(t.n)), include_id=False)
    w | total
    a | 4
    b | 2
    """

    def __init__(
        self, table: Table, keys: list[tuple[str, Expr]], aliases: dict[str, str] | None = None,
        bind: Callable[[Expr], Expr] | None = None, id_key: str | None = None, sort_by: Expr | None = None,
        skip_errors: bool = True, row_ids: str | None = None, windows: bool = False,
    ) -> None:
        self._table = table
        self._universe = Universe()  # the ids of the groups, which reduce's rows get
        self._windows = windows  # grouped by windowby: rows have a data time
        # a column holding the ids the rows had before they were copied into windows:
        # reducers (argmin, pw.this.id) see those, as in Pathway
        self._row_ids = row_ids
        self._skip_errors = skip_errors  # reducers leave out Error values (else give an Error)
        self._keys = keys
        self._id_key = id_key  # groupby(id=p): the groups' ids are the values of key p
        self._sort_by = sort_by  # orders the values of the reducers that list them
        self._aliases = aliases or {}  # source column name -> key column name (windows, joins)
        # how the expressions of reduce() are read (a join's: from the joined pairs)
        self._bind = bind or (lambda e: e)
        self._bind_is_own = bind is None

    def __getattr__(self, name: str) -> ColumnRef:
        """A column of the grouped rows, for reducers: ``grouped.reduce(pw.reducers.sum(grouped.x))``."""
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._table, name)

    def reduce(self, *args: Any, **kwargs: Any) -> Table:
        """One row per group: group columns and reducers such as ``pw.reducers.count()``.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("w | n\\na | 1\\na | 2")
        >>> t.groupby(pw.this.w).reduce(pw.this.w, total=pw.reducers.sum(pw.this.n)).column_names()
        ['w', 'total']
        """
        table = self._table
        exprs = [(name, self._bind(e)) for name, e in _named_exprs(args, kwargs, [table], method="reduce")]
        if self._bind_is_own:  # reducers of columns of tables with the same rows, or looked up
            table, exprs = table._with_lookups(exprs)
        key_names = [k for k, _ in self._keys]
        aggregates: list[tuple[str, n.Aggregate]] = []
        by_arrival: list[str] = []  # latest reducers over rows that may be deleted

        def lift(e: Expr) -> Expr | None:
            if isinstance(e, ReducerExpr):
                if e.kind in ("latest", "earliest") and self._windows:  # Pathway's words
                    warn_user(
                        f"{e.kind} reducer uses processing time to choose elements while windowby uses data time "
                        "to assign entries to windows. Maybe it is not the behavior you want. To choose elements "
                        f"according to their data time, you may use {'max' if e.kind == 'latest' else 'min'} reducer."
                    )
                elif e.kind in ("latest", "earliest") and not n.is_append_only(table._node):
                    warn_user(
                        f"the {e.kind} reducer requires an append-only input, and this one's rows may be "
                        "updated or deleted: to choose a row by value, use pw.reducers.argmax/argmin instead"
                    )
                    if e.kind == "latest":  # as in Pathway (earliest keeps its row: it came first)
                        by_arrival.append(e.kind)
                args_bound = tuple(table._bind(a) for a in e.args)
                if self._row_ids is not None:
                    args_bound = _with_row_ids(e.kind, args_bound, self._row_ids)
                params = e.params
                if self._sort_by is not None and e.kind in _ORDERED_BY_SORT_BY:
                    args_bound, params = (*args_bound, self._sort_by), (*params, "sort_by")
                name = f"_pw_agg_{len(aggregates)}"
                aggregates.append((name, n.Aggregate(e.kind, args_bound, params)))
                return ColumnRef(n.InputRef(0), name)
            if isinstance(e, ColumnRef):
                name = self._aliases.get(e.name, e.name)
                if name not in key_names and e.name != "id":
                    raise PlanError(
                        f"You cannot use <table1>.{e.name} in this reduce statement.\nMake sure that "
                        f"<table1>.{e.name} is used in a groupby or wrap it with a reducer, e.g. "
                        f"pw.reducers.count(<table1>.{e.name})"
                    )
                return ColumnRef(n.InputRef(0), "id" if e.name == "id" else name)
            return None

        lifted = [(name, transform(e, lift)) for name, e in exprs]
        agg_types = {
            name: _aggregate_type(a, [table._node.columns]) for name, a in aggregates
        }
        key_types = {k: infer(e, [table._node.columns]) for k, e in self._keys}
        source = table._node
        if by_arrival:  # they keep one row per group, and could not tell which row replaces a deleted one
            why = (f"the {by_arrival[0]} reducer cannot take a row back: use pw.reducers.argmax/argmin to choose "
                   "a row by value, or make the input append-only")
            source = n.AppendOnly(dict(source.columns), source, check=True, why=why)
        reduce_node: n.Node = n.Reduce(
            {**key_types, **agg_types}, source, tuple(self._keys), tuple(aggregates), self._skip_errors
        )
        id_type = dt.pointer_to(*key_types.values())
        if self._id_key is not None:
            new_id = (ColumnRef(n.InputRef(0), self._id_key),)
            reduce_node = n.Reindex(dict(reduce_node.columns), reduce_node, new_id, use_pointer=True)
            id_type = key_types[self._id_key].with_optional(False)
        if not any(isinstance(x, IxRef) for _, e in lifted for x in walk(e)):
            select = n.Select(_types(lifted, [reduce_node.columns]), reduce_node, tuple(lifted))
            return Table(select, table._label, universe=self._universe, id_type=id_type)
        # lookups by pointers computed per group (t.ix(pw.reducers.argmax(...)).name): a
        # select over the groups' table, where a placeholder target is the grouped table
        groups = Table(reduce_node, table._label, universe=self._universe, id_type=id_type)

        def on_groups(e: Expr) -> Expr | None:
            if isinstance(e, ColumnRef) and isinstance(e.table, n.InputRef):
                return ColumnRef(groups, e.name)
            if isinstance(e, IxRef) and isinstance(e.target, Placeholder):
                return IxRef(table, transform(e.pointer, on_groups), e.name, e.optional)
            return None

        return groups.select(**{name: transform(e, on_groups) for name, e in lifted})


def _with_row_ids(kind: str, args: tuple[Expr, ...], row_ids: str) -> tuple[Expr, ...]:
    """A reducer's arguments reading the rows' own ids from ``row_ids``."""
    own = ColumnRef(n.InputRef(0), row_ids)
    args = tuple(transform(a, lambda x: own if isinstance(x, ColumnRef) and x.name == "id" else None) for a in args)
    return (*args, own) if kind in ("argmin", "argmax") and len(args) == 1 else args


def _concat_id_type(tables: tuple[Table, ...], reindex: bool) -> DType:
    """The ids' type of a concatenation: new ids of any origin, or what all tables' have."""
    if reindex:
        return dt.POINTER
    kinds = [t._id_type for t in tables]
    try:
        return functools.reduce(dt.unify, kinds)
    except PlanTypeError:  # Pathway's words
        raise PlanTypeError(
            f"Incompatible types for a concat operation.\nThe types are: ({', '.join(map(dt.engine_name, kinds))}). "
            "You might try casting the id type to pw.Pointer to circumvent this, but this is most probably an error."
        ) from None


def _flattened_item(kind: DType) -> DType:
    """The type of the rows ``flatten`` makes of a column of type ``kind``."""
    if kind.name == "list":
        return kind.items[0]
    if kind.is_array:
        return dt.array_item(kind)
    if kind in (dt.JSON, dt.STR):  # JSON arrays' items; strings' characters
        return kind
    if kind.name in ("tuple", "Any"):
        return dt.ANY
    raise PlanTypeError(f"Cannot flatten column of type {dt.engine_name(kind)}. Flatten takes lists, tuples, strings, JSON and numpy arrays.")


# reducers whose values come in the order of groupby's sort_by (an extra last argument,
# flagged by a last parameter "sort_by"), as in Pathway
_ORDERED_BY_SORT_BY = ("tuple", "ndarray")


def _aggregate_type(agg: n.Aggregate, inputs: list[dict]) -> DType:
    return reducer_type(agg.kind, [infer(a, inputs) for a in agg.args], agg.params)


@traced
class JoinResult(_Promises):
    """Matched pairs of two tables' rows; ``select`` builds the output table.

    >>> import sparkway as pw
    >>> people = pw.debug.table_from_markdown("name | city\\nann | Oslo\\nbob | Rome")
    >>> cities = pw.debug.table_from_markdown("city | country\\nOslo | Norway\\nRome | Italy")
    >>> pairs = people.join(cities, pw.left.city == pw.right.city)
    >>> pw.debug.compute_and_print(pairs.select(pw.left.name, pw.right.country), include_id=False)
    name | country
    ann  | Norway
    bob  | Italy
    """

    def __init__(
        self, left_table: Table, right_table: Table, on: tuple, how: str, id_from: Any,
        interval: tuple[Any, Any, Any, Any] | None = None, shared: tuple[str, ...] = (), keep_left: bool = True,
        aliases: dict[int, tuple[Table, Table, dict[str, str]]] | None = None,
        exactly_once: tuple[bool, bool] = (False, False),
    ) -> None:
        self._left, self._right = left_table, right_table
        # tables joined earlier in a chain (t1.join(t2).join(t3)): their columns are hidden
        # columns of one side: node id -> (that table, the side's table, column -> its column)
        self._aliases = aliases or {}
        on = tuple(self._unalias(c) for c in on)
        id_from = self._unalias(id_from) if id_from is not None else None
        sides = _join_sides(left_table, right_table)
        cols = [left_table._node.columns, right_table._node.columns]
        left_keys, right_keys = [], []
        # columns named alike on both sides of an equality: pw.this reads them from either
        self._shared = set(shared)
        for cond in on:
            a, b = _condition_sides(cond, sides, cols)
            if isinstance(a, ColumnRef) and isinstance(b, ColumnRef) and a.name == b.name:
                self._shared.add(a.name)
            left_keys.append(_to_side(a, 0))
            right_keys.append(_to_side(b, 1))
        id_side = None
        if id_from is not None:
            id_side = "left" if (id_from.table is left or id_from.table is left_table) else "right"
        self._how = how
        self._interval_join = interval is not None
        columns = _pairs_columns(cols[0], cols[1], how)
        if interval is not None:
            left_time, right_time, lower, upper = interval
            interval = (
                _to_side(bind(wrap(left_time), sides, 0, cols), 0),
                _to_side(bind(wrap(right_time), sides, 1, cols), 1),
                lower,
                upper,
            )
        self._node = n.Join(
            columns, left_table._node, right_table._node, tuple(left_keys), tuple(right_keys), how, id_side, interval,
            keep_left, exactly_once,
        )
        self._universe = _join_universe(left_table, right_table, how, id_side)
        self._id_type = {"left": left_table._id_type, "right": right_table._id_type}.get(id_side, dt.POINTER)

    @property
    def _join_mode(self) -> JoinMode:
        return JoinMode(self._node.how)

    def select(self, *args: Any, **kwargs: Any) -> Table:
        """The output columns, from ``pw.left``, ``pw.right``, ``pw.this`` or the tables."""
        exprs = _named_exprs(args, kwargs, [self._left, self._right], self._this_columns())
        if any(self._is_foreign(ref) for _, e in exprs for ref in walk(wrap(e))):
            return self._select_with_foreign(exprs)
        bound = [(name, self._bind_pair(e)) for name, e in exprs]
        node = n.Select(_types(bound, [self._node.columns]), self._node, tuple(bound))
        return Table(node, self._left._label, universe=self._universe, id_type=self._id_type)

    def _is_foreign(self, ref: Any) -> bool:
        """Whether ``ref`` is a column of a table that is not joined here but has a row per
        pair: one with the pairs' ids (another select of this join), or ``other.ix``
        by a pointer of one side (Pathway reads both in the join's select)."""
        if not isinstance(ref, ColumnRef) or not isinstance(ref.table, Table):
            return False
        table = ref.table
        if id(table._node) in _join_sides(self._left, self._right) or id(table._node) in self._aliases:
            return False
        return table._universe is self._universe or self._side_lookup(table) is not None

    def _side_lookup(self, table: Table) -> int | None:
        """The side (0, 1) holding the pointer of ``table`` when it is ``other.ix(pointer)``
        with the pointer a column of that side; else None."""
        node = table._node
        if not (isinstance(node, n.KeyedMerge) and node.mode == "ix" and node.prefix is None):
            return None
        return _join_sides(self._left, self._right).get(id(node.tables[0]))

    def _select_with_foreign(self, exprs: list[tuple[str, Any]]) -> Table:
        """``select`` reading columns of tables with a row per pair (``_is_foreign``): the
        pairs become a table holding every joined column, whose select reads them by id."""
        pairs, aliases = self._as_table()
        sides = _join_sides(self._left, self._right)
        side_tables = (self._left, self._right)

        def hidden(table: Table, name: str) -> ColumnRef:
            if id(table._node) not in aliases:  # another Table object over a side's node
                table = side_tables[sides[id(table._node)]]
            return ColumnRef(pairs, aliases[id(table._node)][2][name])

        def lookup_on_pairs(table: Table) -> Table:
            node = table._node
            side = side_tables[self._side_lookup(table)]
            pointer = transform(node.keys[0], lambda x: hidden(side, x.name) if (
                isinstance(x, ColumnRef) and isinstance(x.table, n.InputRef)) else None)
            merged = n.KeyedMerge(dict(node.columns), (pairs._node, node.tables[1]), "ix", (pairs._bind(pointer), None),
                                  node.optional)
            return pairs._derive(merged, universe=pairs._universe)

        lookups: dict[int, Table] = {}

        def via_pairs(e: Expr) -> Expr | None:
            if not isinstance(e, ColumnRef):
                return None
            if e.table is left or e.table is right:
                return hidden(side_tables[0 if e.table is left else 1], e.name)
            if not isinstance(e.table, Table):
                return None  # pw.this: the pairs table has the columns pw.this reads
            if id(e.table._node) in aliases or id(e.table._node) in sides:
                return hidden(e.table, e.name)
            if self._side_lookup(e.table) is not None:
                if id(e.table._node) not in lookups:
                    lookups[id(e.table._node)] = lookup_on_pairs(e.table)
                return ColumnRef(lookups[id(e.table._node)], e.name)
            return None

        return pairs.select(**{name: transform(wrap(e), via_pairs) for name, e in exprs})

    def groupby(self, *args: Any, instance: Any = None, **kwargs: Any) -> GroupedTable:
        """Groups the joined pairs by the given columns (of either table); ``reduce`` follows.

        >>> import sparkway as pw
        >>> a = pw.debug.table_from_markdown("k | x\\n1 | 10\\n1 | 11")
        >>> b = pw.debug.table_from_markdown("k | y\\n1 | 20")
        >>> pw.debug.compute_and_print(
        ...     a.join(b, a.k == b.k).groupby(b.y).reduce(b.y, total=pw.reducers.sum(a.x)), include_id=False)
        y  | total
        20 | 21
        """
        keys = [(k.name, self._bind_group_key(k)) for k in (*args, *([instance] if instance is not None else []))]
        aliases = {bound.name: name for name, bound in keys}
        shared_keys = {name for name, _ in keys if name in self._shared}

        def bind(e: Expr) -> Expr:  # a key compared in the join is read where the key was
            return self._bind_pair(transform(e, lambda x: self._group_key_side(x) if (
                isinstance(x, ColumnRef) and x.table is this and x.name in shared_keys) else None))

        return GroupedTable(Table(self._node, self._left._label), keys, aliases, bind)

    def _bind_group_key(self, key: Any) -> Expr:
        if isinstance(key, ColumnRef) and key.table is this and key.name in self._shared:
            key = self._group_key_side(key)
        bound = self._bind_pair(key)
        if not isinstance(bound, ColumnRef):
            raise PlanError(f"groupby on a join takes columns of either table, not {key!r}")
        return bound

    def _group_key_side(self, key: ColumnRef) -> Expr:
        """A column both sides have and the join compares: in an inner join, either side's."""
        if self._how != "inner":
            raise PlanError(
                f"pw.this.{key.name} in a {self._how} join may be either side's: group by pw.left.{key.name} "
                f"or pw.right.{key.name}"
            )
        return ColumnRef(self._left, key.name)

    def reduce(self, *args: Any, **kwargs: Any) -> Table:
        """Aggregates of all joined pairs in one row."""
        return self.groupby().reduce(*args, **kwargs)

    def join(self, other: "Table | JoinResult", *on: Expr, id: Any = None, how: Any = None, **kwargs: Any) -> "JoinResult":
        """Joins the pairs with a third table: ``pw.left`` is the pairs (the columns
        ``pw.this`` reads, and their ids), and the tables joined so far stay readable.

        >>> import sparkway as pw
        >>> a = pw.debug.table_from_markdown("k | x\\n1 | 10")
        >>> b = pw.debug.table_from_markdown("k | y\\n1 | 20")
        >>> c = pw.debug.table_from_markdown("y | z\\n20 | 30")
        >>> abc = a.join(b, a.k == b.k).join(c, pw.left.y == pw.right.y)
        >>> pw.debug.compute_and_print(abc.select(a.x, pw.this.y, c.z), include_id=False)
        x  | y  | z
        10 | 20 | 30
        """
        pairs, aliases = self._as_table()
        return _joined(pairs, other, on, how, id, aliases, kwargs)

    def join_inner(self, other: "Table | JoinResult", *on: Expr, **kwargs: Any) -> "JoinResult":
        return self.join(other, *on, how=_fixed_mode(JoinMode.INNER, kwargs), **kwargs)

    def join_left(self, other: "Table | JoinResult", *on: Expr, **kwargs: Any) -> "JoinResult":
        return self.join(other, *on, how=_fixed_mode(JoinMode.LEFT, kwargs), **kwargs)

    def join_right(self, other: "Table | JoinResult", *on: Expr, **kwargs: Any) -> "JoinResult":
        return self.join(other, *on, how=_fixed_mode(JoinMode.RIGHT, kwargs), **kwargs)

    def join_outer(self, other: "Table | JoinResult", *on: Expr, **kwargs: Any) -> "JoinResult":
        return self.join(other, *on, how=_fixed_mode(JoinMode.OUTER, kwargs), **kwargs)

    def _as_table(self) -> tuple[Table, dict[int, tuple[Table, Table, dict[str, str]]]]:
        """The pairs as a table: the columns ``pw.this`` reads and, hidden, every column
        (and id) of every table joined, so that an operation chained after still reads them."""
        joined = [orig for orig, _, _ in self._aliases.values()]
        sides = [t for t in (self._left, self._right) if not any(t is via for _, via, _ in self._aliases.values())]
        hidden: dict[str, Expr] = {}
        names: list[tuple[Table, dict[str, str]]] = []
        for k, table in enumerate([*joined, *sides]):
            columns = {c: f"_pw_chain{k}_{c}" for c in (*table._node.columns, "id")}
            hidden.update({hidden_name: ColumnRef(table, c) for c, hidden_name in columns.items()})
            names.append((table, columns))
        pairs = self.select(*[ColumnRef(this, c) for c in self._this_columns()], **hidden)
        return pairs, {id(table._node): (table, pairs, columns) for table, columns in names}

    def _this_columns(self) -> list[str]:
        """What ``*pw.this`` gives: each side's columns, a column both sides have only when
        the join compares it (then once); hidden columns of a chain left out."""
        ours = [c for c in self._left._node.columns if not c.startswith("_pw_chain")]
        theirs = [c for c in self._right._node.columns if not c.startswith("_pw_chain")]
        names = [c for c in ours if c not in theirs or c in self._shared] + [c for c in theirs if c not in ours]
        return names

    def _unalias(self, expr: Any) -> Any:
        """Columns of tables joined earlier in a chain, as the hidden columns holding them."""
        if not self._aliases or not isinstance(expr, Expr):
            return expr

        def hidden(e: Expr) -> Expr | None:
            if isinstance(e, ColumnRef) and isinstance(e.table, Table) and id(e.table._node) in self._aliases:
                _, via, columns = self._aliases[id(e.table._node)]
                return ColumnRef(via, columns[e.name])
            return None

        return transform(expr, hidden)

    def filter(self, predicate: Expr) -> "JoinResult":
        """The pairs where ``predicate`` holds; ``select`` follows.

        >>> import sparkway as pw
        >>> a = pw.debug.table_from_markdown("k | x\\n1 | 10")
        >>> b = pw.debug.table_from_markdown("k | y\\n1 | 20")
        >>> a.join(b, a.k == b.k).filter(pw.left.x < pw.right.y).select(pw.left.x).column_names()
        ['x']
        """
        bound = self._bind_pair(predicate)
        check_condition(infer(bound, [self._node.columns]), _FILTER_CONDITION, dt.engine_name)
        filtered = copy.copy(self)
        required = _not_none(bound)
        columns = {c: kind.with_optional(False) if c in required else kind for c, kind in self._node.columns.items()}
        filtered._node = n.Filter(columns, self._node, bound)
        filtered._universe = Universe(self._universe)
        return filtered

    def _bind_pair(self, expr: Any) -> Expr:
        """The expression reading the joined pairs' columns (``_l_<name>``, ``_r_<name>``)."""
        sides = _join_sides(self._left, self._right)
        cols = [self._left._node.columns, self._right._node.columns]
        expr = self._unalias(wrap(expr))

        pair = n.InputRef(-1)  # the joined pair itself: pw.this.id is the pair's id

        def either_side(e: Expr) -> Expr | None:
            if isinstance(e, ColumnRef) and e.table is this and e.name == "id":
                return ColumnRef(pair, "id")
            if isinstance(e, ColumnRef) and e.table is this and e.name in self._shared:
                either = Coalesce((ColumnRef(self._left, e.name), ColumnRef(self._right, e.name)))
                # an interval join's pair has one side at least: no None when neither side's
                # column has one (Pathway types it so; a plain outer join keeps Optional)
                never_none = not any(cols[k].get(e.name, dt.ANY.with_optional()).optional for k in (0, 1))
                interval_outer = self._how == "outer" and self._interval_join
                return Unwrap(either) if never_none and interval_outer else either
            return None

        def to_joined(e: Expr) -> Expr | None:
            if isinstance(e, ColumnRef) and e.table is pair:
                return ColumnRef(n.InputRef(0), e.name)
            if isinstance(e, ColumnRef) and isinstance(e.table, n.InputRef) and e.table.index in (0, 1):
                prefix = "_l_" if e.table.index == 0 else "_r_"
                return ColumnRef(n.InputRef(0), prefix + e.name)
            return None

        return transform(bind(transform(wrap(expr), either_side), sides, None, cols), to_joined)


_JOIN_MODES = "JoinMode.INNER, JoinMode.LEFT, JoinMode.RIGHT or JoinMode.OUTER values."


class IntervalJoinResult(JoinResult):
    """The pairs of an interval join (``pw.temporal.IntervalJoinResult``); ``select``
    builds the output.

    >>> import sparkway as pw
    >>> a = pw.debug.table_from_markdown("t\\n3")
    >>> isinstance(a.interval_join(a.copy(), a.t, pw.this.t, pw.temporal.interval(-1, 1)), pw.temporal.IntervalJoinResult)
    True
    """


class WindowJoinResult(JoinResult):
    """The pairs of a window join (``pw.temporal.WindowJoinResult``); ``select`` builds the output.

    >>> import sparkway as pw
    >>> a = pw.debug.table_from_markdown("t\\n3")
    >>> isinstance(a.window_join(a.copy(), a.t, pw.this.t, pw.temporal.tumbling(2)), pw.temporal.WindowJoinResult)
    True
    """


def _fixed_mode(mode: JoinMode, kwargs: dict[str, Any]) -> JoinMode:
    """The mode of ``join_left`` and its siblings, which take no ``how``."""
    if "how" in kwargs:
        raise PlanError(
            "Received `how` argument but was not expecting any.\nConsider using a generic join method "
            "that handles `how` to decide on a type of a join to be used."
        )
    return mode


def _join_mode(how: Any) -> str:
    if how is None:
        return "inner"
    if isinstance(how, str):
        raise PlanError(f"Received `how` argument of join that is a string.\nYou probably want to use one of {_JOIN_MODES}")
    if not isinstance(how, JoinMode):
        raise PlanError(f"How argument of join should be one of {_JOIN_MODES}")
    return how.value


def _joined(
    left: Table, right: "Table | JoinResult", on: tuple, how: Any, id_from: Any,
    aliases: dict[int, tuple[Table, Table, dict[str, str]]], extra: dict[str, Any],
) -> JoinResult:
    extra = dict(extra)
    left_instance, right_instance = extra.pop("left_instance", None), extra.pop("right_instance", None)
    if (left_instance is None) != (right_instance is None):
        raise PlanError("a join takes both left_instance and right_instance, or neither")
    if left_instance is not None:  # rows meet only within one instance
        on = (*on, left_instance == right_instance)
    exactly_once = (bool(extra.pop("left_exactly_once", False)), bool(extra.pop("right_exactly_once", False)))
    if extra:
        raise PlanError(
            "Join received extra kwargs.\nYou probably want to use TableLike.join(...).select(**kwargs) "
            f"to compute output columns. Got: {sorted(extra)}."
        )
    if id_from is not None and not isinstance(id_from, ColumnRef):
        raise PlanError("The id argument of a join has to be a ColumnReference.")
    if id_from is not None and id_from.name != "id":
        raise AssertionError(f"the id of a join's rows is one side's id (left.id or right.id), not {id_from.name!r}")
    mode = _join_mode(how)
    if any(exactly_once) and mode != "inner":
        side = "left_exactly_once" if exactly_once[0] else "right_exactly_once"
        raise PlanError(
            f"{side}=True is supported by sparkway for inner joins only (this join is how={mode!r}): "
            "join with how=pw.JoinMode.INNER, or without it"
        )
    if isinstance(right, JoinResult):  # t1.join(t2.join(t3, ...), ...)
        right, more = right._as_table()
        aliases = {**aliases, **more}
    elif not aliases:
        for cond in on:
            _check_condition(cond, left, right)
    return JoinResult(left, right, on, mode, id_from, aliases=aliases, exactly_once=exactly_once)


def _check_condition(cond: Any, left_table: Table, right_table: Table) -> None:
    """Pathway's form of a join condition: ``<left>.<column> == <right>.<column>``, in that order."""
    shape = "join condition should be of form <left_table>.<column> == <right_table>.<column>"
    if not isinstance(cond, BinOp) or cond.op != "==":
        raise PlanError(shape)
    if not (isinstance(cond.left, ColumnRef) and isinstance(cond.right, ColumnRef)):
        raise PlanError(shape)
    if left_table is right_table:  # a table joined with itself: its columns are on both sides
        return

    def side(ref: ColumnRef) -> int | None:
        if ref.table is left or ref.table is left_table:
            return 0
        if ref.table is right or ref.table is right_table:
            return 1
        return None  # another table with the same ids, read through it

    sides = (side(cond.left), side(cond.right))
    if sides == (1, 0):
        raise PlanError(
            "The boolean condition is not properly ordered.\nThe left part should refer to left joinable "
            "and the right one should refer to the right joinable, e.g. t1.join(t2, t1.bar==t2.foo)."
        )
    if sides[1] == 0:
        raise PlanError("Right part of a join condition has to be a reference to a table on the right side of a join")
    if sides[0] == 1:
        raise PlanError("Left part of a join condition has to be a reference to a table on the left side of a join")


def _join_universe(left: Table, right: Table, how: str, id_side: str | None) -> Universe:
    """The ids of a join's rows: with ``id=`` one side's, all of them when that side's
    rows are all kept (a left join with the left ids), else some of them."""
    if id_side is None:
        return Universe()
    if how not in ("inner", id_side):  # an outer join, or the other side's outer rows would lack ids
        raise KeyError("Cannot assign id's for this join type.")
    kept, keeps_all = (left, how == "left") if id_side == "left" else (right, how == "right")
    return kept._universe if keeps_all else Universe(kept._universe)


def _join_sides(left: Table, right: Table) -> dict[int, int]:
    """Plan nodes (by identity) whose columns are read from the left (0) or right (1) side."""
    return {
        **{node: 0 for node in (id(left._node), *left._equivalents)},
        **{node: 1 for node in (id(right._node), *right._equivalents)},
    }


def _condition_sides(cond: Any, sides: dict[int, int], cols: list[dict]) -> tuple[Expr, Expr]:
    """A join condition's two sides, bound to the inputs: (left's, right's)."""
    if getattr(cond, "op", None) != "==":
        raise PlanError("join conditions must be equalities: left.col == right.col")
    a, b = bind(cond.left, sides, None, cols), bind(cond.right, sides, None, cols)
    a, b = (b, a) if _input_of(a) == 1 else (a, b)
    kinds = infer(_to_side(a, 0), [cols[0]]), infer(_to_side(b, 1), [cols[1]])
    if not dt.related(*kinds):  # Pathway's words
        raise PlanTypeError(
            f"Incompatible types in a join condition.\nThe types are: {dt.engine_name(kinds[0])} and "
            f"{dt.engine_name(kinds[1])}. You might try casting the respective columns to Any type to circumvent "
            "this, but this is most probably an error."
        )
    return a, b


def join_keys(left: Table, right: Table, on: tuple) -> tuple[list[Expr], list[Expr]]:
    """The keys the ``on`` conditions compare, as expressions over each table alone."""
    sides = _join_sides(left, right)
    cols = [left._node.columns, right._node.columns]
    pairs = [_condition_sides(cond, sides, cols) for cond in on]
    return [_as_this(a) for a, _ in pairs], [_as_this(b) for _, b in pairs]


def _placeholders_as_this(e: Any) -> Expr:
    """``pw.left.t`` or ``pw.right.t``, said of one table, as ``pw.this.t``."""
    return transform(
        wrap(e), lambda x: ColumnRef(this, x.name) if isinstance(x, ColumnRef) and (x.table is left or x.table is right) else None
    )


def _as_this(e: Expr) -> Expr:
    """An expression bound to a join's input, as one over ``pw.this`` of that input."""
    return transform(e, lambda x: ColumnRef(this, x.name) if isinstance(x, ColumnRef) else None)


def _input_of(e: Expr) -> int:
    for x in walk(e):
        if isinstance(x, ColumnRef) and isinstance(x.table, n.InputRef):
            return x.table.index
    return 0


def _to_side(e: Expr, side: int) -> Expr:
    """Join keys are evaluated on one side's rows alone: point them at input 0."""
    if _input_of(e) != side:
        raise PlanError("each side of a join condition must use one table's columns")
    return transform(e, lambda x: ColumnRef(n.InputRef(0), x.name) if isinstance(x, ColumnRef) else None)


def join(left: Table, right: Table, *on: Expr, **kwargs: Any) -> JoinResult:
    """``left.join(right, *on, ...)``, as a function (Pathway's ``pw.join``).

    >>> import sparkway as pw
    >>> left = pw.debug.table_from_markdown("k | a\\n1 | x\\n2 | y")
    >>> right = pw.debug.table_from_markdown("k | b\\n1 | u\\n3 | v")
    >>> pairs = pw.join(left, right, left.k == right.k).select(left.a, right.b)
    >>> pw.debug.compute_and_print(pairs, include_id=False)
    a | b
    x | u
    """
    return left.join(right, *on, **kwargs)


def join_inner(left: Table, right: Table, *on: Expr, **kwargs: Any) -> JoinResult:
    """``left.join_inner(right, *on, ...)``.

    >>> import sparkway as pw
    >>> left = pw.debug.table_from_markdown("k | a\\n1 | x\\n2 | y")
    >>> right = pw.debug.table_from_markdown("k | b\\n1 | u\\n3 | v")
    >>> pairs = pw.join_inner(left, right, left.k == right.k).select(left.a, right.b)
    >>> pw.debug.compute_and_print(pairs, include_id=False)
    a | b
    x | u
    """
    return left.join_inner(right, *on, **kwargs)


def join_left(left: Table, right: Table, *on: Expr, **kwargs: Any) -> JoinResult:
    """``left.join_left(right, *on, ...)``.

    >>> import sparkway as pw
    >>> left = pw.debug.table_from_markdown("k | a\\n1 | x\\n2 | y")
    >>> right = pw.debug.table_from_markdown("k | b\\n1 | u\\n3 | v")
    >>> pairs = pw.join_left(left, right, left.k == right.k).select(left.a, right.b)
    >>> pw.debug.compute_and_print(pairs, include_id=False)
    a | b
    x | u
    y |
    """
    return left.join_left(right, *on, **kwargs)


def join_right(left: Table, right: Table, *on: Expr, **kwargs: Any) -> JoinResult:
    """``left.join_right(right, *on, ...)``.

    >>> import sparkway as pw
    >>> left = pw.debug.table_from_markdown("k | a\\n1 | x\\n2 | y")
    >>> right = pw.debug.table_from_markdown("k | b\\n1 | u\\n3 | v")
    >>> pairs = pw.join_right(left, right, left.k == right.k).select(left.a, right.b)
    >>> pw.debug.compute_and_print(pairs, include_id=False)
    a | b
      | v
    x | u
    """
    return left.join_right(right, *on, **kwargs)


def join_outer(left: Table, right: Table, *on: Expr, **kwargs: Any) -> JoinResult:
    """``left.join_outer(right, *on, ...)``.

    >>> import sparkway as pw
    >>> left = pw.debug.table_from_markdown("k | a\\n1 | x\\n2 | y")
    >>> right = pw.debug.table_from_markdown("k | b\\n1 | u\\n3 | v")
    >>> pairs = pw.join_outer(left, right, left.k == right.k).select(left.a, right.b)
    >>> pw.debug.compute_and_print(pairs, include_id=False)
    a | b
      | v
    x | u
    y |
    """
    return left.join_outer(right, *on, **kwargs)


def groupby(table: Table, *args: Any, **kwargs: Any) -> GroupedTable:
    """``table.groupby(*args, ...)``, as a function (Pathway's ``pw.groupby``).

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("w\\na\\nb\\na")
    >>> pw.debug.compute_and_print(pw.groupby(t, t.w).reduce(t.w, n=pw.reducers.count()), include_id=False)
    w | n
    a | 2
    b | 1
    """
    return table.groupby(*args, **kwargs)
