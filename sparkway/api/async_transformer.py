"""``pw.AsyncTransformer``: an ``async def invoke(self, **row) -> dict`` run for every row
of a table, on Spark's executors.

The plan is made of existing nodes: a select whose batched Python function awaits the
invocations of an Arrow batch's rows concurrently and returns, per row, a tuple of the
status (``-SUCCESS-`` / ``-FAILURE-``) and the output values; with ``instance``, a groupby
on the instance finds the instances with a failure, and every row of them fails.  Results
are never pending: ``output_table`` and ``finished`` hold the same rows.
"""

from __future__ import annotations

import functools
import inspect
import logging
import re
from typing import Any

from sparkway.api import udfs
from sparkway.api.functions import if_else
from sparkway.api.reducers import max as max_of
from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.api.thisclass import this
from sparkway.core import dtypes as dt
from sparkway.core.dtypes import DType

log = logging.getLogger(__name__)

SUCCESS, FAILURE = "-SUCCESS-", "-FAILURE-"
STATUS = "_async_status"
_RESULT, _INSTANCE = "_pw_async_result", "_pw_async_instance"
_HASHABLE = {"int", "bool", "str", "bytes", "float", "DateTimeNaive", "DateTimeUtc", "Duration", "Pointer"}


class AsyncTransformer:
    """Calls the coroutine ``invoke`` for every row of ``input_table`` (its columns as
    keyword arguments); ``invoke`` returns a dict of the ``output_schema``'s columns.

    ``successful`` holds the results of the rows whose call succeeded (with the input
    rows' ids), ``failed`` the rows whose call raised or returned other columns (their
    values None), ``finished`` both, with the status in ``_async_status``. With
    ``instance``, a failure fails every row of its instance.

    >>> import asyncio
    >>> import sparkway as pw
    >>> class Output(pw.Schema):
    ...     ret: int
    >>> class Increment(pw.AsyncTransformer, output_schema=Output):
    ...     async def invoke(self, value: int) -> dict:
    ...         await asyncio.sleep(0.01)
    ...         return {"ret": value + 1}
    >>> t = pw.debug.table_from_markdown("value\\n42\\n44")
    >>> Increment(input_table=t).successful.typehints()["ret"]
    <class 'int'>
    """

    output_schema: type[Schema]

    def __init_subclass__(cls, /, output_schema: type[Schema] | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if output_schema is not None:
            cls.output_schema = output_schema

    def __init__(
        self, input_table: Table, *, instance: Any = None, autocommit_duration_ms: int | None = 1500,
    ) -> None:
        # autocommit_duration_ms: accepted as in Pathway; results come within the step
        _check_arguments(inspect.signature(self.invoke), input_table.column_names())
        self._input_table = input_table.with_columns(**{_INSTANCE: this.id if instance is None else instance})
        kind = self._input_table.schema._dtypes()[_INSTANCE]
        if not _hashable(kind):
            raise ValueError(
                f"You can't use a column of type {kind} as instance in AsyncTransformer because it is unhashable."
            )
        self._by_instance = instance is not None
        self._executor = udfs.async_executor()
        # as Pathway: results cached in the persistence storage when the run has one
        self._cache_strategy: udfs.CacheStrategy | None = udfs.DefaultCache()

    async def invoke(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Called for every row, with the row's columns as keyword arguments; returns a
        dict of the values of ``output_schema``'s columns."""
        raise NotImplementedError("an AsyncTransformer defines async def invoke(self, ...) -> dict")

    def open(self) -> None:
        """Called once in each Python worker, before its first ``invoke``."""

    def close(self) -> None:
        """Pathway calls it at the end; sparkway's Python workers end without calling it."""

    def with_options(
        self, capacity: int | None = None, timeout: float | None = None,
        retry_strategy: udfs.AsyncRetryStrategy | None = None, cache_strategy: udfs.CacheStrategy | None = None,
    ) -> "AsyncTransformer":
        """Sets how ``invoke`` is called: ``timeout`` (seconds) per call, retries, and a
        cache of results by row values (``pw.udfs.InMemoryCache()``...); returns self."""
        self._executor = udfs.async_executor(capacity=capacity, timeout=timeout, retry_strategy=retry_strategy)
        self._cache_strategy = cache_strategy
        return self

    def __getstate__(self) -> dict[str, Any]:
        """What the executors get: the transformer without its tables."""
        return {k: v for k, v in self.__dict__.items() if not isinstance(v, Table)}

    @functools.cached_property
    def output_table(self) -> Table:
        """Every row with its status (``-SUCCESS-`` or ``-FAILURE-``) in ``_async_status``
        and its output values (None where it failed)."""
        names = self.output_schema.column_names()
        types = [t.with_optional(True) for t in self.output_schema._dtypes().values()]
        call = udfs.udf(
            _invocation(self, self._input_table.column_names()[:-1], names),
            return_type=DType("tuple", (dt.STR, *types)),
        )
        columns = [this[c] for c in self._input_table.column_names()[:-1]]
        rows = self._input_table.with_columns(**{_RESULT: call(*columns)})
        failed = rows[_RESULT][0] == FAILURE
        if self._by_instance:
            failures = rows.select(this[_INSTANCE], failure=if_else(this[_RESULT][0] == FAILURE, 1, 0))
            instances = failures.groupby(this[_INSTANCE]).reduce(failed=max_of(this.failure) == 1)
            failed = instances.ix_ref(rows[_INSTANCE]).failed
        return rows.select(**{
            STATUS: if_else(failed, FAILURE, SUCCESS),
            **{name: if_else(failed, None, rows[_RESULT][k + 1]) for k, name in enumerate(names)},
        }).update_types(**dict(zip(names, types)))

    @functools.cached_property
    def finished(self) -> Table:
        """The rows whose call finished: all of them (sparkway's results are never
        pending), as ``output_table``."""
        return self.output_table

    @functools.cached_property
    def successful(self) -> Table:
        """The output values of the rows whose call succeeded."""
        rows = self.finished.filter(this[STATUS] == SUCCESS).without(this[STATUS])
        return rows.update_types(**self.output_schema._dtypes())

    @functools.cached_property
    def failed(self) -> Table:
        """The rows whose call failed (values None)."""
        return self.finished.filter(this[STATUS] == FAILURE).without(this[STATUS])


def _invocation(transformer: AsyncTransformer, arguments: list[str], outputs: list[str]) -> Any:
    """``invoke`` of a row given by position, as ``(status, *outputs)``; a failure is
    logged (on the executor)."""
    opened: list[bool] = []
    executor = transformer._executor
    call = udfs.awaiting(transformer.invoke, executor.timeout, executor.retry_strategy or udfs.NoRetryStrategy())
    if executor.capacity is not None:
        call = udfs.with_capacity(call, executor.capacity)
    if transformer._cache_strategy is not None:  # successful results only: failures are retried
        call = udfs.with_cache_strategy(call, transformer._cache_strategy)

    async def invoke(*values: Any):  # noqa: ANN202 - its type is given to the UDF
        if not opened:
            transformer.open()
            opened.append(True)
        try:
            result = await call(**dict(zip(arguments, values)))
            if not isinstance(result, dict) or set(result) != set(outputs):
                raise ValueError("result of async function does not match output schema")
        except Exception:
            log.exception("%s.invoke failed", type(transformer).__qualname__)
            return (FAILURE, *([None] * len(outputs)))
        return (SUCCESS, *(result[name] for name in outputs))

    invoke.__qualname__ = f"{type(transformer).__qualname__}.invoke"
    return invoke


def _check_arguments(signature: inspect.Signature, columns: list[str]) -> None:
    """``invoke`` takes exactly the input table's columns."""
    try:
        signature.bind(**{c: None for c in columns})
    except TypeError as error:
        if found := re.match("got an unexpected keyword argument '(.+)'", str(error)):
            raise TypeError(
                f"Input table has a column {found[1]!r} but it is not present on the argument list of the invoke method."
            ) from None
        if found := re.match("missing a required argument: '(.+)'", str(error)):
            raise TypeError(
                f"Column {found[1]!r} is present on the argument list of the invoke method but it is not present"
                " in the input_table."
            ) from None
        raise


def _hashable(kind: DType) -> bool:
    """Whether values of ``kind`` are hashable in Python (an instance must be)."""
    if kind.name in ("tuple", "list"):
        return all(_hashable(t) for t in kind.items)
    return kind.name in _HASHABLE
