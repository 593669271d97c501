"""``HybridIndex``: several indexes' answers fused by reciprocal rank fusion (RRF).

Each index answers the query; a row it ranks ``r``-th (from 1) gets ``1 / (k + r)``, and
a row's score is the sum over the indexes that found it. The best rows by that score
(ties by id) are the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sparkway.api.functions import apply_with_type
from sparkway.api.table import Table
from sparkway.core.expression import ColumnRef, Expr
from sparkway.stdlib.indexing import _replies
from sparkway.stdlib.indexing.colnames import _INDEX_REPLY
from sparkway.stdlib.indexing.data_index import InnerIndex
from sparkway.stdlib.indexing.retrievers import InnerIndexFactory


def reciprocal_ranks(k: float) -> Callable[[Any], list[tuple[Any, ...]]]:
    """A reply's matches scored ``1 / (k + rank)``, ranks from 1 (carried rows stay).

    >>> reciprocal_ranks(2)([(7, 0.9), (3, 0.5)])
    [(7, 0.3333333333333333), (3, 0.25)]
    """

    def scored(reply: Any) -> list[tuple[Any, ...]]:
        return [(key, 1 / (k + rank), *row) for rank, (key, _, *row) in enumerate(reply or (), start=1)]

    return scored


def fused_first(matches: Sequence[tuple[Any, ...]] | None, k: int) -> list[tuple[Any, ...]]:
    """The ``k`` ids of highest summed score among ``(id, score[, row])`` matches (ties
    by id), as a reply.

    >>> fused_first([(7, 0.5), (3, 0.25), (3, 0.5)], 2)
    [(3, 0.75), (7, 0.5)]
    """
    totals: dict[int, float] = {}
    rows: dict[int, list[Any]] = {}
    for key, score, *row in matches or ():
        totals[key] = totals.get(key, 0.0) + score
        rows.setdefault(key, row)
    best = sorted(totals, key=lambda key: (-totals[key], key))[:k]
    return [(key, totals[key], *rows[key]) for key in best]


class HybridIndex(InnerIndex):
    """An index made of ``retrievers`` (two or more indexes over the same data), whose
    answers are fused by reciprocal rank fusion with constant ``k``.

    >>> import sparkway as pw
    >>> from sparkway.stdlib.indexing import HybridIndex, TantivyBM25
    >>> docs = pw.debug.table_from_markdown("text\\nab").select(pw.this.text)
    >>> HybridIndex([TantivyBM25(docs.text, None), TantivyBM25(docs.text, None)], k=10).k
    10
    """

    def __init__(self, retrievers: list[InnerIndex], k: float = 60) -> None:
        if len(retrievers) < 2:
            raise ValueError("HybridIndex requires at least two indices to be provided during initialization")
        object.__setattr__(self, "retrievers", list(retrievers))
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "data_column", retrievers[0].data_column)
        object.__setattr__(self, "metadata_column", retrievers[0].metadata_column)

    @property
    def _carries_rows(self) -> bool:  # type: ignore[override]
        return all(r._carries_rows for r in self.retrievers)

    def _answer(
        self, query_column: ColumnRef, number_of_matches: Any, metadata_filter: Any, as_of_now: bool,
        rows: _replies.Rows | None,
    ) -> Table:
        matches = None if rows is None else _replies.Rows(rows.table)  # the retrievers' replies carry rows
        ranked_tables = []
        for retriever in self.retrievers:
            replies = retriever._answer(query_column, number_of_matches, metadata_filter, as_of_now, matches)
            ranked = replies.select(
                _pw_qid=replies.id, _pw_k=0,
                _pw_e=apply_with_type(reciprocal_ranks(self.k), _replies.reply_type(matches), replies[_INDEX_REPLY]),
            )
            ranked_tables.append(ranked.flatten("_pw_e"))
        queries = query_column.table.select(_pw_k=number_of_matches)
        return _replies.best_replies(Table.concat_reindex(*ranked_tables), queries, rows, pick=fused_first)

    def query(
        self, query_column: ColumnRef, *, number_of_matches: Expr | int = 3, metadata_filter: Expr | None = None,
    ) -> Table:
        """The fused answers of the retrievers' ``query``, updated as the data changes."""
        return self._answer(query_column, number_of_matches, metadata_filter, False, None)

    def query_as_of_now(
        self, query_column: ColumnRef, *, number_of_matches: Expr | int = 3, metadata_filter: Expr | None = None,
    ) -> Table:
        """The fused answers of the retrievers' ``query_as_of_now``, each fixed at its time."""
        return self._answer(query_column, number_of_matches, metadata_filter, True, None)


class HybridIndexFactory(InnerIndexFactory):
    """Builds a ``HybridIndex`` of the indexes the ``retriever_factories`` build.

    >>> from sparkway.stdlib.indexing import HybridIndexFactory, TantivyBM25Factory
    >>> HybridIndexFactory([TantivyBM25Factory(), TantivyBM25Factory()]).k
    60
    """

    def __init__(self, retriever_factories: list[InnerIndexFactory], k: float = 60) -> None:
        if len(retriever_factories) < 2:
            raise ValueError(
                "HybridIndexFactory requires at least two retriever factories to be provided during initialization"
            )
        self.retriever_factories = list(retriever_factories)
        self.k = k

    def build_inner_index(self, data_column: ColumnRef, metadata_column: Expr | None = None) -> InnerIndex:
        return HybridIndex([f.build_inner_index(data_column, metadata_column) for f in self.retriever_factories], self.k)
