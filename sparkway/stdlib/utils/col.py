"""``pw.utils.col``: unpacking tuple and JSON columns, and functions over whole columns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sparkway.api import reducers
from sparkway.api.functions import apply_with_type, coalesce, if_else, make_tuple, unwrap
from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.api.thisclass import this
from sparkway.core import dtypes as dt
from sparkway.core.expression import ColumnRef, Expr


def _name(column: str | ColumnRef) -> str:
    return column if isinstance(column, str) else column.name


def unpack_col(column: ColumnRef, *unpacked_columns: str | ColumnRef, schema: type[Schema] | None = None) -> Table:
    """A table with one column per element of a tuple column, named by ``unpacked_columns``
    or by ``schema`` (whose types the columns then get); the ids are the column's table's.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown('''
    ...   | name  | age
    ... 1 | Alice | 25
    ... 2 | Bob   | 32
    ... ''')
    >>> users = t.select(user=pw.make_tuple(pw.this.name, pw.this.age))
    >>> pw.debug.compute_and_print(pw.utils.col.unpack_col(users.user, "who", "years"), include_id=False)
    who   | years
    Alice | 25
    Bob   | 32
    """
    if (schema is None) == (len(unpacked_columns) == 0):
        raise ValueError("unpack_col: give either the names of the new columns or a `schema`, exactly one of them")
    names = schema.column_names() if schema is not None else [_name(c) for c in unpacked_columns]
    result = column.table.select(**{name: column[i] for i, name in enumerate(names)})
    return result.update_types(**schema._dtypes()) if schema is not None else result


# How unpack_col_dict reads each type: a JSON conversion, then (for types JSON has no
# value of) a parse of the converted value, the format pw.io's JSON output writes, with
# a value the parse takes in place of a None (a parse may run in Python, which Spark
# calls on every row, in the branch of an if_else not taken too).
_JSON_READERS: dict[dt.DType, tuple[Callable[[Expr], Expr], Callable[[Expr], Expr] | None, Any]] = {
    dt.JSON: (lambda value: value, None, None),
    dt.INT: (lambda value: value.as_int(), None, None),
    dt.FLOAT: (lambda value: value.as_float(), None, None),
    dt.BOOL: (lambda value: value.as_bool(), None, None),
    dt.STR: (lambda value: value.as_str(), None, None),
    dt.DATE_TIME_NAIVE: (
        lambda value: value.as_str(), lambda text: text.dt.strptime("%Y-%m-%dT%H:%M:%S.%f"), "1970-01-01T00:00:00.0",
    ),
    dt.DATE_TIME_UTC: (
        lambda value: value.as_str(), lambda text: text.dt.strptime("%Y-%m-%dT%H:%M:%S.%f%z"), "1970-01-01T00:00:00.0+0000",
    ),
    dt.DURATION: (lambda value: value.as_int(), lambda ns: ns.dt.to_duration("ns"), 0),
}


def _read_json(value: Expr, kind: dt.DType) -> Expr:
    """``value`` (an optional JSON) as a ``kind``; a null or missing value is None when
    ``kind`` is optional, else the run fails ("cannot unwrap a None value")."""
    readers = _JSON_READERS.get(kind.with_optional(False))
    if readers is None:
        raise TypeError(
            f"unpack_col_dict cannot read a {kind} from pw.Json; use one of "
            f"{', '.join(str(k) for k in _JSON_READERS)} (optional or not) in the schema"
        )
    convert, parse, stand_in = readers
    read = convert(value)
    if parse is None:
        return read if kind.optional else unwrap(read)
    if not kind.optional:
        return parse(unwrap(read))
    return if_else(read.is_none(), None, parse(coalesce(read, stand_in)))


def unpack_col_dict(column: ColumnRef, schema: type[Schema]) -> Table:
    """A table with one column per field of ``schema``, read from the JSON objects of
    ``column``: numbers, strings and booleans as such, date-times from their ISO text
    and durations from their nanoseconds (as sparkway's and Pathway's JSON output writes
    them). A missing or null field is None in an optional column and fails the run
    otherwise.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_rows(
    ...     pw.schema_from_types(data=pw.Json),
    ...     [({"a": 13, "b": "foo"},), ({"a": 17},)],
    ... )
    >>> class Fields(pw.Schema):
    ...     a: int
    ...     b: str | None
    >>> pw.debug.compute_and_print(pw.utils.col.unpack_col_dict(t.data, Fields), include_id=False)
    a  | b
    13 | foo
    17 |
    """
    kinds = schema._dtypes()
    fields = {name: _read_json(column.get(name), kind) for name, kind in kinds.items()}
    return column.table.select(**fields).update_types(**kinds)


def multiapply_all_rows(
    *cols: ColumnRef, fun: Callable[..., Sequence[Sequence[Any]]], result_col_names: list[str | ColumnRef]
) -> Table:
    """Calls ``fun`` once with the whole of each column (lists of equal length, rows in
    the same order) and makes a table with the ids of the columns' table whose columns,
    named ``result_col_names``, are the lists ``fun`` returns (one value per row). It is
    meant for small tables: every change of the table calls ``fun`` on all the rows.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown('''
    ...   | a | b
    ... 1 | 1 | 10
    ... 2 | 2 | 20
    ... ''')
    >>> def add_total(a, b):
    ...     total = sum(a) + sum(b)
    ...     return [x + total for x in a], [x + total for x in b]
    >>> result = pw.utils.col.multiapply_all_rows(t.a, t.b, fun=add_total, result_col_names=["ra", "rb"])
    >>> pw.debug.compute_and_print(result, include_id=False)
    ra | rb
    34 | 43
    35 | 53
    """
    if not cols:
        raise ValueError("multiapply_all_rows needs at least one column")
    table = cols[0].table
    if any(c.table is not table for c in cols[1:]):
        raise ValueError("multiapply_all_rows: all the columns must come from one table")
    names = [_name(c) for c in result_col_names]
    rows = table.select(_pw_row=make_tuple(table.id, *cols))
    gathered = rows.reduce(_pw_rows=reducers.sorted_tuple(rows._pw_row))

    def apply_to_all(all_rows: Sequence[tuple]):  # unannotated: its type is given to apply_with_type
        ids, *columns = zip(*all_rows)
        results = fun(*(list(c) for c in columns))
        return list(zip(ids, *results))

    result_type = list[tuple[(dt.Pointer, *[Any] * len(names))]]  # type: ignore[misc]
    applied = gathered.select(_pw_rows=apply_with_type(apply_to_all, result_type, gathered._pw_rows))
    return _rows_by_id(applied.flatten(this._pw_rows)._pw_rows, names).with_universe_of(table)


def _rows_by_id(rows: ColumnRef, names: list[str]) -> Table:
    """The table of tuples ``(id, value, ...)``: rows with these ids and values named ``names``."""
    unpacked = unpack_col(rows, "_pw_id", *names)
    return unpacked.with_id(unpacked._pw_id).without(this._pw_id)


def apply_all_rows(*cols: ColumnRef, fun: Callable[..., Sequence[Any]], result_col_name: str | ColumnRef) -> Table:
    """``multiapply_all_rows`` for a function returning one list: a table with the ids of
    the columns' table and one column, ``result_col_name``.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown('''
    ...   | a
    ... 1 | 1
    ... 2 | 3
    ... ''')
    >>> result = pw.utils.col.apply_all_rows(t.a, fun=lambda a: [x - min(a) for x in a], result_col_name="above_min")
    >>> pw.debug.compute_and_print(result, include_id=False)
    above_min
    0
    2
    """
    return multiapply_all_rows(*cols, fun=lambda *columns: [fun(*columns)], result_col_names=[result_col_name])


def groupby_reduce_majority(column_group: ColumnRef, column_val: ColumnRef) -> Table:
    """Per value of ``column_group``, its most frequent value of ``column_val`` (column
    ``majority``); the ids are those of ``groupby(column_group)``.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown('''
    ... team | vote
    ... 1    | tea
    ... 1    | tea
    ... 1    | coffee
    ... 2    | coffee
    ... ''')
    >>> pw.debug.compute_and_print(pw.utils.col.groupby_reduce_majority(t.team, t.vote), include_id=False)
    team | majority
    1    | tea
    2    | coffee
    """
    table = column_group.table
    group, value = column_group.name, column_val.name
    counts = table.groupby(table[group], table[value]).reduce(
        table[group], table[value], _pw_count=reducers.count()
    )
    top = counts.groupby(counts[group]).reduce(counts[group], _pw_top=reducers.argmax(counts._pw_count))
    return top.select(top[group], majority=counts.ix(top._pw_top)[value])
