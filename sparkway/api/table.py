"""``pw.Table``: the user-facing table.  Each method builds one or a few plan nodes."""

from __future__ import annotations

import copy
import enum
from typing import Any, Callable, Iterable

from sparkway.api.schema import Schema, schema_from_columns
from sparkway.api.temporal import check_window_types
from sparkway.api.thisclass import AllColumns, Placeholder, left, right, this
from sparkway.core import dtypes as dt
from sparkway.core.columns import Column
from sparkway.core.dtypes import DType
from sparkway.core.expression import Apply, Cast, Coalesce, ColumnRef, Expr, PointerFrom, ReducerExpr, transform, walk, wrap
from sparkway.core.type_rules import infer, reducer_type
from sparkway.errors import PlanError, PlanTypeError, traced
from sparkway.plan import nodes as n


class JoinMode(enum.Enum):
    """The kind of a join: ``t.join(other, ..., how=pw.JoinMode.LEFT)``."""

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

    __slots__ = ("supersets",)

    def __init__(self, parent: "Universe | None" = None) -> None:
        self.supersets: list[Universe] = [parent] if parent is not None else []

    def is_subset_of(self, other: "Universe") -> bool:
        todo, seen = [self], set()
        while todo:
            universe = todo.pop()
            if universe is other:
                return True
            if id(universe) not in seen:
                seen.add(id(universe))
                todo.extend(universe.supersets)
        return False


# every table the program built, used or not: ``pw.run_all`` computes them all
_built: dict[int, n.Node] = {}


def built_nodes() -> list[n.Node]:
    """The plan nodes of every table built since the last ``graph.clear()``."""
    return list(_built.values())


def forget_built() -> None:
    _built.clear()


@traced
class Table:
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
        self, node: n.Node, label: str = "table", equivalents: tuple[int, ...] = (), universe: Universe | None = None
    ) -> None:
        self._node = node
        self._label = label
        _built[id(node)] = node
        # plan nodes whose columns this table also answers for (a window's source table)
        self._equivalents = equivalents
        self._universe = universe or Universe()

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

    def __getitem__(self, name: str | list[str]) -> Any:
        if isinstance(name, list):
            return self.select(*(self[c] for c in name))
        if name != "id" and name not in self._node.columns:
            raise KeyError(f"table has no column {name!r}; its columns are: {', '.join(self._node.columns)}")
        return ColumnRef(self, name)

    def __iter__(self):
        yield AllColumns(self)

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

    @property
    def schema(self) -> type[Schema]:
        return schema_from_columns({k: Column(k, v) for k, v in self._node.columns.items()})

    def column_names(self) -> list[str]:
        return list(self._node.columns)

    def typehints(self) -> dict[str, DType]:
        return dict(self._node.columns)

    def __repr__(self) -> str:
        cols = ", ".join(f"{k}: {v}" for k, v in self._node.columns.items())
        return f"<pw.Table {self._label}({cols})>"

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
        kind = infer(bound, [base._node.columns]).with_optional(False)
        if kind not in (dt.BOOL, dt.ANY):
            raise PlanTypeError(f"filter needs a boolean expression, got one of type {kind}")
        filtered = self._derive(n.Filter(dict(base._node.columns), base._node, bound), universe=Universe(self._universe))
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
        """Columns renamed: ``rename(new=pw.this.old)`` or ``rename({"old": "new"})``."""
        mapping = {(k.name if isinstance(k, ColumnRef) else k): v for k, v in (names or {}).items()}
        mapping.update({(v.name if isinstance(v, ColumnRef) else v): k for k, v in kwargs.items()})
        return self.select(**{mapping.get(c, c): self[c] for c in self._node.columns})

    rename_columns = rename

    def cast_to_types(self, **types: Any) -> "Table":
        """Columns converted to other types: ``cast_to_types(x=float)``."""
        return self.with_columns(**{k: Cast(dt.dtype_of(v), self[k]) for k, v in types.items()})

    def update_types(self, **types: Any) -> "Table":
        """The same values under narrower or wider types, e.g. ``Optional[int]`` -> ``int``,
        or ``Any`` -> ``str`` for values that are known to be strings.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("a\\n1").select(a=pw.apply(lambda x: x, pw.this.a))
        >>> str(t.update_types(a=int).typehints()["a"])
        'int'
        """
        columns = dict(self._node.columns)
        exprs = []
        for name in columns:
            ref: Expr = ColumnRef(n.InputRef(0), name)
            if name in types:
                old, new = columns[name], dt.dtype_of(types[name])
                if not dt.related(old, new):
                    raise PlanTypeError(
                        f"update_types cannot change column {name!r} from {old} to {new}: it narrows or "
                        "widens a type; use cast_to_types to convert values"
                    )
                if old.with_optional(False) != new.with_optional(False):
                    ref = Apply(_same_value, (ref,), new)  # stored differently (e.g. Any is pickled)
                columns[name] = new
            exprs.append((name, ref))
        unknown = sorted(set(types) - set(columns))
        if unknown:
            raise PlanError(f"update_types: no column {unknown} in the table; its columns are {list(columns)}")
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

        return table_from_rows(schema_from_types(**types), [])

    def flatten(self, column: Any, *, origin_id: str | None = None) -> "Table":
        """One row per element of a list (or JSON array) column; ``origin_id`` names a
        column to add with the id of the row each element comes from.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("n\\n2")
        >>> t.select(xs=pw.apply_with_type(lambda n: list(range(n)), list[int], pw.this.n)).flatten(
        ...     pw.this.xs, origin_id="origin").column_names()
        ['xs', 'origin']
        """
        name = column.name if isinstance(column, ColumnRef) else column
        kind = self._node.columns[name].with_optional(False)
        item = kind.items[0] if kind.name == "list" else dt.JSON if kind == dt.JSON else dt.ANY
        columns = {**self._node.columns, name: item}
        if origin_id is not None:
            columns[origin_id] = dt.POINTER
        return self._derive(n.Flatten(columns, self._node, name, origin_id))

    def with_id_from(self, *args: Any) -> "Table":
        """Same rows, with ids computed from the given values."""
        keys = tuple(self._bind(wrap(a)) for a in args)
        return self._derive(n.Reindex(dict(self._node.columns), self._node, keys))

    def with_id(self, new_id: Expr) -> "Table":
        """Same rows, with ids taken from a pointer column."""
        return self.with_id_from(new_id)

    def pointer_from(self, *args: Any, optional: bool = False) -> PointerFrom:
        """The id that ``groupby(...).reduce`` or ``with_id_from`` give to these values."""
        return PointerFrom(tuple(wrap(a) for a in args))

    def concat(self, *others: "Table") -> "Table":
        """Rows of all tables; their ids must be disjoint."""
        return self._concat(others, reindex=False)

    def concat_reindex(self, *others: "Table") -> "Table":
        """Rows of all tables, with new ids."""
        return self._concat(others, reindex=True)

    def _concat(self, others: Iterable["Table"], reindex: bool) -> "Table":
        tables = (self, *others)
        columns = dict(self._node.columns)
        for t in tables[1:]:
            if list(t._node.columns) != list(columns):
                raise PlanError(
                    f"concat needs tables with the same columns: {list(columns)} != {list(t._node.columns)}"
                )
            columns = {k: dt.unify(v, t._node.columns[k]) for k, v in columns.items()}
        return self._derive(n.Concat(columns, tuple(t._node for t in tables), reindex))

    # -- stateful operators ----------------------------------------------------------------
    def groupby(self, *args: Any, id: Any = None, instance: Any = None, **kwargs: Any) -> "GroupedTable":
        """Groups rows by the values of the given columns; follow with ``.reduce(...)``.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("w\\na\\nb\\na")
        >>> t.groupby(t.w).reduce(t.w, count=pw.reducers.count()).column_names()
        ['w', 'count']
        """
        keys = [a for a in args] + ([instance] if instance is not None else [])
        for k in keys:
            if not isinstance(k, ColumnRef):
                raise PlanError(
                    f"groupby takes columns, not {k!r}: compute the value with with_columns() first"
                )
        # _skip_errors=False: a reducer over an Error value gives an Error (Pathway's option)
        return GroupedTable(self, [(k.name, self._bind(k)) for k in keys], skip_errors=kwargs.get("_skip_errors", True))

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
        """Per instance, the last row whose value ``acceptor(new, old)`` accepted."""
        node = n.Deduplicate(
            dict(self._node.columns),
            self._node,
            self._bind(wrap(value)),
            self._bind(instance) if instance is not None else None,
            acceptor,
        )
        return self._derive(node)

    def sort(self, key: Any, instance: Any = None) -> "Table":
        """Columns ``prev`` and ``next``: ids of the neighbouring rows in key order."""
        columns = {"prev": dt.POINTER.with_optional(), "next": dt.POINTER.with_optional()}
        node = n.Sort(columns, self._node, self._bind(key), self._bind(instance) if instance is not None else None)
        return self._derive(node, universe=self._universe)  # one row per row, same ids

    def update_rows(self, other: "Table") -> "Table":
        """Rows of ``other`` replace the rows of this table with the same ids."""
        return self._merge("update_rows", (self, other), dict(self._node.columns))

    def update_cells(self, other: "Table") -> "Table":
        """For ids in ``other``, its columns replace this table's values."""
        missing = set(other._node.columns) - set(self._node.columns)
        if missing:
            raise PlanError(f"update_cells: columns {sorted(missing)} are not in the updated table")
        return self._merge("update_cells", (self, other), dict(self._node.columns), self._universe)

    def __lshift__(self, other: "Table") -> "Table":
        """``t << other`` is ``t.update_cells(other)``, as in Pathway."""
        return self.update_cells(other)

    def difference(self, other: "Table") -> "Table":
        """The rows whose ids are not in ``other``."""
        return self._merge("difference", (self, other), dict(self._node.columns), Universe(self._universe))

    def intersect(self, *others: "Table") -> "Table":
        """The rows whose ids are in every one of ``others``."""
        return self._merge("intersect", (self, *others), dict(self._node.columns), Universe(self._universe))

    def restrict(self, other: "Table") -> "Table":
        """The rows whose ids are in ``other`` (``other``'s ids must be a subset)."""
        return self._merge("intersect", (self, other), dict(self._node.columns), other._universe)

    def having(self, *indexers: Expr) -> "Table":
        """The rows whose ids the given pointer columns of another table name."""
        return self.ix(indexers[0], optional=True).filter(this.id.is_not_none())

    def ix(self, expression: Expr, *, optional: bool = False, context: Any = None) -> "Table":
        """Rows of this table looked up by a pointer column of another table.

        The result has the rows (and ids) of the table that ``expression`` reads.
        """
        holder = _table_of(expression)
        pointer = holder._bind(expression)
        columns = {k: v.with_optional(v.optional or optional) for k, v in self._node.columns.items()}
        node = n.KeyedMerge(columns, (holder._node, self._node), "ix", (pointer, None), optional)
        return self._derive(node, universe=holder._universe)  # a row per row of the holder

    def ix_ref(self, *args: Any, optional: bool = False, context: Any = None) -> "Table":
        """Rows of this table looked up by the values its ids were made from."""
        return self.ix(PointerFrom(tuple(wrap(a) for a in args)), optional=optional)

    def _with_lookups(self, exprs: list[tuple[str, Expr]]) -> tuple["Table", list[tuple[str, Expr]]]:
        """Columns of other tables with one row per row of this table, used in this
        table's own operation: ``other.ix(self.p)``, and tables of the same universe
        (``t2 = t.select(...)``, then ``t.select(t.a, t2.b)``: row by row, by id).

        Pathway lets such columns be read like ``t``'s own.  The result is a table holding
        this table's columns plus the looked-up ones (under a prefix), and the expressions
        rewritten to read it.  Columns of tables whose universe may lack some of this
        table's rows are left alone: ``bind`` refuses them.
        """
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
        for j, (key, (keys, target, optional)) in enumerate(lookups.items()):
            prefix = prefixes[key] = f"_pw_ix{j}_"
            columns = {**base._node.columns, **{prefix + c: t for c, t in target.columns.items()}}
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
        mode = getattr(how, "value", how) or "inner"
        return JoinResult(self, other, on, mode, id)

    def join_inner(self, other: "Table", *on: Expr, **kwargs: Any) -> "JoinResult":
        return self.join(other, *on, how="inner", **kwargs)

    def join_left(self, other: "Table", *on: Expr, **kwargs: Any) -> "JoinResult":
        return self.join(other, *on, how="left", **kwargs)

    def join_right(self, other: "Table", *on: Expr, **kwargs: Any) -> "JoinResult":
        return self.join(other, *on, how="right", **kwargs)

    def join_outer(self, other: "Table", *on: Expr, **kwargs: Any) -> "JoinResult":
        return self.join(other, *on, how="outer", **kwargs)

    def interval_join(
        self, other: "Table", self_time: Expr, other_time: Expr, interval: Any, *on: Expr,
        behavior: Any = None, how: Any = JoinMode.INNER, **kwargs: Any,
    ) -> "JoinResult":
        """Pairs of rows whose ``on`` conditions hold and whose times are close:
        ``interval.lower_bound <= other_time - self_time <= interval.upper_bound``.

        ``behavior`` (when late rows may be forgotten) is accepted and not applied:
        every row is kept, which gives the results of a run without late data.

        >>> import sparkway as pw
        >>> a = pw.debug.table_from_markdown("t\\n1\\n5")
        >>> b = pw.debug.table_from_markdown("t\\n2")
        >>> a.interval_join(b, a.t, b.t, pw.temporal.interval(0, 1)).select(lt=a.t, rt=b.t).column_names()
        ['lt', 'rt']
        """
        lower, upper = interval.lower_bound, interval.upper_bound
        _check_interval_types(self, other, self_time, other_time, lower, upper)
        if lower > upper:
            raise PlanError(f"an interval's lower bound ({lower}) must not exceed its upper bound ({upper})")
        mode = getattr(how, "value", how) or "inner"
        return JoinResult(self, other, on, mode, None, (self_time, other_time, lower, upper))

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
        return JoinResult(left, right, (*on, *same_window), mode, None, shared=("_pw_window",))

    def window_join_inner(self, other: "Table", *args: Any, **kwargs: Any) -> "JoinResult":
        return self.window_join(other, *args, how="inner", **kwargs)

    def window_join_left(self, other: "Table", *args: Any, **kwargs: Any) -> "JoinResult":
        return self.window_join(other, *args, how="left", **kwargs)

    def window_join_right(self, other: "Table", *args: Any, **kwargs: Any) -> "JoinResult":
        return self.window_join(other, *args, how="right", **kwargs)

    def window_join_outer(self, other: "Table", *args: Any, **kwargs: Any) -> "JoinResult":
        return self.window_join(other, *args, how="outer", **kwargs)

    def windowby(
        self,
        time_expr: Expr,
        *,
        window: Any,
        instance: Any = None,
        shard: Any = None,
        behavior: Any = None,
    ) -> "GroupedTable":
        """Groups rows into time windows (``pw.temporal.session/tumbling/sliding``),
        per ``instance`` (``shard`` is its older name); follow with ``.reduce(...)``."""
        if shard is not None:
            if instance is not None:
                raise PlanError("give instance= or its older name shard=, not both")
            instance = shard
        check_window_types(window, {"time_expr": (self, time_expr)})
        return window.assign(self, time_expr, instance)

    # -- plumbing ------------------------------------------------------------------------------
    def _derive(self, node: n.Node, equivalent: "Table | None" = None, universe: Universe | None = None) -> "Table":
        """A table of ``node``; a new universe unless ``universe`` says which it shares."""
        same = (id(equivalent._node), *equivalent._equivalents) if equivalent is not None else ()
        return Table(node, self._label, same, universe)

    def _bind(self, expr: Any) -> Expr:
        """The expression with its column references pointing at input 0."""
        sides = {id(self._node): 0, **{e: 0 for e in self._equivalents}}
        return bind(wrap(expr), sides, this_index=0)

    def debug(self, name: str) -> "Table":
        return self

    def await_futures(self) -> "Table":
        """The table itself: sparkway computes a UDF's results within the step, so none
        is pending (``pw.udfs.fully_async_executor``)."""
        return self

    def promise_universe_is_subset_of(self, other: "Table") -> "Table":
        """Promises that this table's ids are all among ``other``'s; returns the table."""
        self._universe.supersets.append(other._universe)
        return self

    def promise_universes_are_disjoint(self, other: "Table") -> "Table":
        return self

    def promise_universe_is_equal_to(self, other: "Table") -> "Table":
        """Promises that this table's ids are exactly ``other``'s; returns the table."""
        self._universe.supersets.append(other._universe)
        other._universe.supersets.append(self._universe)
        return self


def _check_interval_types(left: Table, right: Table, left_time: Any, right_time: Any, lower: Any, upper: Any) -> None:
    """Times must be numbers with number bounds, or date-times of one kind with durations."""
    kinds = [
        infer(left._bind(left_time), [left._node.columns]).with_optional(False),
        infer(right._bind(right_time), [right._node.columns]).with_optional(False),
        dt.dtype_of_value(lower), dt.dtype_of_value(upper),
    ]
    numbers = all(k in (dt.INT, dt.FLOAT) for k in kinds)
    dates = kinds[0] == kinds[1] and kinds[0] in (dt.DATE_TIME_NAIVE, dt.DATE_TIME_UTC) and kinds[2:] == [dt.DURATION] * 2
    if not (numbers or dates):
        raise PlanTypeError(
            "Arguments (self_time_expression, other_time_expression, lower_bound, upper_bound) have to be of "
            "types (int or float, int or float, int or float, int or float) or (DateTimeNaive, DateTimeNaive, "
            "Duration, Duration) or (DateTimeUtc, DateTimeUtc, Duration, Duration) but are of types "
            f"({', '.join(map(str, kinds))})"
        )


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
            f"column {e.name!r} belongs to another table than the one this operation works on; "
            "join the tables first, or use pw.this"
        )

    return transform(expr, rebind)


def _side_having(name: str, columns: list[dict]) -> int:
    sides = [i for i, cols in enumerate(columns) if name in cols or name == "id"]
    if len(sides) != 1:
        where = "both tables" if sides else "neither table"
        raise PlanError(f"pw.this.{name} is ambiguous in a join: {where} have it; use pw.left or pw.right")
    return sides[0]


def _table_of(expr: Expr) -> Table:
    for e in walk(expr):
        if isinstance(e, ColumnRef) and isinstance(e.table, Table):
            return e.table
    raise PlanError("ix needs an expression over a table's columns, e.g. other.pointer_column")


def _named_exprs(args: tuple, kwargs: dict, tables: list[Any]) -> list[tuple[str, Expr]]:
    """``select``'s arguments as (name, expression) pairs; ``*pw.this`` expands."""
    out: dict[str, Expr] = {}
    for a in args:
        if isinstance(a, AllColumns):
            source = a.table
            if isinstance(source, Placeholder):
                source = tables[0] if source is this else tables[0 if source is left else 1]
            for c in source._node.columns:
                if c not in a.exclude:
                    out[c] = ColumnRef(source, c) if isinstance(source, Table) else ColumnRef(a.table, c)
        elif isinstance(a, ColumnRef):
            out[a.name] = a
        else:
            raise PlanTypeError(f"select takes columns positionally and expressions by name; got {a!r}")
    for k, v in kwargs.items():
        out[k] = wrap(v)
    return list(out.items())


def _types(exprs: Iterable[tuple[str, Expr]], inputs: list[dict]) -> dict[str, DType]:
    return {name: infer(e, inputs) for name, e in exprs}


@traced
class GroupedTable:
    """A table grouped by key columns; ``reduce`` gives one row per group."""

    def __init__(
        self, table: Table, keys: list[tuple[str, Expr]], aliases: dict[str, str] | None = None,
        bind: Callable[[Expr], Expr] | None = None, skip_errors: bool = True,
    ) -> None:
        self._table = table
        self._skip_errors = skip_errors  # reducers leave out Error values (else give an Error)
        self._keys = keys
        self._aliases = aliases or {}  # source column name -> key column name (windows, joins)
        # how the expressions of reduce() are read (a join's: from the joined pairs)
        self._bind = bind or (lambda e: e)

    def reduce(self, *args: Any, **kwargs: Any) -> Table:
        """One row per group: group columns and reducers such as ``pw.reducers.count()``.

        >>> import sparkway as pw
        >>> t = pw.debug.table_from_markdown("w | n\\na | 1\\na | 2")
        >>> t.groupby(pw.this.w).reduce(pw.this.w, total=pw.reducers.sum(pw.this.n)).column_names()
        ['w', 'total']
        """
        table = self._table
        exprs = [(name, self._bind(e)) for name, e in _named_exprs(args, kwargs, [table])]
        key_names = [k for k, _ in self._keys]
        aggregates: list[tuple[str, n.Aggregate]] = []

        def lift(e: Expr) -> Expr | None:
            if isinstance(e, ReducerExpr):
                args_bound = tuple(table._bind(a) for a in e.args)
                name = f"_pw_agg_{len(aggregates)}"
                aggregates.append((name, n.Aggregate(e.kind, args_bound, e.params)))
                return ColumnRef(n.InputRef(0), name)
            if isinstance(e, ColumnRef):
                name = self._aliases.get(e.name, e.name)
                if name not in key_names and e.name != "id":
                    raise PlanError(
                        f"column {e.name!r} is neither a groupby key nor inside a reducer; "
                        f"group by it or aggregate it (e.g. pw.reducers.any(...))"
                    )
                return ColumnRef(n.InputRef(0), "id" if e.name == "id" else name)
            return None

        lifted = [(name, transform(e, lift)) for name, e in exprs]
        agg_types = {
            name: _aggregate_type(a, [table._node.columns]) for name, a in aggregates
        }
        key_types = {k: infer(e, [table._node.columns]) for k, e in self._keys}
        reduce_node = n.Reduce(
            {**key_types, **agg_types}, table._node, tuple(self._keys), tuple(aggregates), self._skip_errors
        )
        select = n.Select(_types(lifted, [reduce_node.columns]), reduce_node, tuple(lifted))
        return Table(select, table._label)


def _aggregate_type(agg: n.Aggregate, inputs: list[dict]) -> DType:
    return reducer_type(agg.kind, [infer(a, inputs) for a in agg.args], agg.params)


@traced
class JoinResult:
    """Matched pairs of two tables' rows; ``select`` builds the output table."""

    def __init__(
        self, left_table: Table, right_table: Table, on: tuple, how: str, id_from: Any,
        interval: tuple[Any, Any, Any, Any] | None = None, shared: tuple[str, ...] = (),
    ) -> None:
        self._left, self._right = left_table, right_table
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
        columns = {
            **{f"_l_{k}": v.with_optional(v.optional or how in ("right", "outer")) for k, v in cols[0].items()},
            **{f"_r_{k}": v.with_optional(v.optional or how in ("left", "outer")) for k, v in cols[1].items()},
            "_l_id": dt.POINTER.with_optional(how in ("right", "outer")),
            "_r_id": dt.POINTER.with_optional(how in ("left", "outer")),
        }
        if interval is not None:
            left_time, right_time, lower, upper = interval
            interval = (
                _to_side(bind(wrap(left_time), sides, 0, cols), 0),
                _to_side(bind(wrap(right_time), sides, 1, cols), 1),
                lower,
                upper,
            )
        self._node = n.Join(
            columns, left_table._node, right_table._node, tuple(left_keys), tuple(right_keys), how, id_side, interval
        )

    def select(self, *args: Any, **kwargs: Any) -> Table:
        """The output columns, from ``pw.left``, ``pw.right``, ``pw.this`` or the tables."""
        exprs = _named_exprs(args, kwargs, [self._left, self._right])
        bound = [(name, self._bind_pair(e)) for name, e in exprs]
        node = n.Select(_types(bound, [self._node.columns]), self._node, tuple(bound))
        return Table(node, self._left._label)

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

    def filter(self, predicate: Expr) -> "JoinResult":
        """The pairs where ``predicate`` holds; ``select`` follows.

        >>> import sparkway as pw
        >>> a = pw.debug.table_from_markdown("k | x\\n1 | 10")
        >>> b = pw.debug.table_from_markdown("k | y\\n1 | 20")
        >>> a.join(b, a.k == b.k).filter(pw.left.x < pw.right.y).select(pw.left.x).column_names()
        ['x']
        """
        bound = self._bind_pair(predicate)
        kind = infer(bound, [self._node.columns]).with_optional(False)
        if kind not in (dt.BOOL, dt.ANY):
            raise PlanTypeError(f"filter needs a boolean expression, got one of type {kind}")
        filtered = copy.copy(self)
        filtered._node = n.Filter(dict(self._node.columns), self._node, bound)
        return filtered

    def _bind_pair(self, expr: Any) -> Expr:
        """The expression reading the joined pairs' columns (``_l_<name>``, ``_r_<name>``)."""
        sides = _join_sides(self._left, self._right)
        cols = [self._left._node.columns, self._right._node.columns]

        def either_side(e: Expr) -> Expr | None:
            if isinstance(e, ColumnRef) and e.table is this and e.name in self._shared:
                return Coalesce((ColumnRef(self._left, e.name), ColumnRef(self._right, e.name)))
            return None

        def to_joined(e: Expr) -> Expr | None:
            if isinstance(e, ColumnRef) and isinstance(e.table, n.InputRef):
                prefix = "_l_" if e.table.index == 0 else "_r_"
                return ColumnRef(n.InputRef(0), prefix + e.name)
            return None

        return transform(bind(transform(wrap(expr), either_side), sides, None, cols), to_joined)


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
    if not dt.related(*kinds):
        raise PlanTypeError(
            f"a join condition compares values of types {kinds[0]} and {kinds[1]}: "
            "convert one side (pw.cast, .to_string()) so that both sides have one type"
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
