"""``pw.utils`` (``pw.stdlib.utils``): helpers over columns and tables."""

from sparkway.stdlib.utils import col, filtering, pandas_transformer

__all__ = ["col", "filtering", "pandas_transformer"]
