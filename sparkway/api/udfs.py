"""``pw.udfs`` and ``pw.UDF``: Python functions as column functions, with Pathway's options.

Executors, caches and retry strategies are accepted with Pathway's signatures. What
sparkway does with them, on the Spark workers that evaluate the function:

* a coroutine function (``async def``), or a plain one given an async executor (then in
  threads), is awaited for all the rows of an Arrow batch concurrently, in one event
  loop, each call within the executor's ``timeout`` and retried as its
  ``retry_strategy`` says; results are never pending: the fully async executor's are
  futures only for type checks (no operation takes them before
  ``Table.await_futures()``, as in Pathway);
* ``InMemoryCache`` remembers results per worker process for the run, ``DiskCache`` in
  the persistence storage, across runs (``sparkway.persistence.udf_cache``);
* with ``max_batch_size`` the function takes lists of values and returns a list, as in
  Pathway; it is called with chunks of at most that many rows of an Arrow batch (chunks
  of an async function are awaited concurrently).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import random
import threading
import typing
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Callable

from sparkway.core.dtypes import ANY, DType, dtype_of
from sparkway.core.expression import Apply, RowFailure, wrap
from sparkway.core.type_rules import return_type
from sparkway.errors import PlanAssertionError, warn_user
from sparkway.persistence import udf_cache


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

    def resolved(self, coroutine: bool) -> "Executor":
        """The executor for a function (``coroutine``: an ``async def``): auto is async
        for coroutines, sync otherwise; sync cannot call a coroutine."""
        if self.kind == "auto":
            return replace(self, kind="async" if coroutine else "sync")
        if self.kind == "sync" and coroutine:
            raise ValueError("The function is a coroutine. You can't use SyncExecutor.")
        return self


def auto_executor() -> Executor:
    """Async for coroutine functions, sync for the others."""
    return Executor("auto")


def sync_executor() -> Executor:
    return Executor("sync")


def async_executor(
    *, capacity: int | None = None, timeout: float | None = None, retry_strategy: AsyncRetryStrategy | None = None
) -> Executor:
    """Calls a coroutine function, or a plain one in threads; ``timeout`` (seconds)
    bounds each call, ``capacity`` the calls running at once.

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


# -- caches -----------------------------------------------------------------------------------

class CacheStrategy:
    """Where a UDF's results are remembered, by the values of its arguments.

    A cache works in the Spark worker processes that call the function, each keeping it
    for the whole run: ``InMemoryCache`` per process, ``DiskCache`` in the persistence
    storage, shared by the processes of a machine and kept across runs.
    """

    def _store(self, fn: Callable[..., Any]) -> Any:
        """A new store (``get(key) -> (found, value)``, ``put(key, value)``) for ``fn``."""
        raise NotImplementedError

    def wrap_sync(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` whose results are remembered."""
        store = self._store(fn)

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            key = udf_cache.key_of(args, kwargs)
            found, value = store.get(key)
            if not found:
                value = fn(*args, **kwargs)
                store.put(key, value)
            return value
        return call

    def wrap_async(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """A coroutine function whose results are remembered; concurrent calls with the
        same arguments wait for one computation."""
        store = self._store(fn)
        running: dict[str, asyncio.Future] = {}

        @functools.wraps(fn)
        async def call(*args: Any, **kwargs: Any) -> Any:
            key = udf_cache.key_of(args, kwargs)
            found, value = store.get(key)
            if found:
                return value
            if key in running and running[key].get_loop() is asyncio.get_running_loop():
                return await asyncio.shield(running[key])
            task = running[key] = asyncio.ensure_future(fn(*args, **kwargs))
            try:
                value = await task
            finally:
                running.pop(key, None)
            store.put(key, value)
            return value
        return call


class _Memory:
    """Results in this process, the ``max_size`` most recently used (None: all)."""

    def __init__(self, max_size: int | None) -> None:
        self.max_size = max_size
        self.values: OrderedDict[str, Any] = OrderedDict()

    def get(self, key: str) -> tuple[bool, Any]:
        if key not in self.values:
            return False, None
        self.values.move_to_end(key)
        return True, self.values[key]

    def put(self, key: str, value: Any) -> None:
        self.values[key] = value
        while self.max_size is not None and len(self.values) > self.max_size:
            self.values.popitem(last=False)


class InMemoryCache(CacheStrategy):
    """Results kept in memory for the run (per Spark worker process), the ``max_size``
    most recently used (None: all).

    >>> import sparkway as pw
    >>> @pw.udf(deterministic=True, cache_strategy=pw.udfs.InMemoryCache(max_size=1000))
    ... def slow_square(x: int) -> int:
    ...     return x * x
    """

    def __init__(self, max_size: int | None = None) -> None:
        self.max_size = max_size

    def _store(self, fn: Callable[..., Any]) -> _Memory:
        return _Memory(self.max_size)


class _DiskStores:
    """The ``DiskStore`` of a cache in the storage of the run calling the function (or,
    in a run without filesystem persistence, ``fallback``)."""

    def __init__(self, name: str, size_limit: int, fallback: Any) -> None:
        self.name, self.size_limit, self.fallback = name, size_limit, fallback
        self.opened: dict[str, udf_cache.DiskStore] = {}

    def current(self) -> Any:
        root = udf_cache.active_root()
        if root is None:
            return self.fallback
        if root not in self.opened:
            self.opened[root] = udf_cache.DiskStore(root, self.name, self.size_limit)
        return self.opened[root]

    def get(self, key: str) -> tuple[bool, Any]:
        store = self.current()
        return store.get(key) if store is not None else (False, None)

    def put(self, key: str, value: Any) -> None:
        store = self.current()
        if store is not None:
            store.put(key, value)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "opened": {}}  # connections stay in their process


class DiskCache(CacheStrategy):
    """Results kept in the persistence storage (``<storage>/runtime_calls``), across runs:
    a run with ``persistence_config`` reuses the results of the runs before it.
    ``size_limit`` bounds the bytes kept (least recently used results go first); caches
    with the same ``name`` share their results (default: the function's module and
    name). In a run without filesystem persistence, results are kept in memory for the run.

    >>> import sparkway as pw
    >>> @pw.udf(deterministic=True, cache_strategy=pw.udfs.DiskCache())
    ... def slow_square(x: int) -> int:
    ...     return x * x
    """

    def __init__(self, name: str | None = None, size_limit: int = 2**30) -> None:
        self.name = name
        self.size_limit = size_limit

    def _store(self, fn: Callable[..., Any]) -> _DiskStores:
        target = inspect.unwrap(fn)
        name = self.name or f"{getattr(target, '__module__', '')}_{getattr(target, '__qualname__', repr(target))}"
        return _DiskStores(name, self.size_limit, self._without_storage())

    def _without_storage(self) -> Any:
        return _Memory(None)


class DefaultCache(DiskCache):
    """``DiskCache`` in a run with persistence; no cache in a run without."""

    def _without_storage(self) -> Any:
        return None


def with_cache_strategy(func: Callable[..., Any], cache_strategy: CacheStrategy) -> Callable[..., Any]:
    """``func`` (a plain or coroutine function) with its results cached.

    >>> import sparkway as pw
    >>> square = pw.udfs.with_cache_strategy(lambda x: x * x, pw.udfs.InMemoryCache())
    >>> square(3)
    9
    """
    if inspect.iscoroutinefunction(func):
        return cache_strategy.wrap_async(func)
    return cache_strategy.wrap_sync(func)


# -- async helpers (Pathway's pw.udfs.async_options and friends) -----------------------------

def coerce_async(func: Callable[..., Any]) -> Callable[..., Any]:
    """A coroutine function calling ``func`` in a thread of the event loop's executor
    (``func`` itself when it is one already), so that calls run concurrently.

    >>> import asyncio, sparkway as pw
    >>> asyncio.run(pw.udfs.coerce_async(lambda x: x + 1)(1))
    2
    """
    if inspect.iscoroutinefunction(func):
        return func

    @functools.wraps(func)
    async def in_thread(*args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(func, *args, **kwargs))
    return in_thread


def with_timeout(func: Callable[..., Any], timeout: float) -> Callable[..., Any]:
    """A coroutine function failing with ``TimeoutError`` when ``func`` takes longer
    than ``timeout`` seconds."""
    func = coerce_async(func)

    @functools.wraps(func)
    async def bounded(*args: Any, **kwargs: Any) -> Any:
        return await asyncio.wait_for(func(*args, **kwargs), timeout)
    return bounded


def with_retry_strategy(func: Callable[..., Any], retry_strategy: AsyncRetryStrategy) -> Callable[..., Any]:
    """A coroutine function calling ``func`` again after a failure, as the strategy says."""
    func = coerce_async(func)

    @functools.wraps(func)
    async def retried(*args: Any, **kwargs: Any) -> Any:
        for delay in [*retry_strategy.delays_s(), None]:
            try:
                return await func(*args, **kwargs)
            except Exception:
                if delay is None:
                    raise
                await asyncio.sleep(delay)
    return retried


def with_capacity(func: Callable[..., Any], capacity: int) -> Callable[..., Any]:
    """A coroutine function of which at most ``capacity`` calls run at once (per event
    loop: sparkway awaits a batch of rows in one)."""
    func = coerce_async(func)
    limit = _Semaphores(capacity)

    @functools.wraps(func)
    async def limited(*args: Any, **kwargs: Any) -> Any:
        async with limit.current():
            return await func(*args, **kwargs)
    return limited


class _Semaphores:
    """A semaphore for the running event loop (each batch of rows is awaited in a new
    one); pickled without it."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.loop: Any = None
        self.semaphore: asyncio.Semaphore | None = None

    def current(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self.loop is not loop or self.semaphore is None:
            self.loop, self.semaphore = loop, asyncio.Semaphore(self.capacity)
        return self.semaphore

    def __getstate__(self) -> dict[str, Any]:
        return {"capacity": self.capacity, "loop": None, "semaphore": None}


def async_options(
    capacity: int | None = None, timeout: float | None = None,
    retry_strategy: AsyncRetryStrategy | None = None, cache_strategy: CacheStrategy | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator making a coroutine function (a plain one runs in threads) with these
    options, e.g. for ``pw.apply_async``.

    >>> import sparkway as pw
    >>> @pw.udfs.async_options(timeout=10.0, cache_strategy=pw.udfs.InMemoryCache())
    ... def inc(x: int) -> int:
    ...     return x + 1
    >>> import asyncio
    >>> asyncio.run(inc(1))
    2
    """
    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        func = coerce_async(func)
        if timeout is not None:
            func = with_timeout(func, timeout)
        if retry_strategy is not None:
            func = with_retry_strategy(func, retry_strategy)
        if capacity is not None:
            func = with_capacity(func, capacity)
        if cache_strategy is not None:
            func = with_cache_strategy(func, cache_strategy)
        return func
    return decorate


def _run_async(coroutine: Any) -> Any:
    """The result of a coroutine, also from code running inside an event loop (then the
    coroutine runs in a thread of its own, with its own loop).

    >>> async def answer():
    ...     return 42
    >>> _run_async(answer())
    42
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = asyncio.run(coroutine)
        except BaseException as error:  # noqa: BLE001 - re-raised in the caller's thread
            outcome["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def _coerce_sync(func: Callable[..., Any]) -> Callable[..., Any]:
    """A plain function running the coroutine function ``func`` to its result."""
    if not inspect.iscoroutinefunction(func):
        return func

    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        return _run_async(func(*args, **kwargs))
    return run


class UDF:
    """A column function made from a Python function: subclass it and define
    ``__wrapped__``, or use ``@pw.udf``.

    ``deterministic=False`` (the default) says that the function may give another result
    for the same arguments: each row's result is then stored until the row is deleted,
    so that the deletion retracts exactly the value that was inserted (unless the table
    only ever grows); ``deterministic=True`` saves that storage.

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
        executor = (executor or auto_executor()).resolved(inspect.iscoroutinefunction(self.__wrapped__))
        if max_batch_size is not None and executor.kind == "fully_async":
            raise ValueError("Batching is not supported for fully asynchronous UDFs.")
        self.return_type = return_type
        self.deterministic = deterministic
        self.propagate_none = propagate_none
        self.executor = executor
        self.cache_strategy = cache_strategy
        self.max_batch_size = max_batch_size

    def __wrapped__(self, *args: Any) -> Any:
        raise NotImplementedError("a pw.UDF subclass defines __wrapped__(self, ...) to compute its value")

    def __call__(self, *args: Any, **kwargs: Any) -> Apply:
        fn = self.__wrapped__
        if not args and not kwargs:  # Pathway asserts this (an AssertionError)
            raise PlanAssertionError(
                f"{getattr(fn, '__name__', 'the function')} is called on no column: a function applied to rows "
                "takes at least one column (or value) as an argument"
            )
        if kwargs:  # keyword arguments are columns too: passed by position, named again here
            fn = _with_keywords(fn, len(args), tuple(kwargs))
        arguments = tuple(wrap(a) for a in (*args, *kwargs.values()))
        asynchronous = self.executor.kind in ("async", "fully_async")
        batched = self.max_batch_size is not None or asynchronous
        call = self._batch_function(fn) if batched else self._row_function(fn)
        return Apply(call, arguments, self._result_type(), self.propagate_none, batched, self.deterministic)

    def _result_type(self) -> DType:
        """The type of the values, a future of it with the fully async executor."""
        result = self._value_type()
        return DType("Future", (result,)) if self.executor.kind == "fully_async" else result

    def _value_type(self) -> DType:
        declared = return_type(self.__wrapped__)
        if self.return_type is not None:
            given = dtype_of(self.return_type)
            per_row = declared.items[0] if self.max_batch_size is not None and declared.name == "list" else declared
            # sparkway's own functions (indexes, transformers) give precise types to
            # loosely annotated helpers: the warning is for the user's code
            ours = getattr(self.__wrapped__, "__module__", "").startswith("sparkway.")
            if per_row != ANY and not ours and not _fits(per_row, given):
                annotation = _return_annotation(self.__wrapped__)
                warn_user(
                    f"The value of return_type parameter ({self.return_type}) is inconsistent with UDF's "
                    f"return type annotation ({annotation}).",
                    Warning,
                )
            return given
        if self.max_batch_size is None or declared == ANY:
            return declared
        if declared.name != "list":
            annotation = _return_annotation(self.__wrapped__)
            raise ValueError(f"A batch UDF has to return a list but is annotated as returning {annotation!r}")
        return declared.items[0]  # a batch function returns a list of results

    def _row_function(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` (a plain function of one row's values) as it is called."""
        if self.cache_strategy is not None:
            return self.cache_strategy.wrap_sync(fn)
        return fn

    def _batch_function(self, fn: Callable[..., Any]) -> Callable[..., list[Any]]:
        """``fn`` as a function of many rows (one list of values per argument): with an
        async executor the rows' calls are awaited concurrently (a plain function's in
        threads), a batch UDF gets chunks of at most ``max_batch_size`` rows."""
        executor = self.executor
        asynchronous = executor.kind in ("async", "fully_async")
        if asynchronous:
            fn = awaiting(coerce_async(fn), executor.timeout, executor.retry_strategy or NoRetryStrategy())
            if executor.capacity is not None:
                fn = with_capacity(fn, executor.capacity)
        if self.max_batch_size is None:
            if self.cache_strategy is not None:
                fn = self.cache_strategy.wrap_async(fn)
            calls, size = _rows_as_chunks(fn), 1
        else:
            calls, size = fn, self.max_batch_size
        batch = _in_chunks(calls, size, asynchronous)
        if self.max_batch_size is not None and self.cache_strategy is not None:
            batch = _remembered_rows(batch, self.cache_strategy._store(fn))
        return batch


def _fits(declared: DType, given: DType) -> bool:
    """Whether values of the annotated type are values of the type given (``int`` fits
    ``int | None``, not the other way)."""
    return given == ANY or declared == given or (given.optional and declared.with_optional(True) == given)


class _FunctionUDF(UDF):
    """What ``@pw.udf`` makes of a function."""

    def __init__(self, fn: Callable[..., Any], **options: Any) -> None:
        functools.update_wrapper(self, fn)  # sets __wrapped__, which the options depend on
        super().__init__(**options)


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
    """``pw.apply`` with an async executor: a coroutine function's calls (a plain
    function's, in threads) run concurrently.

    >>> import asyncio
    >>> import sparkway as pw
    >>> async def double(x: int) -> int:
    ...     await asyncio.sleep(0.01)
    ...     return 2 * x
    >>> t = pw.debug.table_from_markdown("x\\n1\\n2")
    >>> pw.debug.compute_and_print(t.select(y=pw.apply_async(double, pw.this.x)), include_id=False)
    y
    2
    4
    """
    return udf(fn, executor=async_executor())(*args, **kwargs)


def _with_keywords(fn: Callable[..., Any], positional: int, names: tuple[str, ...]) -> Callable[..., Any]:
    """``fn`` called with its last ``len(names)`` arguments as keywords (a coroutine
    function stays one)."""
    @functools.wraps(fn)
    def call(*values: Any) -> Any:
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


def _remembered_rows(batch: Callable[..., list[Any]], store: Any) -> Callable[..., list[Any]]:
    """A function of many rows with each row's result remembered in ``store`` by its
    values; only rows not remembered are computed."""
    @functools.wraps(batch)
    def call(*columns: list[Any]) -> list[Any]:
        rows = list(zip(*columns))
        keys = [udf_cache.key_of(row) for row in rows]
        known = {}
        for key in dict.fromkeys(keys):
            found, value = store.get(key)
            if found:
                known[key] = value
        missing = [k for k in dict.fromkeys(keys) if k not in known]
        first = {k: i for i, k in reversed(list(enumerate(keys)))}
        computed = batch(*([c[first[k]] for k in missing] for c in columns)) if missing else []
        for key, value in zip(missing, computed):
            known[key] = value
            if not isinstance(value, RowFailure):
                store.put(key, value)
        return [known[k] for k in keys]
    return call


def _return_annotation(fn: Callable[..., Any]) -> Any:
    """``fn``'s return annotation as written, for messages (resolved where it can be)."""
    try:
        return typing.get_type_hints(fn).get("return")
    except Exception:  # a callable object, or hints naming what cannot be imported
        return inspect.signature(fn).return_annotation
