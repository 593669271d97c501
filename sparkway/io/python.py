"""``pw.io.python``: input produced by Python code (a ``ConnectorSubject``)."""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from sparkway.api import graph
from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.connectors.python import ConnectorSubject, PythonSource
from sparkway.errors import PlanTypeError, traced
from sparkway.io._common import persistent_name
from sparkway.io._subscribe import subscribe

__all__ = ["AsyncConnectorObserver", "ConnectorObserver", "ConnectorSubject", "read", "write"]


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


class ConnectorObserver(abc.ABC):
    """Receives a table's changes (``pw.io.python.write``): ``on_change`` for each
    changed row, ``on_time_end`` after each time, ``on_end`` once the input is over."""

    @abc.abstractmethod
    def on_change(self, key: Any, row: dict[str, Any], time: int, is_addition: bool) -> None:
        """One change: the row's id, its values, the time, insertion or removal."""

    def on_time_end(self, time: int) -> None:
        """Every change of ``time`` has been passed."""

    def on_end(self) -> None:
        """The input is over."""


class AsyncConnectorObserver(abc.ABC):
    """``ConnectorObserver`` whose methods are coroutines (awaited one after another)."""

    @abc.abstractmethod
    async def on_change(self, key: Any, row: dict[str, Any], time: int, is_addition: bool) -> None:
        """One change: the row's id, its values, the time, insertion or removal."""

    async def on_time_end(self, time: int) -> None:
        """Every change of ``time`` has been passed."""

    async def on_end(self) -> None:
        """The input is over."""


@traced
def write(
    table: Table, observer: ConnectorObserver | AsyncConnectorObserver, *, name: str | None = None,
    sort_by: Iterable[Any] | None = None,
) -> None:
    """Passes every change of ``table`` to ``observer``'s methods (see ``pw.io.subscribe``);
    ``sort_by`` (columns) orders the changes of one time.

    >>> import sparkway as pw
    >>> class Printer(pw.io.python.ConnectorObserver):
    ...     def on_change(self, key, row, time, is_addition):
    ...         print(row, is_addition)
    >>> pw.io.python.write(pw.debug.table_from_markdown("a\\n1"), Printer())
    >>> pw.run(monitoring_level=pw.MonitoringLevel.NONE)
    {'a': 1} True
    """
    if isinstance(observer, AsyncConnectorObserver):
        loop = asyncio.new_event_loop()  # the writer's own: callbacks come from the step loop's thread

        def awaited(method: Callable[..., Any]) -> Callable[..., Any]:
            return lambda *args, **kwargs: loop.run_until_complete(method(*args, **kwargs))

        callbacks = [awaited(observer.on_change), awaited(observer.on_time_end), awaited(observer.on_end)]
    elif isinstance(observer, ConnectorObserver):
        callbacks = [observer.on_change, observer.on_time_end, observer.on_end]
    else:
        raise PlanTypeError(f"pw.io.python.write needs a pw.io.python.ConnectorObserver, got {type(observer).__name__}")
    on_change, on_time_end, on_end = callbacks
    subscribe(table, on_change=on_change, on_time_end=on_time_end, on_end=on_end, name=name, sort_by=sort_by)
