"""``pw.udfs`` and ``pw.UDF``: Python functions as column functions, with Pathway's options.

Executors, caches and retry strategies are accepted with Pathway's signatures. What
sparkway does with them, on the Spark workers that evaluate the function:

* a coroutine function (``async def``) is awaited for all the rows of an Arrow batch
  concurrently, in one event loop, each call within the executor's ``timeout`` and
  retried as its ``retry_strategy`` says; results are never pending: the fully async
  executor's are futures only for type checks (no operation takes them before
  ``Table.await_futures()``, as in Pathway);
* ``InMemoryCache`` and ``DiskCache`` remember results per worker process for the run
  (a disk cache is not kept across runs yet);
* with ``max_batch_size`` the function takes lists of values and returns a list, as in
  Pathway; it is called with chunks of at most that many rows of an Arrow batch (chunks
  of an async function are awaited concurrently).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import random
import typing
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

from sparkway.core.dtypes import ANY, DType, dtype_of
from sparkway.core.expression import Apply, RowFailure, wrap
from sparkway.core.type_rules import return_type


class AsyncRetryStrategy:
    """How often, and after which delays, a failed call is tried again."""

    def delays_s(self) -> list[float]:
        return []


class NoRetryStrategy(AsyncRetryStrategy):
    """A failed call fails the row."""


@dataclass(frozen=True)
class FixedDelayRetryStrategy(AsyncRetryStrategy):
    """Up to ``max_retries`` more tries, ``delay_ms`` apart."""

    max_retries: int = 3
    delay_ms: int = 1000

    def delays_s(self) -> list[float]:
        return [self.delay_ms / 1000] * self.max_retries


@dataclass(frozen=True)
class ExponentialBackoffRetryStrategy(AsyncRetryStrategy):
    """Up to ``max_retries`` more tries, each delay ``backoff_factor`` times the last."""

    max_retries: int = 3
    initial_delay: int = 1000
    backoff_factor: float = 2
    jitter_ms: int = 300

    def delays_s(self) -> list[float]:
        return [
            (self.initial_delay * self.backoff_factor**k + random.uniform(0, self.jitter_ms)) / 1000
            for k in range(self.max_retries)
        ]


@dataclass(frozen=True)
class Executor:
    """How a UDF is called: ``pw.udfs.sync_executor()``, ``async_executor(...)``..."""

    kind: str = "auto"
    capacity: int | None = None
    timeout: float | None = None
    retry_strategy: AsyncRetryStrategy | None = None


def auto_executor() -> Executor:
    """Async for coroutine functions, sync for the others."""
    return Executor("auto")


def sync_executor() -> Executor:
    return Executor("sync")


def async_executor(
    *, capacity: int | None = None, timeout: float | None = None, retry_strategy: AsyncRetryStrategy | None = None
) -> Executor:
    """Calls a coroutine function; ``timeout`` (seconds) bounds each call.

    >>> import sparkway as pw
    >>> pw.udfs.async_executor(timeout=2.0).timeout
    2.0
    """
    return Executor("async", capacity, timeout, retry_strategy)


def fully_async_executor(
    *, capacity: int | None = None, timeout: float | None = None,
    retry_strategy: AsyncRetryStrategy | None = None, autocommit_duration_ms: int | None = 1500,
) -> Executor:
    """As ``async_executor``: sparkway computes the results within the step."""
    return Executor("fully_async", capacity, timeout, retry_strategy)


class CacheStrategy:
    """Where a UDF's results are remembered."""


@dataclass(frozen=True)
class InMemoryCache(CacheStrategy):
    """Results kept in memory, the ``max_size`` most recent (None: all)."""

    max_size: int | None = None


@dataclass(frozen=True)
class DiskCache(CacheStrategy):
    """Pathway keeps these results in the persistence storage; sparkway, in memory."""

    size_limit: int | None = None
    name: str | None = None


class UDF:
    """A column function made from a Python function: subclass it and define
    ``__wrapped__``, or use ``@pw.udf``.

    >>> import sparkway as pw
    >>> class Add(pw.UDF):
    ...     def __init__(self, n: int) -> None:
    ...         super().__init__()
    ...         self.n = n
    ...     def __wrapped__(self, a: int) -> int:
    ...         return a + self.n
    >>> t = pw.debug.table_from_markdown("a\\n1")
    >>> t.select(b=Add(2)(pw.this.a)).typehints()["b"]
    <class 'int'>
    """

    def __init__(
        self, *, return_type: Any = None, deterministic: bool = False, propagate_none: bool = False,
        executor: Executor | None = None, cache_strategy: CacheStrategy | None = None,
        max_batch_size: int | None = None,
    ) -> None:
        if max_batch_size is not None and executor is not None and executor.kind == "fully_async":
            raise ValueError("Batching is not supported for fully asynchronous UDFs.")
        self.return_type = return_type
        self.deterministic = deterministic
        self.propagate_none = propagate_none
        self.executor = executor or auto_executor()
        self.cache_strategy = cache_strategy
        self.max_batch_size = max_batch_size

    def __wrapped__(self, *args: Any) -> Any:
        raise NotImplementedError("a pw.UDF subclass defines __wrapped__(self, ...) to compute its value")

    def __call__(self, *args: Any, **kwargs: Any) -> Apply:
        fn = self.__wrapped__
        if kwargs:  # keyword arguments are columns too: passed by position, named again here
            fn = _with_keywords(fn, len(args), tuple(kwargs))
        arguments = tuple(wrap(a) for a in (*args, *kwargs.values()))
        batched = self.max_batch_size is not None or inspect.iscoroutinefunction(fn)
        if batched and not arguments:  # a batched function counts its rows by an argument's values
            fn, arguments = _with_keywords(fn, 0, ()), (wrap(0),)
        call = self._batch_function(fn) if batched else self._row_function(fn)
        return Apply(call, arguments, self._result_type(), self.propagate_none, batched)

    def _result_type(self) -> DType:
        """The type of the values, a future of it with the fully async executor."""
        result = self._value_type()
        return DType("Future", (result,)) if self.executor.kind == "fully_async" else result

    def _value_type(self) -> DType:
        if self.return_type is not None:
            return dtype_of(self.return_type)
        declared = return_type(self.__wrapped__)
        if self.max_batch_size is None or declared == ANY:
            return declared
        if declared.name != "list":
            annotation = typing.get_type_hints(self.__wrapped__).get("return")
            raise ValueError(f"A batch UDF has to return a list but is annotated as returning {annotation!r}")
        return declared.items[0]  # a batch function returns a list of results

    def _row_function(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` (a plain function of one row's values) as it is called."""
        if self.cache_strategy is not None:
            return _remembered(fn, getattr(self.cache_strategy, "max_size", None))
        return fn

    def _batch_function(self, fn: Callable[..., Any]) -> Callable[..., list[Any]]:
        """``fn`` as a function of many rows (one list of values per argument): a
        coroutine function's calls are awaited concurrently, a batch UDF gets chunks of
        at most ``max_batch_size`` rows."""
        if self.max_batch_size is None:
            calls = _rows_as_chunks(fn)
            size = 1
        else:
            calls, size = fn, self.max_batch_size
        if inspect.iscoroutinefunction(fn):
            executor = self.executor
            calls = awaiting(calls, executor.timeout, executor.retry_strategy or NoRetryStrategy())
        batch = _in_chunks(calls, size, inspect.iscoroutinefunction(fn))
        if self.cache_strategy is not None:
            batch = _remembered_rows(batch, getattr(self.cache_strategy, "max_size", None))
        return batch


class _FunctionUDF(UDF):
    """What ``@pw.udf`` makes of a function."""

    def __init__(self, fn: Callable[..., Any], **options: Any) -> None:
        super().__init__(**options)
        self.__wrapped__ = fn  # type: ignore[method-assign]
        functools.update_wrapper(self, fn)


def udf(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Turns a Python function (``async`` too) into a column function; options as in
    Pathway: ``return_type``, ``deterministic``, ``propagate_none``, ``executor``,
    ``cache_strategy``, ``max_batch_size``.

    >>> import sparkway as pw
    >>> @pw.udf
    ... def double(x: int) -> int:
    ...     return 2 * x
    >>> type(double(pw.this.a)).__name__
    'Apply'
    """
    if fn is not None:
        return _FunctionUDF(fn, **options)
    return lambda f: _FunctionUDF(f, **options)


def apply_async(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Apply:
    """``pw.apply`` for a coroutine function."""
    return udf(fn)(*args, **kwargs)


def _with_keywords(fn: Callable[..., Any], positional: int, names: tuple[str, ...]) -> Callable[..., Any]:
    """``fn`` called with its last ``len(names)`` arguments as keywords (a coroutine
    function stays one)."""
    @functools.wraps(fn)
    def call(*values: Any) -> Any:
        values = values[: positional + len(names)]  # past them: a placeholder argument
        return fn(*values[:positional], **dict(zip(names, values[positional:])))

    @functools.wraps(fn)
    async def call_async(*values: Any) -> Any:
        return await call(*values)

    return call_async if inspect.iscoroutinefunction(fn) else call


def _rows_as_chunks(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A function of one row as a function of a chunk of one row (lists of one value)."""
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def call_async(*values: list[Any]) -> list[Any]:
            return [await fn(*(v[0] for v in values))]
        return call_async

    @functools.wraps(fn)
    def call(*values: list[Any]) -> list[Any]:
        return [fn(*(v[0] for v in values))]
    return call


def awaiting(fn: Callable[..., Any], timeout: float | None, retries: AsyncRetryStrategy) -> Callable[..., Any]:
    """A coroutine function within ``timeout`` (seconds), tried again as ``retries`` says."""
    @functools.wraps(fn)
    async def call(*values: Any, **named: Any) -> Any:
        for delay in [*retries.delays_s(), None]:
            try:
                return await asyncio.wait_for(fn(*values, **named), timeout)
            except Exception:
                if delay is None:
                    raise
                await asyncio.sleep(delay)
    return call


def _in_chunks(fn: Callable[..., Any], size: int, awaited: bool) -> Callable[..., list[Any]]:
    """A function of chunks of at most ``size`` rows as a function of any number of rows;
    a chunk that raises fails its rows (``RowFailure``); coroutines of all chunks are
    awaited concurrently, in one event loop."""
    def checked(chunk: int, results: Any) -> list[Any]:
        results = list(results)  # a batch UDF may return a numpy array
        if len(results) != chunk:
            raise ValueError(
                f"The number of rows produced by a UDF ({len(results)}) is different than "
                f"the number of rows on its input ({chunk})."
            )
        return results

    @functools.wraps(fn)
    def call(*columns: list[Any]) -> list[Any]:
        starts = range(0, len(columns[0]) if columns else 1, size)
        chunks = [[c[s:s + size] for c in columns] for s in starts]
        if awaited:
            outcomes = asyncio.run(_gathered(fn, chunks))
        else:
            outcomes = [_outcome(fn, chunk) for chunk in chunks]
        rows: list[Any] = []
        for chunk, outcome in zip(chunks, outcomes):
            n = len(chunk[0]) if chunk else 1
            if isinstance(outcome, BaseException):
                rows.extend([RowFailure(outcome)] * n)
            else:
                rows.extend(checked(n, outcome))
        return rows
    return call


def _outcome(fn: Callable[..., Any], chunk: list[list[Any]]) -> Any:
    """``fn``'s result for the chunk, or the exception it raised."""
    try:
        return fn(*chunk)
    except Exception as error:
        return error


async def _gathered(fn: Callable[..., Any], chunks: list[list[list[Any]]]) -> list[Any]:
    return await asyncio.gather(*(fn(*chunk) for chunk in chunks), return_exceptions=True)


def _remembered_rows(batch: Callable[..., list[Any]], max_size: int | None) -> Callable[..., list[Any]]:
    """A function of many rows with each row's result remembered by its values (the
    ``max_size`` latest); only rows not remembered are computed."""
    memory: OrderedDict[str, Any] = OrderedDict()

    @functools.wraps(batch)
    def call(*columns: list[Any]) -> list[Any]:
        keys = [repr(row) for row in zip(*columns)]  # values may be unhashable (lists, Json)
        missing = list(dict.fromkeys(k for k in keys if k not in memory))
        first = {k: i for i, k in reversed(list(enumerate(keys)))}
        computed = batch(*([c[first[k]] for k in missing] for c in columns)) if missing else []
        for key, value in zip(missing, computed):
            if not isinstance(value, RowFailure):
                memory[key] = value
        fresh = dict(zip(missing, computed))
        results = [fresh[k] if k in fresh else memory[k] for k in keys]
        for key in keys:
            if key in memory:
                memory.move_to_end(key)
        while max_size is not None and len(memory) > max_size:
            memory.popitem(last=False)
        return results
    return call


def _remembered(fn: Callable[..., Any], max_size: int | None) -> Callable[..., Any]:
    """``fn`` with its results remembered by arguments (the ``max_size`` latest)."""
    memory: OrderedDict[Any, Any] = OrderedDict()

    @functools.wraps(fn)
    def call(*values: Any) -> Any:
        key = repr(values)  # values may be unhashable (lists, Json)
        if key in memory:
            memory.move_to_end(key)
            return memory[key]
        result = memory[key] = fn(*values)
        if max_size is not None and len(memory) > max_size:
            memory.popitem(last=False)
        return result
    return call
