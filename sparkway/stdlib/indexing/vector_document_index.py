"""Ready-made document indexes of vectors (development defaults; for a fixed
configuration, build a ``DataIndex`` around a configured index)."""

from __future__ import annotations

from sparkway.api.table import Table
from sparkway.api.udfs import UDF
from sparkway.core.expression import ColumnRef, Expr
from sparkway.stdlib.indexing.data_index import DataIndex
from sparkway.stdlib.indexing.metric_kinds import BruteForceKnnMetricKind, USearchMetricKind
from sparkway.stdlib.indexing.nearest_neighbors import BruteForceKnn, LshKnn, USearchKnn


def default_vector_document_index(
    data_column: ColumnRef, data_table: Table, *, dimensions: int, embedder: UDF | None = None,
    metadata_column: Expr | None = None,
) -> DataIndex:
    """A ``DataIndex`` over vectors (or texts, with an ``embedder``): an ``LshKnn`` index.

    >>> import sparkway as pw
    >>> from sparkway.stdlib.indexing import default_vector_document_index
    >>> docs = pw.debug.table_from_markdown("v\\n1").select(v=pw.make_tuple(1.0, 2.0))
    >>> type(default_vector_document_index(docs.v, docs, dimensions=2).inner_index).__name__
    'LshKnn'
    """
    return default_lsh_knn_document_index(
        data_column, data_table, dimensions=dimensions, embedder=embedder, metadata_column=metadata_column
    )


def default_lsh_knn_document_index(
    data_column: ColumnRef, data_table: Table, *, dimensions: int, embedder: UDF | None = None,
    metadata_column: Expr | None = None,
) -> DataIndex:
    """A ``DataIndex`` with an ``LshKnn`` index of default settings."""
    inner = LshKnn(data_column, metadata_column, dimensions=dimensions, embedder=embedder)
    return DataIndex(data_table, inner)


def default_usearch_knn_document_index(
    data_column: ColumnRef, data_table: Table, dimensions: int, *, embedder: UDF | None = None,
    metadata_column: Expr | None = None,
) -> DataIndex:
    """A ``DataIndex`` with a ``USearchKnn`` index (cosine distance)."""
    inner = USearchKnn(
        data_column, metadata_column, dimensions=dimensions, reserved_space=1000, metric=USearchMetricKind.COS,
        embedder=embedder,
    )
    return DataIndex(data_table, inner)


def default_brute_force_knn_document_index(
    data_column: ColumnRef, data_table: Table, dimensions: int, *, embedder: UDF | None = None,
    metadata_column: Expr | None = None,
) -> DataIndex:
    """A ``DataIndex`` with a ``BruteForceKnn`` index (cosine distance)."""
    inner = BruteForceKnn(
        data_column, metadata_column, dimensions=dimensions, reserved_space=1000,
        metric=BruteForceKnnMetricKind.COS, embedder=embedder,
    )
    return DataIndex(data_table, inner)
