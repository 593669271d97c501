"""User functions shipped to Spark's Python workers, as Pathway's UDF objects live: one
per process for the whole run.

Spark pickles the functions of a step's job anew for every task, and each task unpickles
them anew: a function's closure (a cache, a model loaded on first use, a counter) would
start empty at every step.  ``Portable`` wraps a user function so that a worker process
unpickles it once and keeps it, across the steps (and runs) of the driver process that
made it.  The bytes shipped are cloudpickle's, with one addition: locks (``threading.Lock``,
``RLock``, and what holds them: ``Barrier``, ``Condition``, ``Event``...) are rebuilt,
unlocked, in the worker, where Pathway's user functions would have shared the driver's.

>>> import threading
>>> barrier = threading.Barrier(2)
>>> shipped = Portable(lambda x: barrier.parties + x)
>>> import pickle
>>> pickle.loads(pickle.dumps(shipped))(1)
3
"""

from __future__ import annotations

import _thread
import functools
import hashlib
import io
import threading
import uuid
from collections import OrderedDict
from typing import Any, Callable

try:  # the copy PySpark uses to ship functions (the same version on every worker)
    from pyspark import cloudpickle
except ImportError:  # pragma: no cover - sparkway always runs with PySpark
    import cloudpickle  # type: ignore[no-redef]

#: functions unpickled in this process, by (token, digest of their bytes); the oldest
#: are dropped first (a long-lived worker process sees many programs' functions)
_KEPT: OrderedDict[tuple[str, str], Any] = OrderedDict()
_KEPT_LIMIT = 256
_KEPT_LOCK = threading.Lock()


def _new_lock() -> Any:
    return threading.Lock()


def _new_rlock() -> Any:
    return threading.RLock()


class _LockPickler(cloudpickle.Pickler):
    """cloudpickle's pickler, with locks pickled as fresh (unlocked) locks."""

    dispatch_table = cloudpickle.Pickler.dispatch_table.copy()
    dispatch_table[_thread.LockType] = lambda lock: (_new_lock, ())
    dispatch_table[_thread.RLock] = lambda lock: (_new_rlock, ())


def dumps(value: Any) -> bytes:
    """``value`` pickled as a worker needs it (functions by value, locks rebuilt)."""
    buffer = io.BytesIO()
    _LockPickler(buffer, protocol=5).dump(value)
    return buffer.getvalue()


def _kept(token: str, payload: bytes) -> Any:
    """The function of these bytes, unpickled once per process."""
    key = (token, hashlib.sha1(payload).hexdigest())
    with _KEPT_LOCK:
        if key in _KEPT:
            _KEPT.move_to_end(key)
            return _KEPT[key]
    value = cloudpickle.loads(payload)
    with _KEPT_LOCK:
        value = _KEPT.setdefault(key, value)
        while len(_KEPT) > _KEPT_LIMIT:
            _KEPT.popitem(last=False)
    return value


class Portable:
    """A user function as it travels to Spark's workers (see the module's doc); calling
    it calls the function."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.token = uuid.uuid4().hex
        _wraps(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __reduce__(self) -> tuple:
        return _restore, (self.token, dumps(self.fn))


def _restore(token: str, payload: bytes) -> Portable:
    shipped = Portable.__new__(Portable)
    shipped.fn = _kept(token, payload)
    shipped.token = token
    _wraps(shipped, shipped.fn)
    return shipped


def _wraps(shipped: Portable, fn: Callable[..., Any]) -> None:
    """Names, annotations and ``__wrapped__`` of ``fn`` (``inspect.unwrap`` finds it)."""
    functools.update_wrapper(shipped, fn)
    shipped.__qualname__ = getattr(fn, "__qualname__", repr(fn))


def portable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` wrapped in a ``Portable`` (once)."""
    return fn if isinstance(fn, Portable) else Portable(fn)
