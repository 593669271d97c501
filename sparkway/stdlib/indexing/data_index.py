"""``DataIndex``: an index's matches joined with the rows of a data table.

An ``InnerIndex`` answers each query with the ids of the data rows it matches and their
scores (see ``sparkway.stdlib.indexing._replies``); ``DataIndex`` turns these replies
into a join of the queries with the matched rows, one row per match or one row per
query holding lists of the matched rows' values, best match first.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from sparkway.api import reducers
from sparkway.api.functions import apply_with_type
from sparkway.api.table import JoinResult, Table
from sparkway.api.thisclass import left, right
from sparkway.core import dtypes as dt
from sparkway.core.dtypes import Pointer
from sparkway.core.expression import ColumnRef, Expr
from sparkway.stdlib.indexing import _replies
from sparkway.stdlib.indexing.colnames import _INDEX_REPLY, _MATCHED_ID, _QUERY_ID, _SCORE

__all__ = ["DataIndex", "InnerIndex", "_SCORE", "_MATCHED_ID"]

_RANK = "_pw_index_reply_rank"


@dataclass(frozen=True, eq=False)
class InnerIndex(ABC):
    """A data structure over ``data_column`` (with optional JSON metadata in
    ``metadata_column``) that answers each query with the ids of the matching rows of
    ``data_column``'s table and a score per match, as a table with the queries' ids and
    one column ``_pw_index_reply``: a list of ``(id, score)``, best first.

    ``query`` keeps the replies up to date as the data changes; ``query_as_of_now``
    answers each query once, with the data of the time it arrives. Both take the number
    of matches (an int, or a column of the queries' table) and an optional JMESPath
    filter over the metadata (a string, or a column of strings or None).
    """

    data_column: ColumnRef
    metadata_column: Expr | None
    #: whether ``_answer`` can carry the matched rows' values (sparkway's indexes)
    _carries_rows: ClassVar[bool] = False

    def _answer(
        self, query_column: ColumnRef, number_of_matches: Expr | int, metadata_filter: Expr | None,
        as_of_now: bool, rows: _replies.Rows | None,
    ) -> Table:
        """The replies of ``query`` or ``query_as_of_now``, answering with ``rows`` (see
        ``_replies.Rows``) when they are given."""
        if rows is not None:
            raise NotImplementedError(f"{type(self).__name__} does not carry rows with its matches")
        ask = self.query_as_of_now if as_of_now else self.query
        return ask(query_column, number_of_matches=number_of_matches, metadata_filter=metadata_filter)

    @abstractmethod
    def query(
        self, query_column: ColumnRef, *, number_of_matches: Expr | int = 3, metadata_filter: Expr | None = None,
    ) -> Table:
        """Replies to the queries of ``query_column``, updated when the data changes."""

    @abstractmethod
    def query_as_of_now(
        self, query_column: ColumnRef, *, number_of_matches: Expr | int = 3, metadata_filter: Expr | None = None,
    ) -> Table:
        """Replies to the queries of ``query_column``, each with the data of its time."""


def _ranked(reply: list[tuple[int, float]] | None) -> list[tuple[int, int, float]]:
    """A reply's matches with their positions: ``(position, id, score)``."""
    return [(position, key, score) for position, (key, score) in enumerate(reply or ())]


def _no_values(_: Any) -> list:
    return []


def _matches(replies: Table) -> Table:
    """One row per match of a reply: the query's id, the matched id, score and rank."""
    ranked = replies.select(
        **{_QUERY_ID: replies.id, "_pw_ranked": apply_with_type(_ranked, list[tuple[int, Pointer, float]], replies[_INDEX_REPLY])}
    ).flatten("_pw_ranked")
    match = ranked._pw_ranked
    return ranked.select(**{_QUERY_ID: ranked[_QUERY_ID], _MATCHED_ID: match[1], _SCORE: match[2], _RANK: match[0]})


@dataclass(eq=False)
class DataIndex:
    """An ``inner_index`` whose matches come with the rows of ``data_table`` (whose ids are
    those of the index's data column's table).

    ``query`` and ``query_as_of_now`` return a join of the queries' table (``pw.left``)
    with the matched rows (``pw.right``, with their score in ``_pw_index_reply_score``):

    * ``collapse_rows=True``: one row per query, where each of the data table's columns
      is a list of the matched rows' values, best match first (empty lists when nothing
      matched);
    * ``collapse_rows=False``: one row per match, and one row with no data (None) for a
      query that matched nothing.

    >>> import sparkway as pw
    >>> from sparkway.stdlib.indexing import BruteForceKnn, BruteForceKnnMetricKind, DataIndex
    >>> docs = pw.debug.table_from_markdown('''
    ... name | x   | y
    ... a    | 0.0 | 1.0
    ... b    | 1.0 | 0.0
    ... c    | 5.0 | 5.0
    ... ''').with_columns(v=pw.make_tuple(pw.this.x, pw.this.y))
    >>> queries = pw.debug.table_from_markdown("q | x   | y\\nq | 0.0 | 0.9").with_columns(
    ...     v=pw.make_tuple(pw.this.x, pw.this.y))
    >>> inner = BruteForceKnn(docs.v, None, dimensions=2, reserved_space=10,
    ...     metric=BruteForceKnnMetricKind.L2SQ)
    >>> found = DataIndex(docs, inner).query_as_of_now(queries.v, number_of_matches=2)
    >>> pw.debug.compute_and_print(found.select(pw.left.q, pw.right.name), include_id=False)
    q | name
    q | ('a', 'b')
    """

    data_table: Table
    inner_index: InnerIndex

    def query(
        self, query_column: ColumnRef, *, number_of_matches: Expr | int = 3, collapse_rows: bool = True,
        metadata_filter: Expr | None = None,
    ) -> JoinResult:
        """The queries of ``query_column`` joined with their matches; a change of the data
        updates the answers it changes."""
        return self._joined(query_column, number_of_matches, metadata_filter, collapse_rows, as_of_now=False)

    def query_as_of_now(
        self, query_column: ColumnRef, number_of_matches: Expr | int = 3, collapse_rows: bool = True,
        metadata_filter: Expr | None = None,
    ) -> JoinResult:
        """The queries of ``query_column`` joined with their matches at the time each
        query arrives; later changes of the data do not change the answers."""
        return self._joined(query_column, number_of_matches, metadata_filter, collapse_rows, as_of_now=True)

    def _joined(
        self, query_column: ColumnRef, number_of_matches: Any, metadata_filter: Any, collapse_rows: bool,
        as_of_now: bool,
    ) -> JoinResult:
        inner, data, queries = self.inner_index, self.data_table, query_column.table
        carried = inner._carries_rows and _replies.same_rows(data, inner.data_column.table)
        rows = _replies.Rows(data, lists=collapse_rows) if carried else None
        answers = inner._answer(query_column, number_of_matches, metadata_filter, as_of_now, rows)
        if not collapse_rows:
            found = carried_rows(answers, data) if carried else matched_rows(answers, data, as_of_now)
            join = queries.asof_now_join_left if as_of_now else queries.join_left
            return join(found, queries.id == found[_QUERY_ID])
        lists = answers if carried else matched_lists(answers, data, as_of_now)
        join = queries.asof_now_join if as_of_now else queries.join
        result = join(lists, queries.id == lists.id, id=queries.id)
        return result.promise_universe_is_equal_to(queries)


def _list_types(data: Table) -> dict[str, dt.DType]:
    """The columns of a one-row-per-query answer: a list per data column, and the scores."""
    kinds = {name: dt.DType("list", (kind,)) for name, kind in data._node.columns.items()}
    kinds[_SCORE] = dt.DType("list", (dt.FLOAT,))
    return kinds


def carried_rows(replies: Table, data: Table) -> Table:
    """``matched_rows`` of replies that carry their rows (no join needed)."""
    flat = replies.select(_pw_m=replies[_INDEX_REPLY]).flatten("_pw_m", origin_id=_QUERY_ID)
    match = flat._pw_m
    columns = {name: match[2][i] for i, name in enumerate(data.column_names())}
    return flat.select(**{_QUERY_ID: flat[_QUERY_ID], _SCORE: match[1]}, **columns)


def matched_rows(replies: Table, data: Table, as_of_now: bool) -> Table:
    """One row per match of the replies: the query's id (``_pw_query_id``), the score
    (``_pw_index_reply_score``) and the columns of the matched row of ``data`` (as of the
    query's time, with ``as_of_now``)."""
    matches = _matches(replies)
    matched = (matches.asof_now_join if as_of_now else matches.join)(data, matches[_MATCHED_ID] == data.id)
    return matched.select(left[_QUERY_ID], left[_SCORE], *right)


def matched_lists(replies: Table, data: Table, as_of_now: bool) -> Table:
    """One row per query (the replies' ids): each column of ``data`` as the list of the
    matched rows' values, best first, and their scores in ``_pw_index_reply_score``."""
    matches = _matches(replies)
    matched = (matches.asof_now_join if as_of_now else matches.join)(data, matches[_MATCHED_ID] == data.id)
    rows = matched.select(left[_QUERY_ID], left[_RANK], left[_SCORE], *right)
    kinds = _list_types(data)
    lists = rows.groupby(id=rows[_QUERY_ID], sort_by=rows[_RANK]).reduce(
        **{name: reducers.tuple(rows[name]) for name in kinds}
    )
    no_match = replies.filter(apply_with_type(len, int, replies[_INDEX_REPLY]) == 0)
    empty = no_match.select(**{name: apply_with_type(_no_values, kind, no_match.id) for name, kind in kinds.items()})
    return Table.concat(lists.update_types(**kinds), empty).with_universe_of(replies)
