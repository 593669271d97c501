"""Nearest-neighbour indexes of vectors: ``BruteForceKnn``, ``USearchKnn``, ``LshKnn``, and
the factories that build them.

``BruteForceKnn`` and ``USearchKnn`` search exactly: Pathway's USearch index is
approximate (HNSW) and its brute-force index exact; here both compute every distance,
so ``USearchKnn`` gives the exact neighbours, which an HNSW search finds on small data
too. ``LshKnn`` hashes vectors into buckets (``sparkway.stdlib.indexing.lsh``) with
Pathway's random projections and searches the rows sharing a bucket with the query, so
it finds what Pathway's finds, misses included.

Answers as of now (``query_as_of_now``) of the exact indexes scan the data gathered in
one row; answers kept up to date (``query``, which Pathway offers for ``LshKnn`` only)
pair each query with the data rows and keep the best per query (see
``sparkway.stdlib.indexing._replies`` for the costs).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from sparkway.api.table import Table
from sparkway.api.udfs import UDF
from sparkway.core.expression import ColumnRef, Expr
from sparkway.stdlib.indexing import _replies
from sparkway.stdlib.indexing.data_index import InnerIndex
from sparkway.stdlib.indexing.lsh import cosine_bucketer, euclidean_bucketer
from sparkway.stdlib.indexing.metadata_filters import is_filter_error, passes
from sparkway.stdlib.indexing.metric_kinds import BruteForceKnnMetricKind, USearchMetricKind, check_supported, distances
from sparkway.stdlib.indexing.retrievers import InnerIndexFactory

DistanceTypes = Literal["euclidean", "cosine"]
_LSH_METRICS = {"euclidean": "l2sq", "cosine": "cos"}


def embedded(column: ColumnRef, embedder: UDF | None) -> ColumnRef:
    """``column``, or the embeddings of its values when an ``embedder`` is given."""
    if embedder is None:
        return column
    return column.table.with_columns(_pw_embedded_column=embedder(column))._pw_embedded_column


def _vector(value: Any) -> np.ndarray:
    return np.asarray(value, dtype=float).ravel()


def exact_search(metric: str) -> Any:
    """A ``scan_replies`` search: the ``k`` nearest of all entries passing the filter."""

    def search(query: Any, k: int, expression: str | None, entries: Sequence[tuple[int, Any, Any]] | None) -> list:
        if not entries or k <= 0:
            return []
        if expression is not None:
            entries = [e for e in entries if passes(expression, e[2])]
            if not entries:
                return []
        ids = np.array([e[0] for e in entries], dtype=np.int64)
        found = distances(metric, _vector(query), np.stack([_vector(e[1]) for e in entries]))
        nearest = np.lexsort((ids, found))[:k]
        return [(int(ids[i]), -float(found[i])) for i in nearest]

    return search


def exact_candidate(metric: str, invalid_filter_matches_nothing: bool = False) -> Any:
    """A ``pairwise_replies`` candidate: the pair's distance, unless the row's metadata
    fails the filter (an invalid filter fails the query, or with
    ``invalid_filter_matches_nothing`` matches no row, as Pathway's LSH index does)."""

    def candidate(query: Any, value: Any, metadata: Any, expression: str | None, key: int, k: int) -> Any:
        if k <= 0:
            return None
        try:
            if not passes(expression, metadata):
                return None
        except Exception as error:
            if invalid_filter_matches_nothing and is_filter_error(error):
                return None
            raise
        return float(distances(metric, _vector(query), _vector(value)[None, :])[0]), key

    return candidate


def _check_vectors(data: Any, query: Any, number_of_matches: Any, metadata: Any, metadata_filter: Any) -> None:
    _replies.check_types(_replies.index_checks(
        data, query, number_of_matches, metadata, metadata_filter, "Array", _replies.is_vector
    ))


@dataclass(frozen=True, kw_only=True, eq=False)
class _ExactKnn(InnerIndex):
    """What ``BruteForceKnn`` and ``USearchKnn`` share: an exact search."""

    embedder: UDF | None = None
    _data_column: ColumnRef = field(init=False, repr=False)
    _carries_rows: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_supported(self.metric)  # type: ignore[attr-defined]
        object.__setattr__(self, "_data_column", embedded(self.data_column, self.embedder))

    def _answer(
        self, query_column: ColumnRef, number_of_matches: Any, metadata_filter: Any, as_of_now: bool,
        rows: _replies.Rows | None,
    ) -> Table:
        queries, data = _vector_rows(self, query_column, number_of_matches, metadata_filter, rows)
        metric = self.metric.value  # type: ignore[attr-defined]
        if as_of_now:
            return _replies.scan_replies(queries, data, exact_search(metric), rows)
        return _replies.pairwise_replies(
            queries, data, exact_candidate(metric), buckets=None, as_of_now=False, rows=rows
        )

    def query(
        self, query_column: ColumnRef, number_of_matches: Expr | int = 3, metadata_filter: Expr | None = None,
    ) -> Table:
        """The ``number_of_matches`` nearest rows of each query, kept up to date as the data
        changes (beyond Pathway, whose index answers as of now only): every change of the
        data recomputes the answers of all queries."""
        return self._answer(query_column, number_of_matches, metadata_filter, False, None)

    def query_as_of_now(
        self, query_column: ColumnRef, number_of_matches: Expr | int = 3, metadata_filter: Expr | None = None,
    ) -> Table:
        """The ``number_of_matches`` nearest rows of each query among the rows at its time."""
        return self._answer(query_column, number_of_matches, metadata_filter, True, None)


@dataclass(frozen=True, kw_only=True, eq=False)
class USearchKnn(_ExactKnn):
    """Pathway's USearch (HNSW) index of vectors; sparkway searches exactly (see the
    module's docstring). ``metric`` is a ``USearchMetricKind`` (``COS``, ``L2SQ``, ``IP``);
    ``dimensions``, ``reserved_space``, ``connectivity`` and the expansions are
    USearch's settings, accepted and not needed here. With an ``embedder`` (a UDF), data
    and queries are embedded first.

    >>> import sparkway as pw
    >>> from sparkway.stdlib.indexing import USearchKnn, USearchMetricKind
    >>> docs = pw.debug.table_from_markdown("v\\n1").select(v=pw.make_tuple(1.0, 2.0))
    >>> USearchKnn(docs.v, None, dimensions=2, reserved_space=10, metric=USearchMetricKind.COS).dimensions
    2
    """

    dimensions: int
    reserved_space: int
    metric: USearchMetricKind
    connectivity: int = 0
    expansion_add: int = 0
    expansion_search: int = 0


@dataclass(frozen=True, kw_only=True, eq=False)
class BruteForceKnn(_ExactKnn):
    """An exact index of vectors: every distance is computed. ``metric`` is a
    ``BruteForceKnnMetricKind`` (``COS`` or ``L2SQ``); ``dimensions``, ``reserved_space``
    and ``auxiliary_space`` are Pathway's memory settings, accepted and not needed here.

    >>> import sparkway as pw
    >>> from sparkway.stdlib.indexing import BruteForceKnn, BruteForceKnnMetricKind
    >>> docs = pw.debug.table_from_markdown("v\\n1").select(v=pw.make_tuple(1.0, 2.0))
    >>> BruteForceKnn(docs.v, None, dimensions=2, reserved_space=10, metric=BruteForceKnnMetricKind.L2SQ).metric
    <BruteForceKnnMetricKind.L2SQ: 'l2sq'>
    """

    dimensions: int
    reserved_space: int
    auxiliary_space: int = 1024 * 128
    metric: BruteForceKnnMetricKind


@dataclass(frozen=True, kw_only=True, eq=False)
class LshKnn(InnerIndex):
    """Nearest neighbours through locality-sensitive hashing, as Pathway's: rows are
    hashed into ``n_or`` buckets of ``n_and`` projections each, cut into cells of
    ``bucket_length``, and a query's neighbours are the nearest of the rows sharing one
    of its buckets, by ``distance_type`` (``"euclidean"``: squared distance, or
    ``"cosine"``). It may find fewer than ``k`` rows, e.g. none for a query far from all.

    >>> import sparkway as pw
    >>> from sparkway.stdlib.indexing import DataIndex, LshKnn
    >>> points = pw.debug.table_from_markdown('''
    ... x  | y
    ... 0  | 0
    ... 1  | 1
    ... 20 | 20
    ... ''').select(v=pw.make_tuple(pw.this.x, pw.this.y))
    >>> queries = pw.debug.table_from_markdown("x | y\\n2 | 2").select(v=pw.make_tuple(pw.this.x, pw.this.y))
    >>> index = DataIndex(points, LshKnn(points.v, None, dimensions=2, n_and=5))
    >>> found = index.query(queries.v, number_of_matches=1)
    >>> pw.debug.compute_and_print(found.select(nearest=pw.right.v), include_id=False)
    nearest
    ((1, 1),)
    """

    _: dataclasses.KW_ONLY
    dimensions: int
    n_or: int = 20
    n_and: int = 10
    bucket_length: float = 10.0
    distance_type: DistanceTypes = "euclidean"
    embedder: UDF | None = None
    _data_column: ColumnRef = field(init=False, repr=False)
    _carries_rows: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.distance_type not in _LSH_METRICS:
            raise ValueError(
                f"Not supported `type` {self.distance_type} in knn_lsh_classifier_train. "
                "The allowed values are 'euclidean' and 'cosine'."
            )
        object.__setattr__(self, "_data_column", embedded(self.data_column, self.embedder))

    def _answer(
        self, query_column: ColumnRef, number_of_matches: Any, metadata_filter: Any, as_of_now: bool,
        rows: _replies.Rows | None,
    ) -> Table:
        queries, data = _vector_rows(self, query_column, number_of_matches, metadata_filter, rows)
        return lsh_replies(
            queries, data, self.dimensions, self.n_and, self.n_or, self.bucket_length, self.distance_type, as_of_now,
            rows,
        )

    def query(
        self, query_column: ColumnRef, number_of_matches: Expr | int = 3, metadata_filter: Expr | None = None,
    ) -> Table:
        """The nearest rows of each query among its buckets, updated as the data changes."""
        return self._answer(query_column, number_of_matches, metadata_filter, False, None)

    def query_as_of_now(
        self, query_column: ColumnRef, number_of_matches: Expr | int = 3, metadata_filter: Expr | None = None,
    ) -> Table:
        """The nearest rows of each query among its buckets, at the time it arrives."""
        return self._answer(query_column, number_of_matches, metadata_filter, True, None)


def _vector_rows(
    index: Any, query_column: ColumnRef, number_of_matches: Any, metadata_filter: Any, rows: _replies.Rows | None,
) -> tuple[Table, Table]:
    """The query rows and the data rows a vector index (exact or LSH) answers from, the
    vectors checked and embedded."""
    query = embedded(query_column, index.embedder)
    _check_vectors(index._data_column, query, number_of_matches, index.metadata_column, metadata_filter)
    queries = _replies.query_rows(query, number_of_matches, metadata_filter).with_universe_of(query_column.table)
    return queries, _replies.data_rows(index._data_column, index.metadata_column, rows)


def lsh_replies(
    queries: Table, data: Table, d: int, M: int, L: int, A: float, distance_type: str, as_of_now: bool,
    rows: _replies.Rows | None = None,
) -> Table:
    """``pairwise_replies`` over the rows sharing an LSH bucket with the query (an invalid
    metadata filter matches no row, as in Pathway's LSH index)."""
    if distance_type == "euclidean":
        buckets = euclidean_bucketer(d, M, L, A)
    elif distance_type == "cosine":
        buckets = cosine_bucketer(d, M, L)
    else:
        raise ValueError(
            f"Not supported `type` {distance_type} in knn_lsh_classifier_train. "
            "The allowed values are 'euclidean' and 'cosine'."
        )
    candidate = exact_candidate(_LSH_METRICS[distance_type], invalid_filter_matches_nothing=True)
    return _replies.pairwise_replies(queries, data, candidate, buckets=buckets, as_of_now=as_of_now, rows=rows)


def embedding_dimensions(embedder: Any) -> int:
    """The length of the embedder's vectors: its ``get_embedding_dimension()``, or the
    length of its embedding of ``"."``."""
    if hasattr(embedder, "get_embedding_dimension"):
        return int(embedder.get_embedding_dimension())
    if not isinstance(embedder, UDF):
        raise TypeError("Embedder is not a valid `pw.UDF`.")
    result = embedder.__wrapped__(".")
    if inspect.isawaitable(result):
        result = asyncio.run(result)
    return len(result)


@dataclass(kw_only=True)
class KnnIndexFactory(InnerIndexFactory):
    """A factory of nearest-neighbour indexes: ``dimensions``, or an ``embedder`` from
    which they are found (by embedding ``"."``)."""

    dimensions: int | None = None
    embedder: UDF | None = None

    def __post_init__(self) -> None:
        if self.dimensions is None and self.embedder is None:
            raise ValueError("Either `dimensions` or `embedder` must be provided to index factory.")
        if self.dimensions is None:
            self.dimensions = embedding_dimensions(self.embedder)


@dataclass(kw_only=True)
class UsearchKnnFactory(KnnIndexFactory):
    """Builds ``USearchKnn`` indexes (cosine distance by default).

    >>> from sparkway.stdlib.indexing import UsearchKnnFactory
    >>> UsearchKnnFactory(dimensions=3).metric
    <USearchMetricKind.COS: 'cos'>
    """

    reserved_space: int = 400
    metric: USearchMetricKind = USearchMetricKind.COS
    connectivity: int = 0
    expansion_add: int = 0
    expansion_search: int = 0

    def build_inner_index(self, data_column: ColumnRef, metadata_column: Expr | None = None) -> InnerIndex:
        return USearchKnn(
            data_column, metadata_column, dimensions=self.dimensions, reserved_space=self.reserved_space,
            metric=self.metric, connectivity=self.connectivity, expansion_add=self.expansion_add,
            expansion_search=self.expansion_search, embedder=self.embedder,
        )


@dataclass(kw_only=True)
class BruteForceKnnFactory(KnnIndexFactory):
    """Builds ``BruteForceKnn`` indexes (cosine distance by default).

    >>> from sparkway.stdlib.indexing import BruteForceKnnFactory
    >>> BruteForceKnnFactory(dimensions=3).metric
    <BruteForceKnnMetricKind.COS: 'cos'>
    """

    reserved_space: int = 400
    auxiliary_space: int = 1024 * 128
    metric: BruteForceKnnMetricKind = BruteForceKnnMetricKind.COS

    def build_inner_index(self, data_column: ColumnRef, metadata_column: Expr | None = None) -> InnerIndex:
        return BruteForceKnn(
            data_column, metadata_column, dimensions=self.dimensions, reserved_space=self.reserved_space,
            auxiliary_space=self.auxiliary_space, metric=self.metric, embedder=self.embedder,
        )


@dataclass(kw_only=True)
class LshKnnFactory(KnnIndexFactory):
    """Builds ``LshKnn`` indexes.

    >>> from sparkway.stdlib.indexing import LshKnnFactory
    >>> LshKnnFactory(dimensions=3).n_or
    20
    """

    n_or: int = 20
    n_and: int = 10
    bucket_length: float = 10.0
    distance_type: DistanceTypes = "euclidean"

    def build_inner_index(self, data_column: ColumnRef, metadata_column: Expr | None = None) -> InnerIndex:
        return LshKnn(
            data_column, metadata_column, dimensions=self.dimensions, n_or=self.n_or, n_and=self.n_and,
            bucket_length=self.bucket_length, distance_type=self.distance_type, embedder=self.embedder,
        )


@dataclass(kw_only=True)
class DefaultKnnFactory(BruteForceKnnFactory):
    """The default factory of nearest-neighbour indexes: ``BruteForceKnn``."""
