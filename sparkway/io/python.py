"""``pw.io.python``: input produced by Python code (a ``ConnectorSubject``)."""

from __future__ import annotations

from typing import Any

from sparkway.api import graph
from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.connectors.python import ConnectorSubject, PythonSource
from sparkway.errors import PlanTypeError, traced
from sparkway.io._common import persistent_name

__all__ = ["ConnectorSubject", "read"]


@traced
def read(
    subject: ConnectorSubject,
    *,
    schema: type[Schema],
    autocommit_duration_ms: int | None = 1500,
    name: str | None = None,
    persistent_id: str | None = None,
    **ignored: Any,
) -> Table:
    """The rows ``subject`` emits; its ``run()`` starts when the computation does.

    Rows between two ``subject.commit()`` calls are one transaction; rows not committed
    explicitly are committed at most ``autocommit_duration_ms`` after the first of them
    (None: only explicit commits).  With persistence, a committed transaction is stored
    before ``commit()`` returns, so a restart processes it even if the subject cannot
    produce it again; ``name=`` (or ``persistent_id=``) names the source.

    >>> import sparkway as pw
    >>> class Greetings(pw.io.python.ConnectorSubject):
    ...     def run(self):
    ...         self.next(text="hello")
    >>> class S(pw.Schema):
    ...     text: str
    >>> pw.io.python.read(Greetings(), schema=S).column_names()
    ['text']
    """
    if not isinstance(subject, ConnectorSubject):
        raise PlanTypeError(f"pw.io.python.read needs a pw.io.python.ConnectorSubject, got {type(subject).__name__}")
    source = PythonSource(
        subject, schema.columns(),
        autocommit_duration_ms=autocommit_duration_ms, name=persistent_name(name, persistent_id),
    )
    return graph.table_from_source(source)
