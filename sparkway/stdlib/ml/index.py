"""``KNNIndex``: approximate k nearest neighbours by locality-sensitive hashing.

The index hashes the data's embeddings into buckets (``sparkway.stdlib.indexing.lsh``,
with Pathway's random projections); a query's neighbours are the nearest of the rows
sharing a bucket with it, so it may find fewer than ``k`` (none for a query far from
every row: make ``bucket_length`` larger then), or miss a nearer row (make ``n_or``
larger).
"""

from __future__ import annotations

from typing import Any

from sparkway.api.functions import apply_with_type, make_tuple
from sparkway.api.table import Table
from sparkway.api.thisclass import left, right
from sparkway.core.expression import ColumnRef, Expr
from sparkway.stdlib.indexing import _replies
from sparkway.stdlib.indexing.colnames import _QUERY_ID, _SCORE
from sparkway.stdlib.indexing.data_index import carried_rows
from sparkway.stdlib.indexing.nearest_neighbors import DistanceTypes, lsh_replies


def _negated(scores: list[float]) -> list[float]:
    return [-s for s in scores]


class KNNIndex:
    """An index of the rows of ``data`` by their embeddings ``data_embedding`` (vectors of
    ``n_dimensions`` numbers), searched by LSH: ``n_or`` bands of ``n_and`` random
    projections cut into cells of ``bucket_length``; ``distance_type`` is
    ``"euclidean"`` (distances are squared) or ``"cosine"``. ``metadata`` (JSON) is what
    the queries' JMESPath ``metadata_filter`` reads.

    >>> import sparkway as pw
    >>> from sparkway.stdlib.ml.index import KNNIndex
    >>> data = pw.debug.table_from_markdown('''
    ... x | y
    ... 0 | 0
    ... 2 | 2
    ... 5 | 5
    ... ''').select(coords=pw.make_tuple(pw.this.x, pw.this.y))
    >>> queries = pw.debug.table_from_markdown("x | y\\n1 | 0").select(coords=pw.make_tuple(pw.this.x, pw.this.y))
    >>> index = KNNIndex(data.coords, data, n_dimensions=2)
    >>> nearest = index.get_nearest_items(queries.coords, k=2, with_distances=True)
    >>> pw.debug.compute_and_print(nearest, include_id=False)
    coords           | dist
    ((0, 0), (2, 2)) | (1.0, 5.0)
    """

    def __init__(
        self, data_embedding: Expr, data: Table, n_dimensions: int, n_or: int = 20, n_and: int = 10,
        bucket_length: float = 10.0, distance_type: DistanceTypes = "euclidean", metadata: Expr | None = None,
    ) -> None:
        self.data = data
        packed = make_tuple(*(data[c] for c in data.column_names()))
        self._rows = data.select(_pw_d=data_embedding, _pw_m=metadata, _pw_p=packed).remove_errors()
        self._settings = (n_dimensions, n_and, n_or, bucket_length, distance_type)
        if distance_type not in ("euclidean", "cosine"):
            raise ValueError(
                f"Not supported `type` {distance_type} in knn_lsh_classifier_train. "
                "The allowed values are 'euclidean' and 'cosine'."
            )

    def get_nearest_items(
        self, query_embedding: ColumnRef, k: Expr | int = 3, collapse_rows: bool = True,
        with_distances: bool = False, metadata_filter: Expr | None = None,
    ) -> Table:
        """The ``k`` nearest rows of each query (``k`` an int or a column of the queries),
        updated when the data changes. With ``collapse_rows``, one row per query (its ids)
        where each column of the data is a tuple of the neighbours' values, nearest first
        (and ``dist``, their distances, with ``with_distances``); else one row per
        neighbour with the query's id in ``query_id`` (a query without neighbours: one row
        of None)."""
        return self._nearest(query_embedding, k, collapse_rows, with_distances, metadata_filter, as_of_now=False)

    def get_nearest_items_asof_now(
        self, query_embedding: ColumnRef, k: Expr | int = 3, collapse_rows: bool = True,
        with_distances: bool = False, metadata_filter: Expr | None = None,
    ) -> Table:
        """As ``get_nearest_items``, but each query is answered once, with the data at its
        time; later changes of the data do not change the answer."""
        return self._nearest(query_embedding, k, collapse_rows, with_distances, metadata_filter, as_of_now=True)

    def _nearest(
        self, query: ColumnRef, k: Any, collapse_rows: bool, with_distances: bool, metadata_filter: Any,
        as_of_now: bool,
    ) -> Table:
        queries = query.table
        asked = _replies.query_rows(query, k, metadata_filter)
        rows = _replies.Rows(self.data, lists=collapse_rows)
        replies = lsh_replies(asked, self._rows, *self._settings, as_of_now=as_of_now, rows=rows)
        names = self.data.column_names()
        if collapse_rows:
            lists = replies
            distances = {"dist": apply_with_type(_negated, list[float], lists[_SCORE])} if with_distances else {}
            return lists.select(*(lists[c] for c in names), **distances).with_universe_of(queries)
        rows = carried_rows(replies, self.data)
        join = queries.asof_now_join_left if as_of_now else queries.join_left
        joined = join(rows, queries.id == rows[_QUERY_ID])
        distances = {"dist": -right[_SCORE]} if with_distances else {}
        return joined.select(*(right[c] for c in names), **distances, query_id=left.id)
