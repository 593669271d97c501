"""``pw.indexing`` (``pw.stdlib.indexing``): indexes that answer queries with matching rows.

Nearest neighbours of vectors (``BruteForceKnn``, ``USearchKnn``: exact search;
``LshKnn``: locality-sensitive hashing), full-text search by BM25 (``TantivyBM25``),
``HybridIndex`` (reciprocal rank fusion of several), and ``DataIndex``, which joins an
index's matches with the rows of a data table. All are built from table operations, so
their answers are incremental and persistent as any table's.
"""

from sparkway.stdlib.indexing.bm25 import TantivyBM25, TantivyBM25Factory
from sparkway.stdlib.indexing.data_index import DataIndex, InnerIndex
from sparkway.stdlib.indexing.full_text_document_index import default_full_text_document_index
from sparkway.stdlib.indexing.hybrid_index import HybridIndex, HybridIndexFactory
from sparkway.stdlib.indexing.metric_kinds import BruteForceKnnMetricKind, USearchMetricKind
from sparkway.stdlib.indexing.nearest_neighbors import (
    BruteForceKnn, BruteForceKnnFactory, DefaultKnnFactory, LshKnn, LshKnnFactory, USearchKnn, UsearchKnnFactory,
)
from sparkway.stdlib.indexing.retrievers import AbstractRetrieverFactory, InnerIndexFactory
from sparkway.stdlib.indexing.vector_document_index import (
    default_brute_force_knn_document_index, default_lsh_knn_document_index, default_usearch_knn_document_index,
    default_vector_document_index,
)

__all__ = [
    "AbstractRetrieverFactory", "BruteForceKnn", "BruteForceKnnFactory", "BruteForceKnnMetricKind", "DataIndex",
    "DefaultKnnFactory", "HybridIndex", "HybridIndexFactory", "InnerIndex", "InnerIndexFactory", "LshKnn",
    "LshKnnFactory", "TantivyBM25", "TantivyBM25Factory", "USearchKnn", "USearchMetricKind", "UsearchKnnFactory",
    "default_brute_force_knn_document_index", "default_full_text_document_index",
    "default_lsh_knn_document_index", "default_usearch_knn_document_index", "default_vector_document_index",
]
