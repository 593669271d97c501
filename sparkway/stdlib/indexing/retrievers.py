"""Factories of indexes: they build an index over a data column, so that a program can
choose the kind of index apart from the data it indexes."""

from __future__ import annotations

from abc import abstractmethod

from sparkway.api.table import Table
from sparkway.core.expression import ColumnRef, Expr
from sparkway.stdlib.indexing.data_index import DataIndex, InnerIndex


class AbstractRetrieverFactory:
    """Builds a ``DataIndex`` over a column of a data table."""

    @abstractmethod
    def build_index(
        self, data_column: ColumnRef, data_table: Table, metadata_column: Expr | None = None,
    ) -> DataIndex:
        """The index of ``data_column``, whose matches come with ``data_table``'s rows."""


class InnerIndexFactory(AbstractRetrieverFactory):
    """Builds an ``InnerIndex``, and a ``DataIndex`` around it.

    >>> import sparkway as pw
    >>> from sparkway.stdlib.indexing import BruteForceKnnFactory
    >>> docs = pw.debug.table_from_markdown("v\\n1").select(v=pw.make_tuple(1.0, 2.0))
    >>> type(BruteForceKnnFactory(dimensions=2).build_index(docs.v, docs)).__name__
    'DataIndex'
    """

    @abstractmethod
    def build_inner_index(self, data_column: ColumnRef, metadata_column: Expr | None = None) -> InnerIndex:
        """The index of ``data_column`` (with optional JSON metadata)."""

    def build_index(
        self, data_column: ColumnRef, data_table: Table, metadata_column: Expr | None = None,
    ) -> DataIndex:
        return DataIndex(data_table, self.build_inner_index(data_column, metadata_column))
