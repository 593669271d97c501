"""Translation of a sqlglot syntax tree into table operations, for ``pw.sql``.

Imported only when ``pw.sql`` runs (it imports sqlglot). A SELECT becomes:

* its FROM clause, one table: each table named in it is a copy of the given table (the
  same ids), joins are ``Table.join`` followed by a select of all columns under unique
  names, and a ``_Source`` remembers which SQL name (``qualifier.column``) is which column;
* WHERE: a ``filter``;
* the output: a ``select`` (the ids stay), or, with GROUP BY or aggregates, a
  ``groupby(...).reduce(...)`` then a ``filter`` for HAVING;
* a scalar subquery ``(SELECT AVG(x) FROM t)``: its value (one row) joined to the rows
  that use it, as one more column (the rows keep their ids).

Expressions read the current table through ``pw.this`` (``pw.left``/``pw.right`` in join
conditions); a translation function ``leaf`` decides, per context, what a column, an
aggregate or a subquery means there.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from sqlglot import expressions as exp

from sparkway.api import reducers
from sparkway.api.functions import coalesce, if_else
from sparkway.api.table import JoinMode, Table
from sparkway.api.thisclass import left, right, this
from sparkway.core.expression import Expr, wrap

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    exp.Add: operator.add, exp.Sub: operator.sub, exp.Mul: operator.mul, exp.Div: operator.truediv,
    exp.IntDiv: operator.floordiv, exp.Mod: operator.mod,
    exp.EQ: operator.eq, exp.NEQ: operator.ne, exp.GT: operator.gt, exp.GTE: operator.ge,
    exp.LT: operator.lt, exp.LTE: operator.le, exp.And: operator.and_, exp.Or: operator.or_,
}
_REDUCERS: dict[type, Callable[[Any], Any]] = {
    exp.Sum: reducers.sum, exp.Avg: reducers.avg, exp.Min: reducers.min, exp.Max: reducers.max,
}
# the parts of a SELECT (sqlglot's argument names) that pw.sql translates; any other one
# present (ORDER BY, LIMIT, window definitions...) is not supported
_SELECT_PARTS = {"expressions", "from_", "joins", "where", "group", "having", "with_", "distinct"}
_SET_OPERATION_PARTS = {"this", "expression", "distinct", "with_"}
_JOIN_PARTS = {"this", "side", "kind", "on", "using"}
_JOIN_MODES = {"": "inner", "LEFT": "left", "RIGHT": "right", "FULL": "outer"}
_ORDER_HINT = "a table has no order: sort with Table.sort, or keep the top rows with a reducer"
_HINTS = {"order": _ORDER_HINT, "limit": _ORDER_HINT, "offset": _ORDER_HINT}

Leaf = Callable[[Any], "Expr | None"]


def translate(root: exp.Expression, tables: dict[str, Table]) -> Table:
    """The table computed by the query ``root`` over ``tables`` (its names in the query)."""
    return _Translator(dict(tables)).query(root)


@dataclass(frozen=True)
class _Resolved:
    """A column of the current table already found (what ``*`` expands to)."""

    column: str


@dataclass
class _Source:
    """The rows of a FROM clause: ``table``, and the SQL names of its columns.

    ``names``: qualifier (a table's name or alias, "" for an unnamed subquery) -> SQL
    column name -> column of ``table``. ``equal``: a column -> the first of the columns a
    join found equal to it, so that a name both tables have may be read from either.
    ``read``: the given tables the rows come from, also through subqueries.
    """

    table: Table
    names: dict[str, dict[str, str]]
    read: frozenset[str]
    equal: dict[str, str] = field(default_factory=dict)

    def find(self, qualifier: str, name: str) -> str | None:
        """The column named ``qualifier.name`` (or just ``name``), None if there is none."""
        try:
            return self.column(qualifier, name)
        except KeyError:
            return None

    def column(self, qualifier: str, name: str) -> str:
        if qualifier:
            if qualifier not in self.names:
                raise KeyError(
                    f"no table {qualifier!r} in this query's FROM (a subquery cannot read the outer query's "
                    f"tables); {self._listing()}"
                )
            if name not in self.names[qualifier]:
                raise KeyError(f"no column {qualifier}.{name} in the query's tables; {self._listing()}")
            return self.names[qualifier][name]
        found = [columns[name] for columns in self.names.values() if name in columns]
        if not found:
            raise KeyError(f"no column {name!r} in the query's tables; {self._listing()}")
        if len({self.same(c) for c in found}) > 1:
            tables = [q for q, columns in self.names.items() if name in columns]
            raise KeyError(f"column {name!r} is in tables {tables}: qualify it, e.g. {tables[0]}.{name}")
        return found[0]

    def same(self, column: str) -> str:
        return self.equal.get(column, column)

    def _listing(self) -> str:
        return "they have: " + ", ".join(
            f"{q}.{c}" if q else c for q, columns in self.names.items() for c in columns
        )


class _Translator:
    """Translates queries that read ``tables`` (the given ones, and the WITH clauses')."""

    def __init__(self, tables: dict[str, Table]) -> None:
        self.tables = tables
        self._fresh = 0

    def fresh(self, prefix: str) -> str:
        """A column name no SQL name takes (they do not start with ``_sql_``)."""
        self._fresh += 1
        return f"_sql_{prefix}{self._fresh}"

    # -- queries ----------------------------------------------------------------------------
    def query(self, node: exp.Expression) -> Table:
        scope = self._with_ctes(node.args.get("with_"))
        if isinstance(node, exp.Select):
            return scope.select(node)
        if isinstance(node, (exp.Union, exp.Intersect, exp.Except)):
            return scope.set_operation(node)
        if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Query):
            _reject_parts(node, {"this", "alias", "with_"})
            return scope.query(node.this)
        raise NotImplementedError(f"{node.sql()}: not supported: pw.sql runs queries (SELECT ...) only")

    def _with_ctes(self, ctes: exp.With | None) -> "_Translator":
        if ctes is None:
            return self
        if ctes.args.get("recursive"):
            raise NotImplementedError(f"{ctes.sql()}: recursive WITH is not supported")
        scope = _Translator(dict(self.tables))
        for cte in ctes.expressions:
            scope.tables[cte.alias] = scope.query(cte.this)
        return scope

    def set_operation(self, node: exp.Expression) -> Table:
        _reject_parts(node, _SET_OPERATION_PARTS)
        first, second = self.query(node.this), self.query(node.expression)
        distinct = node.args.get("distinct")
        if isinstance(node, exp.Union):
            rows = first.concat_reindex(second)
            return _distinct(rows) if distinct else rows
        if isinstance(node, exp.Intersect) and distinct:
            columns = first.column_names()
            if sorted(columns) != sorted(second.column_names()):
                raise ValueError(
                    f"INTERSECT matches columns by name: {columns} != {second.column_names()}; rename them with AS"
                )
            first, second = _distinct(first), _distinct(second)
            both = first.join(second, *(left[c] == right[c] for c in columns), id=left.id)
            return both.select(*(left[c] for c in columns))
        raise NotImplementedError(f"{node.sql()}: not supported (UNION, UNION ALL and INTERSECT are)")

    def select(self, node: exp.Select) -> Table:
        _reject_parts(node, _SELECT_PARTS)
        where = _conjuncts(node.args.get("where"))
        source = self.from_clause(node, where)
        if where:
            source = self.filtered(source, where)
        items = self.outputs(node, source)
        grouped = node.args.get("group") or node.args.get("having") or any(_has_aggregate(item) for _, item in items)
        result = self.aggregated(node, source, items) if grouped else self.projected(source, items)
        distinct = node.args.get("distinct")
        if distinct is not None:
            if distinct.args.get("on"):
                raise NotImplementedError(f"{distinct.sql()}: DISTINCT ON is not supported")
            result = _distinct(result)
        return result

    def outputs(self, node: exp.Select, source: _Source) -> list[tuple[str, Any]]:
        """The output columns: (name, expression), with ``*`` expanded to ``_Resolved`` columns."""
        out: dict[str, Any] = {}
        for position, item in enumerate(node.expressions):
            star_of = _star_qualifier(item)
            if star_of is not None:
                if star_of and star_of not in source.names:
                    raise KeyError(f"{item.sql()}: no table {star_of!r} in FROM")
                for qualifier, columns in source.names.items():
                    if star_of in ("", qualifier):
                        # a name two tables have: the later table's column, as in Pathway
                        out.update({name: _Resolved(column) for name, column in columns.items()})
                continue
            if isinstance(item, exp.Alias):
                name, item = item.alias, item.this
            elif isinstance(item, exp.Column):
                name = item.name
            else:
                name = f"_col_{position}"
            out[name] = item  # two outputs named alike: the later one, as in Pathway
        return list(out.items())

    def projected(self, source: _Source, items: list[tuple[str, Any]]) -> Table:
        subqueries: list[tuple[str, Table]] = []
        leaf = self.row_leaf(source, subqueries)
        exprs = {name: self.expr(item, leaf) for name, item in items}
        return self.attach(source.table, subqueries).select(**exprs)

    def filtered(self, source: _Source, conditions: list[exp.Expression]) -> _Source:
        subqueries: list[tuple[str, Table]] = []
        leaf = self.row_leaf(source, subqueries)
        condition = functools.reduce(operator.and_, (self.expr(c, leaf) for c in conditions))
        table = self.attach(source.table, subqueries).filter(condition)
        if subqueries:
            table = table.without(*(name for name, _ in subqueries))
        return replace(source, table=table)

    # -- GROUP BY, aggregates and HAVING ----------------------------------------------------------
    def aggregated(self, node: exp.Select, source: _Source, items: list[tuple[str, Any]]) -> Table:
        source, keys = self.group_keys(node, source, items)
        key_of = {source.same(column): column for _, column in keys}
        row_leaf = self.row_leaf(source, None, "an aggregate's argument")

        def key_or_aggregate(part: Any) -> Expr | None:
            """What a part of an output expression is per group: a key or a reducer."""
            for expression, column in keys:
                if expression is not None and part == expression:
                    return this[column]
            if isinstance(part, (exp.Column, _Resolved)):
                column = self.resolve(source, part)
                if source.same(column) not in key_of:
                    raise ValueError(
                        f"column {_sql_of(part)} is neither in GROUP BY nor inside an aggregate such as SUM(...)"
                    )
                return this[key_of[source.same(column)]]
            if isinstance(part, exp.AggFunc):
                return self.reducer(part, row_leaf)
            return None

        outputs = {name: self.expr(item, key_or_aggregate) for name, item in items}
        hidden: dict[str, Expr] = {}  # what HAVING needs per group, reduced with the outputs
        subqueries: list[tuple[str, Table]] = []

        def having_leaf(part: Any) -> Expr | None:
            if isinstance(part, exp.Subquery):
                return self.subquery(part, subqueries)
            if isinstance(part, exp.Column) and not part.table and part.name in outputs \
                    and source.find("", part.name) is None:
                return this[part.name]  # HAVING cnt > 1: an output column's alias
            value = key_or_aggregate(part)
            if value is None:
                return None
            name = self.fresh("having")
            hidden[name] = value
            return this[name]

        having = node.args.get("having")
        condition = self.expr(having.this, having_leaf) if having is not None else None
        groups = source.table.groupby(*(this[column] for _, column in keys)) if keys else source.table
        table = groups.reduce(**outputs, **hidden)
        if condition is None:
            return table
        table = self.attach(table, subqueries).filter(condition)
        if hidden or subqueries:
            table = table.select(*(this[name] for name in outputs))
        return table

    def group_keys(
        self, node: exp.Select, source: _Source, items: list[tuple[str, Any]]
    ) -> tuple[_Source, list[tuple[exp.Expression | None, str]]]:
        """The GROUP BY keys as columns of the source (computed ones added to it), each with
        the expression it was computed from (None for a column)."""
        group = node.args.get("group")
        if group is None:
            return source, []
        _reject_parts(group, {"expressions"})
        aliases = dict(items)
        keys: list[tuple[exp.Expression | None, str]] = []
        computed: dict[str, Expr] = {}
        for key in group.expressions:
            if isinstance(key, exp.Literal) and not key.is_string:  # GROUP BY 1: the first output
                key = items[int(key.this) - 1][1]
            if isinstance(key, exp.Column) and not key.table and source.find("", key.name) is None \
                    and key.name in aliases:
                key = aliases[key.name]  # GROUP BY an output's alias
            if isinstance(key, (exp.Column, _Resolved)):
                keys.append((None, self.resolve(source, key)))
                continue
            name = self.fresh("key")
            computed[name] = self.expr(key, self.row_leaf(source, None, "GROUP BY"))
            keys.append((key, name))
        if computed:
            source = replace(source, table=source.table.with_columns(**computed))
        return source, keys

    def reducer(self, node: exp.AggFunc, leaf: Leaf) -> Expr:
        if isinstance(node, exp.Count):
            if isinstance(node.this, exp.Distinct):
                [argument] = node.this.expressions
                return reducers.count_distinct(self.expr(argument, leaf))
            return reducers.count()
        make = _REDUCERS.get(type(node))
        if make is None or isinstance(node.this, exp.Distinct) or node.expressions:
            raise NotImplementedError(f"{node.sql()}: not supported (COUNT, SUM, AVG, MIN and MAX are)")
        return make(self.expr(node.this, leaf))

    # -- FROM and joins ------------------------------------------------------------------------
    def from_clause(self, node: exp.Select, where: list[exp.Expression]) -> _Source:
        from_ = node.args.get("from_")
        if from_ is None:
            raise NotImplementedError(f"{node.sql()}: a SELECT without FROM is not supported")
        source = self.source(from_.this, where)
        for join in node.args.get("joins") or []:
            source = self.join(source, join, where)
        return source

    def source(self, item: exp.Expression, where: list[exp.Expression]) -> _Source:
        """One item of FROM: a table, a subquery, or joins in parentheses."""
        alias = item.args.get("alias")
        if alias is not None and alias.columns:
            raise NotImplementedError(f"{alias.sql()}: naming a table's columns in its alias is not supported")
        if isinstance(item, exp.Table):
            _reject_parts(item, {"this", "alias", "joins"})
            if item.name not in self.tables:
                raise KeyError(f"table {item.name!r} is not given: pass it as pw.sql(query, {item.name}=table)")
            table = self.tables[item.name].copy()  # its own node: a table may be joined with itself
            columns = {c: c for c in table.column_names()}
            source = _Source(table, {item.alias_or_name: columns}, frozenset([item.name]))
        elif isinstance(item, exp.Subquery) and isinstance(item.this, exp.Query):
            table = self.query(item)
            read = frozenset(t.name for t in item.find_all(exp.Table))
            source = _Source(table, {item.alias: {c: c for c in table.column_names()}}, read)
        elif isinstance(item, exp.Subquery):  # FROM (a JOIN b)
            _reject_parts(item, {"this"})
            source = self.source(item.this, where)
        else:
            raise NotImplementedError(f"{item.sql()}: not supported in FROM")
        for join in item.args.get("joins") or []:
            source = self.join(source, join, where)
        return source

    def join(self, first: _Source, join: exp.Join, where: list[exp.Expression]) -> _Source:
        """``first`` joined with the join's table: the pairs, their columns renamed apart."""
        _reject_parts(join, _JOIN_PARTS)
        second = self.source(join.this, where)
        twice = set(first.names) & set(second.names)
        if twice:
            name = twice.pop()
            raise ValueError(f"table {name!r} is twice in FROM: give each an alias (FROM {name} AS a, {name} AS b)")
        how = _JOIN_MODES.get(join.side)
        if how is None or join.kind not in ("", "INNER", "OUTER", "CROSS"):
            raise NotImplementedError(f"{join.sql()}: not supported")
        conditions = _conjuncts(join.args.get("on"))
        # pairs of columns found equal: USING's, then those of the conditions
        equal = [(first.column("", c.name), second.column("", c.name)) for c in join.args.get("using") or []]
        sides = (first, second)
        if not conditions and not equal and how == "inner":  # FROM a, b WHERE a.k = b.k: join on k
            claimed = [c for c in where if self.key_pair(c, sides) is not None]
            where[:] = [c for c in where if not any(c is k for k in claimed)]
            conditions = claimed
        exprs = [left[a] == right[b] for a, b in equal]
        rest = []
        for condition in conditions:
            pair = self.key_pair(condition, sides)
            if pair is None:
                rest.append(self.expr(condition, self.join_leaf(sides)))
                continue
            exprs.append(pair[0] == pair[1])
            if all(isinstance(p, exp.Column) for p in (condition.this, condition.expression)):
                equal.append(_columns_of(condition, sides))
        pairs = first.table.join(second.table, *exprs, how=JoinMode(how))
        if rest:
            if how != "inner":
                raise NotImplementedError(
                    f"{join.sql()}: an outer join's ON may only compare the two tables' columns for equality"
                )
            pairs = pairs.filter(functools.reduce(operator.and_, rest))
        # an unqualified name of both tables reads the first one's: right for inner and left joins
        return _flattened(pairs, first, second, equal if how in ("inner", "left") else [])

    def key_pair(self, condition: exp.Expression, sides: tuple[_Source, _Source]) -> tuple[Expr, Expr] | None:
        """A join key: ``condition`` is ``x = y`` with ``x`` of one table, ``y`` of the other."""
        if not isinstance(condition, exp.EQ):
            return None
        found = [_side_of(part, sides) for part in (condition.this, condition.expression)]
        if set(found) != {0, 1}:
            return None
        parts = (condition.this, condition.expression) if found[0] == 0 else (condition.expression, condition.this)
        leaf = self.join_leaf(sides)
        return self.expr(parts[0], leaf), self.expr(parts[1], leaf)

    def join_leaf(self, sides: tuple[_Source, _Source]) -> Leaf:
        """Columns of a join condition: ``pw.left[...]`` or ``pw.right[...]``."""

        def leaf(part: Any) -> Expr | None:
            if not isinstance(part, exp.Column):
                return _no_aggregate_or_subquery(part, "a join condition")
            found = [(side, s.find(part.table, part.name)) for side, s in enumerate(sides)]
            found = [(side, column) for side, column in found if column is not None]
            if not found:
                raise KeyError(f"{part.sql()}: no such column in the joined tables")
            if len(found) > 1:
                raise KeyError(f"column {part.sql()} is in both joined tables: qualify it, e.g. t.{part.name}")
            side, column = found[0]
            return (left, right)[side][column]

        return leaf

    # -- expressions ---------------------------------------------------------------------------
    def row_leaf(self, source: _Source, subqueries: list[tuple[str, Table]] | None, where: str = "WHERE") -> Leaf:
        """Columns of the source's rows; scalar subqueries (if ``subqueries`` collects them)."""

        def leaf(part: Any) -> Expr | None:
            if isinstance(part, (exp.Column, _Resolved)):
                return self.column_value(source, part)
            if isinstance(part, exp.Subquery) and subqueries is not None:
                return self.subquery(part, subqueries)
            return _no_aggregate_or_subquery(part, where)

        return leaf

    def column_value(self, source: _Source, part: exp.Column | _Resolved) -> Expr:
        if isinstance(part, exp.Column) and part.table and part.table not in source.names \
                and part.table in source.read:
            # a table a subquery in FROM read, whose ids the rows have (Pathway reads it:
            # ``SELECT t1.a FROM (SELECT a AS b FROM t1) AS t2``)
            return self.tables[part.table][part.name]
        return this[self.resolve(source, part)]

    def resolve(self, source: _Source, part: exp.Column | _Resolved) -> str:
        if isinstance(part, _Resolved):
            return part.column
        return source.column(part.table, part.name)

    def subquery(self, node: exp.Subquery, subqueries: list[tuple[str, Table]]) -> Expr:
        """A scalar subquery's value: a column that ``attach`` adds to the rows."""
        name = self.fresh("subquery")
        subqueries.append((name, self.query(node)))
        return this[name]

    def attach(self, table: Table, subqueries: list[tuple[str, Table]]) -> Table:
        """``table`` with a column per scalar subquery: its value joined to every row (so
        the rows keep their ids; a subquery without rows leaves none)."""
        for name, rows in subqueries:
            columns = rows.column_names()
            if len(columns) != 1:
                raise ValueError(f"a subquery used as a value must give one column; this one gives {columns}")
            # one row: pw.reducers.unique fails on a subquery giving different values
            value = rows.reduce(value=reducers.unique(this[columns[0]]))
            pairs = table.join(value, id=left.id)
            table = pairs.select(*(left[c] for c in table.column_names()), **{name: right.value})
        return table

    def expr(self, node: Any, leaf: Leaf) -> Expr:
        """The expression ``node`` means, ``leaf`` saying what columns and aggregates are."""
        found = leaf(node)
        if found is not None:
            return found
        if isinstance(node, exp.Paren):
            return self.expr(node.this, leaf)
        if isinstance(node, (exp.Literal, exp.Boolean, exp.Null)):
            return wrap(_literal(node))
        if isinstance(node, exp.Neg):
            return -self.expr(node.this, leaf)
        if isinstance(node, exp.Not):
            return ~self.expr(node.this, leaf)
        if type(node) in _BINARY:
            return _BINARY[type(node)](self.expr(node.this, leaf), self.expr(node.expression, leaf))
        if isinstance(node, exp.Between):
            value = self.expr(node.this, leaf)
            return (value >= self.expr(node.args["low"], leaf)) & (value <= self.expr(node.args["high"], leaf))
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            return self.expr(node.this, leaf).is_none()
        if isinstance(node, exp.Case):
            return self.case(node, leaf)
        if isinstance(node, exp.If):
            return if_else(*(self.expr(node.args.get(k) or exp.Null(), leaf) for k in ("this", "true", "false")))
        if isinstance(node, exp.Coalesce):
            return coalesce(*(self.expr(part, leaf) for part in (node.this, *node.expressions)))
        raise NotImplementedError(f"{_sql_of(node)}: not supported")

    def case(self, node: exp.Case, leaf: Leaf) -> Expr:
        default = node.args.get("default")
        result = self.expr(default, leaf) if default is not None else wrap(None)
        subject = node.this  # CASE x WHEN 1 THEN ...: compares x
        for branch in reversed(node.args["ifs"]):
            condition = branch.this if subject is None else exp.EQ(this=subject, expression=branch.this)
            result = if_else(self.expr(condition, leaf), self.expr(branch.args["true"], leaf), result)
        return result


def _flattened(pairs: Any, first: _Source, second: _Source, equal: list[tuple[str, str]]) -> _Source:
    """The join's pairs as a table whose columns are named ``_<table number>_<column>``."""
    exprs: dict[str, Expr] = {}
    names: dict[str, dict[str, str]] = {}
    renamed: list[dict[str, str]] = [{}, {}]
    for side, source in enumerate((first, second)):
        for qualifier, columns in source.names.items():
            number = len(names)
            names[qualifier] = {}
            for name, column in columns.items():
                new = f"_{number}_{name}"
                exprs[new] = (left, right)[side][column]
                names[qualifier][name] = renamed[side][column] = new
    result = _Source(pairs.select(**exprs), names, first.read | second.read)
    for side, source in enumerate((first, second)):  # keep what each side knew to be equal
        for column, same in source.equal.items():
            _make_equal(result, renamed[side][column], renamed[side][same])
    for a, b in equal:
        _make_equal(result, renamed[0][a], renamed[1][b])
    return result


def _make_equal(source: _Source, a: str, b: str) -> None:
    first, second = source.same(a), source.same(b)
    if first == second:
        return
    for column, same in list(source.equal.items()):
        if same == second:
            source.equal[column] = first
    source.equal[second] = first


def _columns_of(condition: exp.EQ, sides: tuple[_Source, _Source]) -> tuple[str, str]:
    """The two columns an equality ``a.x = b.y`` compares: (first side's, second side's)."""
    a, b = condition.this, condition.expression
    if _side_of(a, sides) == 1:
        a, b = b, a
    return sides[0].column(a.table, a.name), sides[1].column(b.table, b.name)


def _side_of(node: exp.Expression, sides: tuple[_Source, _Source]) -> int | None:
    """0 or 1 when every column of ``node`` is of that side of a join (and some is), else None."""
    if node.find(exp.AggFunc, exp.Subquery) is not None:
        return None
    found = set()
    for column in node.find_all(exp.Column):
        where = [side for side, source in enumerate(sides) if source.find(column.table, column.name) is not None]
        if len(where) != 1:
            return None
        found.add(where[0])
    return found.pop() if len(found) == 1 else None


def _no_aggregate_or_subquery(part: Any, where: str) -> None:
    if isinstance(part, exp.AggFunc):
        raise ValueError(f"{part.sql()}: an aggregate is not allowed in {where}; use it in SELECT or HAVING")
    if isinstance(part, exp.Subquery):
        raise NotImplementedError(f"{part.sql()}: a subquery is not supported in {where}")
    return None


def _has_aggregate(node: Any) -> bool:
    """Whether ``node`` has an aggregate of its query (not one of a subquery's)."""
    if isinstance(node, exp.AggFunc):
        return True
    if isinstance(node, exp.Subquery) or not isinstance(node, exp.Expression):
        return False
    return any(_has_aggregate(child) for child in node.iter_expressions())


def _distinct(table: Table) -> Table:
    """One row per distinct row of ``table`` (SELECT DISTINCT, UNION)."""
    columns = [this[c] for c in table.column_names()]
    return table.groupby(*columns).reduce(*columns)


def _conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    """``a AND b AND c`` as ``[a, b, c]`` (of a WHERE or ON clause, or of a condition)."""
    if node is None:
        return []
    if isinstance(node, (exp.Where, exp.Paren)):
        return _conjuncts(node.this)
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


def _star_qualifier(item: exp.Expression) -> str | None:
    """For ``*``: "", for ``t.*``: "t"; for anything else None."""
    if isinstance(item, exp.Star):
        return ""
    if isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
        return item.table
    return None


def _literal(node: exp.Expression) -> Any:
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if node.is_string:
        return node.this
    try:
        return int(node.this)
    except ValueError:
        return float(node.this)


def _sql_of(node: Any) -> str:
    return node.sql() if isinstance(node, exp.Expression) else repr(node)


def _reject_parts(node: exp.Expression, supported: set[str]) -> None:
    """NotImplementedError for a part of ``node`` that pw.sql does not translate (ORDER BY...)."""
    for key, value in node.args.items():
        if key in supported or value in (None, False, [], ""):
            continue
        parts = value if isinstance(value, list) else [value]
        text = " ".join(p.sql() if isinstance(p, exp.Expression) else str(p) for p in parts)
        hint = _HINTS.get(key, "rewrite the query without it")
        raise NotImplementedError(f"{key}: {text}: not supported by pw.sql; {hint}")
