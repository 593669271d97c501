"""A ready-made full-text document index (a development default)."""

from __future__ import annotations

from sparkway.api.table import Table
from sparkway.core.expression import ColumnRef, Expr
from sparkway.stdlib.indexing.bm25 import TantivyBM25
from sparkway.stdlib.indexing.data_index import DataIndex


def default_full_text_document_index(
    data_column: ColumnRef, data_table: Table, *, metadata_column: Expr | None = None,
) -> DataIndex:
    """A ``DataIndex`` with a BM25 index of the texts of ``data_column``.

    >>> import sparkway as pw
    >>> from sparkway.stdlib.indexing import default_full_text_document_index
    >>> docs = pw.debug.table_from_markdown("text\\nab")
    >>> type(default_full_text_document_index(docs.text, docs).inner_index).__name__
    'TantivyBM25'
    """
    return DataIndex(data_table, TantivyBM25(data_column, metadata_column))
