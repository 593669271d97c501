"""``pw.io.null``: computes a table and discards its changes."""

from __future__ import annotations

from typing import Any

from sparkway.api.table import Table
from sparkway.io._files import write_null
from sparkway.errors import traced


@traced
def write(table: Table, **kwargs: Any) -> None:
    """Computes ``table`` in ``pw.run`` without writing it anywhere.

    >>> import sparkway as pw
    >>> pw.io.null.write(pw.debug.table_from_markdown("a\\n1"))
    """
    write_null(table, **kwargs)
