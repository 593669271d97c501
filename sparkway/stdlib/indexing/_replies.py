"""How the indexes answer queries, built from table operations only.

Every index turns a table of queries into a table of *replies*, with the queries' ids:
one column, ``_pw_index_reply``, holding the matches of the query as a list of
``(id of the matched data row, score)``, best first (highest score; ties by id). A
nearest-neighbour index scores a match with minus its distance. When a ``DataIndex``
asks for the matched rows' values too (``Rows``: its data table has the indexed rows),
each match is ``(id, score, row)``, the row a tuple of the data table's columns, or
the replies are already one list per column of the matched rows' values and one of the
scores: the rows travel with the matches, and no join brings them afterwards.

Two ways to get there, both ordinary incremental parts of the plan:

* ``pairwise_replies``: the queries joined with the data rows they may match (all of
  them, or the rows sharing an LSH bucket), each pair scored by a UDF, then the best
  ``k`` per query by a ``groupby(id=query).reduce``. A change of the data changes the
  replies it affects; with ``as_of_now`` the join is an ``asof_now_join``, so a query is
  answered once, with the data of its time. Every data change recomputes the reduce of
  the queries it pairs with: O(queries x data) for a search over all rows.
* ``scan_replies`` (answers as of now only): the data gathered into one row (a
  ``reduce`` of tuples), each query joined with it once (``asof_now_join``) and
  answered by a UDF scanning the gathered rows with numpy. The state holds the data
  once and nothing per query.

The input tables have fixed column names: queries ``_pw_q`` (the query), ``_pw_k`` (how
many matches) and ``_pw_f`` (the metadata filter or None); data ``_pw_d`` (the indexed
value), ``_pw_m`` (its metadata or None) and ``_pw_p`` (the row to carry, or None).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from sparkway.api import reducers
from sparkway.api.functions import apply_with_type, if_else, make_tuple
from sparkway.api.table import Table
from sparkway.api.thisclass import left, right
from sparkway.core import dtypes as dt
from sparkway.core.dtypes import Pointer
from sparkway.core.expression import ColumnRef, Expr
from sparkway.stdlib.indexing.colnames import _INDEX_REPLY, _SCORE
from sparkway.stdlib.indexing.lsh import Bucketer

#: the type of a reply: (matched id, score) pairs, best first
REPLY_TYPE = list[tuple[Pointer, float]]
#: a scored candidate pair: (distance, matched id), or None when it does not qualify
_CANDIDATE = Optional[tuple[float, Pointer]]


@dataclass(frozen=True)
class Rows:
    """The rows of ``table`` (with the indexed rows' ids) to answer with: in each match,
    or with ``lists``, as one list per column (and ``_pw_index_reply_score``, the list of
    scores) in place of the reply."""

    table: Table
    lists: bool = False


def reply_type(rows: Rows | None) -> dt.DType:
    """The type of the replies: with rows, each match also holds its row."""
    if rows is None:
        return dt.dtype_of(REPLY_TYPE)
    match = dt.DType("tuple", (dt.POINTER, dt.FLOAT, dt.DType("tuple", tuple(rows.table._node.columns.values()))))
    return dt.DType("list", (match,))


def _lists_type(rows: Rows) -> dt.DType:
    items = [*rows.table._node.columns.values(), dt.FLOAT]
    return dt.DType("tuple", tuple(dt.DType("list", (kind,)) for kind in items))


class _AsLists:
    """A function answering with matches ``(id, score, row)`` as one list per column of
    the rows, then the list of scores."""

    def __init__(self, answer: Callable[..., list[tuple[Any, ...]]], width: int) -> None:
        self.answer, self.width = answer, width

    def __call__(self, *args: Any):  # unannotated: the type is given where it is applied
        matches = self.answer(*args)
        return (*([m[2][i] for m in matches] for i in range(self.width)), [m[1] for m in matches])


def answered(table: Table, answer: Callable[..., list[tuple[Any, ...]]], args: list[Any], rows: Rows | None) -> Table:
    """The replies ``answer(*args)`` gives each row of ``table`` (with ``rows.lists``,
    as list columns: see ``Rows``)."""
    if rows is None or not rows.lists:
        return table.select(**{_INDEX_REPLY: apply_with_type(answer, reply_type(rows), *args)})
    names = [*rows.table.column_names(), _SCORE]
    packed = table.select(_pw_t=apply_with_type(_AsLists(answer, len(names) - 1), _lists_type(rows), *args))
    return packed.select(**{name: packed._pw_t[i] for i, name in enumerate(names)})


def same_rows(table: Table, other: Table) -> bool:
    """Whether two tables are said to have the same ids (rows to answer with must have the
    indexed rows' ids)."""
    return table._universe.is_subset_of(other._universe) and other._universe.is_subset_of(table._universe)


def query_rows(query: ColumnRef, number_of_matches: Any, metadata_filter: Any) -> Table:
    """The queries with the column names the replies are computed from."""
    return query.table.select(_pw_q=query, _pw_k=number_of_matches, _pw_f=metadata_filter)


def data_rows(data: ColumnRef, metadata: Any, rows: Rows | None = None) -> Table:
    """The indexed rows with the column names the replies are computed from, and the
    ``rows`` to answer with. A row holding an Error value (``terminate_on_error=False``)
    is left out."""
    packed = make_tuple(*(rows.table[c] for c in rows.table.column_names())) if rows is not None else None
    return data.table.select(_pw_d=data, _pw_m=metadata, _pw_p=packed).remove_errors()


def best_first(candidates: Sequence[tuple[Any, ...]] | None, k: int) -> list[tuple[Any, ...]]:
    """The ``k`` candidates ``(distance, id[, row])`` of least distance (ties by id),
    each matched id once, as a reply: ``(id, -distance[, row])``.

    >>> best_first([(2.0, 7), (1.0, 9), (1.0, 3), (2.0, 7)], 2)
    [(3, -1.0), (9, -1.0)]
    """
    reply: list[tuple[Any, ...]] = []
    seen: set[int] = set()
    for distance, key, *row in sorted(candidates or (), key=lambda c: (c[0], c[1])):
        if len(reply) >= k:
            break
        if key not in seen:
            seen.add(key)
            reply.append((key, -float(distance), *row))
    return reply


def pairwise_replies(
    queries: Table,
    data: Table,
    candidate: Callable[[Any, Any, Any, Any, int, int], tuple[float, int] | None],
    *,
    buckets: Bucketer | None,
    as_of_now: bool,
    rows: Rows | None = None,
) -> Table:
    """Replies from the pairs of queries and data rows (see the module's docstring).

    ``candidate(query, value, metadata, filter, data id, k)`` scores one pair: its
    ``(distance, data id)``, or None when the row does not qualify for the query. With
    ``buckets``, only rows sharing a bucket with the query are paired.
    """
    if buckets is not None:
        def keyed(table: Table, value: str, origin: str) -> Table:
            keys = apply_with_type(buckets, list[int], table[value])
            return table.with_columns(_pw_bucket=keys).flatten("_pw_bucket", origin_id=origin)

        paired_queries, paired_data = keyed(queries, "_pw_q", "_pw_qid"), keyed(data, "_pw_d", "_pw_did")
        on: tuple[Expr, ...] = (paired_queries._pw_bucket == paired_data._pw_bucket,)
    else:
        paired_queries = queries.with_columns(_pw_qid=queries.id)
        paired_data = data.with_columns(_pw_did=data.id)
        on = ()
    join = paired_queries.asof_now_join if as_of_now else paired_queries.join
    scored = join(paired_data, *on).select(
        _pw_qid=left._pw_qid,
        _pw_k=left._pw_k,
        _pw_e=apply_with_type(
            candidate, _CANDIDATE, left._pw_q, right._pw_d, right._pw_m, left._pw_f, right._pw_did, left._pw_k,
        ),
        _pw_p=right._pw_p,
    )
    if rows is not None:  # the row joins its candidate
        scored = scored.with_columns(
            _pw_e=if_else(scored._pw_e.is_none(), None, make_tuple(scored._pw_e[0], scored._pw_e[1], scored._pw_p))
        )
    return best_replies(scored.without(scored._pw_p), queries, rows)


def best_replies(
    candidates: Table, queries: Table, rows: Rows | None = None,
    pick: Callable[[Sequence[tuple[Any, ...]] | None, int], list[tuple[Any, ...]]] = best_first,
) -> Table:
    """The replies made of ``candidates`` (``_pw_qid``: the query, ``_pw_e``: a candidate
    or None, ``_pw_k``: at most the query's number of matches): per query, ``pick(its
    candidates, k)``, by default the ``k`` of least distance of ``(distance, id[, row])``.
    A query without candidates replies nothing."""
    # every query has a group, also one without candidates
    placeholders = queries.select(_pw_qid=queries.id, _pw_k=queries._pw_k, _pw_e=None)
    every = Table.concat_reindex(candidates, placeholders)
    best = every.groupby(id=every._pw_qid).reduce(
        _pw_k=reducers.max(every._pw_k), _pw_c=reducers.tuple(every._pw_e, skip_nones=True)
    )
    return answered(best, pick, [best._pw_c, best._pw_k], rows).with_universe_of(queries)


def _with_rows(search: Callable[..., list[tuple[int, float]]]) -> Callable[..., list[tuple[Any, ...]]]:
    """``search``, whose matches also get the rows of their entries (``entry[3]``)."""

    def answer(query: Any, k: int, expression: Any, entries: Sequence[tuple[Any, ...]] | None) -> list:
        rows = {entry[0]: entry[3] for entry in entries or ()}
        return [(key, score, rows[key]) for key, score in search(query, k, expression, entries)]

    return answer


def scan_replies(
    queries: Table,
    data: Table,
    search: Callable[[Any, int, Any, Sequence[tuple[Any, ...]] | None], list[tuple[int, float]]],
    rows: Rows | None = None,
) -> Table:
    """Replies as of now by scanning the gathered data (see the module's docstring).

    ``search(query, k, filter, entries)`` gives a query's reply from all the data rows'
    ``(id, value, metadata, row)`` (None when there are none).
    """
    gathered = data.reduce(_pw_entries=reducers.tuple(make_tuple(data.id, data._pw_d, data._pw_m, data._pw_p)))
    joined = queries.asof_now_join_left(gathered, id=queries.id)
    answer = search if rows is None else _with_rows(search)
    args = [left._pw_q, left._pw_k, left._pw_f, right._pw_entries]
    return answered(joined, answer, args, rows).with_universe_of(queries)


def pathway_type_name(kind: dt.DType) -> str:
    """How Pathway's messages name a column type (``STR``, ``Optional(INT)``, ``Array``)."""
    base = kind.with_optional(False)
    if base.is_array:
        text = "Array"
    elif base.name == "list":
        text = f"List({pathway_type_name(base.items[0])})"
    elif base.name == "tuple":
        text = f"Tuple({', '.join(pathway_type_name(i) for i in base.items)})"
    else:
        text = {"Json": "JSON", "Pointer": "POINTER", "Any": "ANY"}.get(base.name, base.name.upper())
    return f"Optional({text})" if kind.optional else text


def type_of(expression: Any) -> dt.DType:
    """The type of a column or constant given to an index (Any for other expressions)."""
    if isinstance(expression, ColumnRef) and isinstance(expression.table, Table):
        return dt.POINTER if expression.name == "id" else expression.table._node.columns[expression.name]
    if isinstance(expression, Expr):
        return dt.ANY
    return dt.dtype_of_value(expression)


def is_vector(kind: dt.DType) -> bool:
    """Whether a column of this type holds vectors: numpy arrays, or lists or tuples of
    numbers."""
    if kind.optional:
        return False
    if kind.name == "Any" or kind.is_array:
        return True
    if kind.name in ("list", "tuple"):
        return all(item.name in ("int", "float", "Any") and not item.optional for item in kind.items)
    return False


def check_types(checks: list[tuple[str, Any, str, Callable[[dt.DType], bool]]]) -> None:
    """Raises Pathway's TypeError naming every ``(what, expression, expected, accepts)``
    whose expression's type ``accepts`` refuses."""
    failed = [
        f"{what} should be compatible with type {expected} but is of type {pathway_type_name(type_of(expression))}"
        for what, expression, expected, accepts in checks
        if not accepts(type_of(expression))
    ]
    if failed:
        raise TypeError("Some columns have types incompatible with expected types: " + ", ".join(failed))


def accepts_str(kind: dt.DType) -> bool:
    return kind.name in ("str", "Any") and not kind.optional


def accepts_optional_str(kind: dt.DType) -> bool:
    return kind.name in ("str", "Any")


def accepts_json(kind: dt.DType) -> bool:
    return kind.name in ("Json", "Any")


def accepts_int(kind: dt.DType) -> bool:
    return kind.name in ("int", "Any") and not kind.optional


def index_checks(
    data: Any, query: Any, number_of_matches: Any, metadata: Any, metadata_filter: Any,
    expected: str, accepts: Callable[[dt.DType], bool],
) -> list[tuple[str, Any, str, Callable[[dt.DType], bool]]]:
    """The type checks of an index's columns: data and query of the ``expected`` kind,
    JSON metadata, an optional string filter, an int number of matches."""
    checks = [("data column", data, expected, accepts), ("query column", query, expected, accepts)]
    if metadata is not None:
        checks.append(("metadata column", metadata, "JSON", accepts_json))
    if metadata_filter is not None:
        checks.append(("metadata filter", metadata_filter, "Optional(STR)", accepts_optional_str))
    if not isinstance(number_of_matches, int):
        checks.append(("number of matches", number_of_matches, "INT", accepts_int))
    return checks
