"""``pathway.tests.utils`` for the compatibility run: the helpers Pathway's tests use.

Written here from what the helpers are documented to do (not copied from Pathway), on
sparkway's public API (tables are computed with ``pw.run``), except that tables are
captured with the in-memory sink of ``pw.debug``, which keeps Error values.
Two departures, both because sparkway's times are wall-clock milliseconds while
Pathway's debug tables keep their ``__time__`` values:

* stream assertions compare times by their order (the first time of one stream with the
  first of the other...), not by value;
* ``run_all`` is ``pw.run_all`` when sparkway has it, else ``pw.run`` (which runs every
  output defined so far); a test without outputs then fails as missing ``run_all``.

* ``wait_result_with_checker`` runs ``pw.run`` in this process (Pathway forks one, which
  the Spark session of this process cannot follow) and ends it with SIGINT once the
  checker holds.

Helpers not defined here are placeholders that fail as a missing API
when a test uses them.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import multiprocessing
import os
import pathlib
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

import pandas as pd
import pytest

mp_fork = multiprocessing.get_context("fork")
needs_multiprocessing_fork = pytest.mark.xfail(sys.platform != "linux", reason="needs fork()")
xfail_on_multiple_threads = pytest.mark.xfail(os.getenv("PATHWAY_THREADS", "1") != "1", reason="threads")


def skip_on_multiple_workers() -> None:
    """Skips a test written for one Pathway worker when several are configured."""
    if os.getenv("PATHWAY_THREADS", "1") != "1":
        pytest.skip("written for one worker")
xfail_on_python_3_10 = pytest.mark.xfail(sys.version_info[:2] == (3, 10), reason="python 3.10")
only_standard_build = pytest.mark.xfail(False, reason="only works on standard build")
AIRBYTE_FAKER_CONNECTION_REL_PATH = "connections/faker.yaml"


def only_with_license_key(*args: Any, **kwargs: Any) -> Any:
    """Pathway's enterprise features: skipped (as Pathway does without a license key)."""
    mark = pytest.mark.skip(reason="works only with a Pathway license key")
    return mark(args[0]) if len(args) == 1 and callable(args[0]) and not kwargs else mark


def _pw() -> Any:
    import pathway

    return pathway


def T(*args: Any, format: str = "markdown", **kwargs: Any) -> Any:
    """A debug table from markdown (or, with ``format="pandas"``, from a DataFrame)."""
    kwargs.pop("_stacklevel", None)
    if format == "pandas":
        return _pw().debug.table_from_pandas(*args, **kwargs)
    assert format == "markdown"
    return _pw().debug.table_from_markdown(*args, **kwargs)


def _run_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {"debug": True, "monitoring_level": _pw().MonitoringLevel.NONE, **kwargs}


def run(**kwargs: Any) -> None:
    """``pw.run`` with the tests' defaults (debug on, no monitoring)."""
    _pw().run(**_run_kwargs(kwargs))


def empty_from_schema(schema: Any) -> Any:
    """Pathway's ``pathway.internals.table_io.empty_from_schema`` (an internal its tests use)."""
    return _pw().debug.table_from_rows(schema, [])


def run_all(**kwargs: Any) -> None:
    """``pw.run_all`` with the tests' defaults."""
    _pw().run_all(**_run_kwargs(kwargs))


def _hashable(value: Any) -> Hashable:
    try:
        hash(value)
        return value
    except TypeError:
        return (type(value).__name__, repr(value))


Change = tuple[Any, tuple, int, int]  # (id, values, time, diff)


def _capture(tables: tuple[Any, ...], run_kwargs: dict[str, Any]) -> list[list[Change]]:
    """Every change of each table, from one run of the program.

    As Pathway's own capture in its test helpers, this keeps rows with Error values (a
    run with ``terminate_on_error=False``), which outputs such as ``pw.io.subscribe``
    skip: so the tables are captured with sparkway's in-memory sink, as ``pw.debug`` does.
    """
    from sparkway.api.debug import batch_rows
    from sparkway.api.graph import write_to_sink
    from sparkway.connectors.memory import MemorySink

    sinks = []
    for table in tables:
        sinks.append(MemorySink())
        write_to_sink(table, sinks[-1])
    run(**run_kwargs)
    streams: list[list[Change]] = []
    for table, sink in zip(tables, sinks):
        names, types = list(table.column_names()), table.schema._dtypes()
        streams.append([
            (key, tuple(_hashable(row[c]) for c in names), batch.time, 1 if diff > 0 else -1)
            for batch in sink.batches
            for key, row, diff in zip(batch.ids.to_pylist(), batch_rows(batch, types), batch.diffs.to_pylist())
        ])
    return streams


def _final(stream: list[Change]) -> dict[Any, tuple]:
    """The table after all its changes: id -> values."""
    state: dict[Any, tuple] = {}
    for key, values, _, diff in sorted(stream, key=lambda c: (c[2], c[3])):  # removals first
        if diff > 0:
            state[key] = values
        else:
            state.pop(key, None)
    return state


def _by_rank(stream: list[Change], with_id: bool) -> collections.Counter:
    """The stream's changes with each time replaced by its rank among the stream's times."""
    rank = {t: i for i, t in enumerate(sorted({c[2] for c in stream}))}
    return collections.Counter(((c[0],) if with_id else ()) + (c[1], rank[c[2]], c[3]) for c in stream)


def _check_schemas(table: Any, expected: Any) -> None:
    names, expected_names = list(table.column_names()), list(expected.column_names())
    assert names == expected_names, f"columns {names} vs expected {expected_names}"
    types, expected_types = table.schema._dtypes(), expected.schema._dtypes()
    same = all(_same_type(types[c], expected_types[c]) for c in names)
    assert same, f"column types {types} vs expected {expected_types}"


def _same_type(kind: Any, expected: Any) -> bool:
    """Equal types; array types match when they may hold the same arrays (an unknown
    number of dimensions or element type matches any), and lists and tuples when their
    items do (a list's item type standing for each of a tuple's, ``list[Any]`` for any),
    as Pathway's schema check has it; a pointer of unknown key types (Pathway's
    ``ANY_POINTER``) matches any pointer."""
    from sparkway.core import dtypes

    if kind.optional != expected.optional or kind.is_array != expected.is_array:
        return False
    if kind.is_pointer and expected.is_pointer and not (kind.items and expected.items):
        return True
    if kind.is_array:
        return dtypes.arrays_equivalent(kind, expected)
    if kind.name in ("list", "tuple") and expected.name in ("list", "tuple"):
        return _same_items(kind, expected)
    return kind == expected


def _same_items(kind: Any, expected: Any) -> bool:
    """Whether two list or tuple types hold the same values (see ``_same_type``)."""
    from sparkway.core import dtypes

    any_list = dtypes.DType("list", (dtypes.ANY,))
    if any_list in (kind.with_optional(False), expected.with_optional(False)):
        return True
    if kind.name == "tuple" and expected.name == "tuple" and len(kind.items) != len(expected.items):
        return False
    width = max(len(kind.items), len(expected.items))
    items = [kind.items * width if kind.name == "list" else kind.items,
             expected.items * width if expected.name == "list" else expected.items]
    return all(_same_type(a, b) for a, b in zip(*items))


def _assertion(compare: Callable[[list[Change], list[Change]], None], check_types: bool = True) -> Callable:
    """An ``assert_*`` helper: runs the tables and their expected tables, then compares."""

    def assert_equal(table: Any, expected: Any, **kwargs: Any) -> None:
        tables = table if isinstance(table, tuple) else (table,)
        expecteds = expected if isinstance(expected, tuple) else (expected,)
        assert len(tables) == len(expecteds)
        for t, e in zip(tables, expecteds):
            if check_types:
                _check_schemas(t, e)
            else:
                assert list(t.column_names()) == list(e.column_names())
        streams = _capture(tables + expecteds, kwargs)
        for got, want in zip(streams[: len(tables)], streams[len(tables) :]):
            compare(got, want)

    return assert_equal


def _same(got: collections.Counter, want: collections.Counter, what: str) -> None:
    """Asserts equality, naming a few rows that differ (this module is not assert-rewritten)."""
    if got != want:
        extra, missing = list((got - want).elements())[:5], list((want - got).elements())[:5]
        raise AssertionError(f"{what} differ: unexpected {extra}, missing {missing}")


def _tables_equal(got: list[Change], want: list[Change]) -> None:
    _same(collections.Counter(_final(got).items()), collections.Counter(_final(want).items()), "rows (id, values)")


def _tables_equal_wo_index(got: list[Change], want: list[Change]) -> None:
    _same(collections.Counter(_final(got).values()), collections.Counter(_final(want).values()), "rows")


def _streams_equal(got: list[Change], want: list[Change]) -> None:
    _same(_by_rank(got, True), _by_rank(want, True), "changes (id, values, time rank, diff)")


def _streams_equal_wo_index(got: list[Change], want: list[Change]) -> None:
    _same(_by_rank(got, False), _by_rank(want, False), "changes (values, time rank, diff)")


def _time_groups(with_id: bool) -> Callable[[list[Change], list[Change]], None]:
    """The same changes, and changes at one expected time are at one time in the result."""

    def compare(got: list[Change], want: list[Change]) -> None:
        def items(s: list[Change]) -> list[tuple[Any, int]]:
            return sorted(((((c[0],) if with_id else ()) + (c[1], c[3]), c[2]) for c in s), key=repr)

        g, w = items(got), items(want)
        _same(collections.Counter(v for v, _ in g), collections.Counter(v for v, _ in w), "changes")
        times: dict[int, int] = {}
        for (value, got_time), (_, want_time) in zip(g, w):
            assert times.setdefault(want_time, got_time) == got_time, f"{value} is not at the time of its group"

    return compare


assert_table_equality = _assertion(_tables_equal)
assert_table_equality_wo_index = _assertion(_tables_equal_wo_index)
assert_table_equality_wo_types = _assertion(_tables_equal, check_types=False)
assert_table_equality_wo_index_types = _assertion(_tables_equal_wo_index, check_types=False)
assert_stream_equality = _assertion(_streams_equal)
assert_stream_equality_wo_index = _assertion(_streams_equal_wo_index)
assert_stream_equality_wo_types = _assertion(_streams_equal, check_types=False)
assert_stream_equality_wo_index_types = _assertion(_streams_equal_wo_index, check_types=False)
assert_stream_split_into_groups = _assertion(_time_groups(True))
assert_stream_split_into_groups_wo_index = _assertion(_time_groups(False))
assert_stream_split_into_groups_wo_types = _assertion(_time_groups(True), check_types=False)
assert_stream_split_into_groups_wo_index_types = _assertion(_time_groups(False), check_types=False)


def _pointer(values: tuple) -> int:
    """The id sparkway gives to rows made from these values (``pointer_from``): computed
    by the engine's own function, in Spark, with each value's column type."""
    return _pointer_of_values(tuple(_hashable(v) for v in values))


@functools.lru_cache(maxsize=None)
def _pointer_of_values(values: tuple) -> int:
    from pyspark.sql import types as T

    from sparkway.core import dtypes
    from sparkway.engine.expressions import pointer_of
    from sparkway.engine.spark import get_spark

    kinds = [dtypes.dtype_of_value(v) for v in values]
    # a None (of no type) hashes as nothing, whatever its column's type
    fields = [T.StructField(f"_{i}", T.NullType() if k.name == "Any" else k.spark_type(), True) for i, k in enumerate(kinds)]
    frame = get_spark().createDataFrame([tuple(_spark_value(v) for v in values)], T.StructType(fields))
    return frame.select(pointer_of([frame[f.name] for f in fields]).alias("id")).first()["id"]


def _spark_value(value: Any) -> Any:
    """A Python value as Spark takes it for its column type (tuples are structs)."""
    return tuple(_spark_value(v) for v in value) if isinstance(value, tuple) else value


@dataclasses.dataclass(order=True)
class DiffEntry:
    """One expected change of a table: its row id, its place among the changes of that
    id (``order``), whether it inserts or removes, and the row (column -> value)."""

    key: int
    order: int
    insertion: bool
    row: dict[str, Any]

    @staticmethod
    def create(pk_table: Any, pk_columns: dict[str, Any], order: int, insertion: bool, row: dict[str, Any],
               instance: Any = None) -> "DiffEntry":
        return DiffEntry(DiffEntry.create_id_from(pk_table, pk_columns, instance=instance), order, insertion, row)

    def final_cleanup_entry(self) -> "DiffEntry":
        """The removal of this entry's row, after it."""
        return DiffEntry(self.key, self.order + 1, False, self.row)

    @staticmethod
    def create_id_from(pk_table: Any, pk_columns: dict[str, Any], instance: Any = None) -> int:
        """The id of the row whose key columns have these values (in this order), as
        ``groupby(...).reduce`` gives it (the ``instance`` last)."""
        values = tuple(pk_columns.values())
        return _pointer(values if instance is None else (*values, instance))


class _ExpectedChanges:
    """A subscriber that checks each change of a table against the expected changes of
    its id, taken in (order, insertion) order; ``on_end`` checks that none is left."""

    def __init__(self, expected: list[DiffEntry], skipping: bool) -> None:
        self.skipping = skipping  # expected changes may be missing from the stream
        self.pending: dict[int, collections.deque] = collections.defaultdict(collections.deque)
        for entry in sorted(expected, key=lambda e: (e.order, e.insertion)):
            self.pending[entry.key].append(entry)

    def __call__(self, key: int, row: dict[str, Any], time: int, is_addition: bool) -> None:
        queue = self.pending.get(key)
        assert queue, f"unexpected change of id {key}: {row}, addition={is_addition} at time {time}"
        while True:
            entry = queue.popleft()
            if (entry.insertion, entry.row) == (is_addition, row):
                break
            assert self.skipping and queue, (
                f"change of id {key}: {row}, addition={is_addition} at time {time}; expected "
                f"{entry.row}, addition={entry.insertion}"
            )
        if not queue:
            del self.pending[key]

    def on_end(self) -> None:
        left = {k: list(q) for k, q in self.pending.items() if q}
        assert not left, f"expected changes that did not come: {left}"


def assert_key_entries_in_stream_consistent(expected: list[DiffEntry], table: Any) -> None:
    """Per id, the table's changes are a subsequence of the expected ones ending with the
    last one (checked when the program runs)."""
    check = _ExpectedChanges(expected, skipping=True)
    _pw().io.subscribe(table, check, check.on_end)


def assert_stream_equal(expected: list[DiffEntry], table: Any) -> None:
    """Per id, the table's changes are exactly the expected ones, in order (checked when
    the program runs)."""
    check = _ExpectedChanges(expected, skipping=False)
    _pw().io.subscribe(table, check, check.on_end)


def _markdown_frame(table_def: str) -> pd.DataFrame:
    """The markdown table as a DataFrame of strings (labels, if any, as the index)."""
    lines = [ln.strip() for ln in table_def.strip().splitlines() if ln.strip()]
    rows = [[c.strip() for c in ln.split("|")] if "|" in ln else ln.split() for ln in lines]
    header, body = rows[0], rows[1:]
    if header[0] == "":
        return pd.DataFrame([r[1:] for r in body], columns=header[1:], index=[r[0] for r in body])
    return pd.DataFrame(body, columns=header)


def write_csv(path: str | pathlib.Path, table_def: str, **kwargs: Any) -> None:
    """Writes a markdown table as CSV (with the index column, as ``DataFrame.to_csv``)."""
    _markdown_frame(table_def).to_csv(path, encoding="utf-8", **kwargs)


def write_lines(path: str | pathlib.Path, data: str | list[str]) -> None:
    lines = [data] if isinstance(data, str) else data
    pathlib.Path(path).write_text("".join(line + "\n" for line in lines))


def read_lines(path: str | pathlib.Path) -> list[str]:
    with open(path) as f:
        return f.readlines()


def assert_sets_equality_from_path(path: pathlib.Path, expected: set[str]) -> None:
    """The rows an output CSV holds after adding up its diffs, each as "v1,v2,...,diff"."""
    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        frame = pd.DataFrame()
    totals: collections.Counter = collections.Counter()
    for record in frame.to_dict("records"):
        values = ",".join(str(v) for k, v in record.items() if k not in ("time", "diff"))
        totals[values] += record["diff"]
    assert {f"{values},{n}" for values, n in totals.items() if n} == expected


def remove_ansi_escape_codes(msg: str) -> str:
    return re.sub(r"\x1B(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])", "", msg)


def warns_here(expected_warning: Any = Warning, *, match: Any = None) -> Any:
    """A warning is raised (Pathway also checks it points at the test's line; not here)."""
    return pytest.warns(expected_warning, match=match)


def deprecated_call_here(*, match: Any = None) -> Any:
    return warns_here((DeprecationWarning, PendingDeprecationWarning), match=match)


class ExceptionAwareThread(threading.Thread):
    """A thread whose ``join`` re-raises what its target raised."""

    def run(self) -> None:
        self.exception: BaseException | None = None
        try:
            super().run()
        except BaseException as e:  # noqa: BLE001 - handed to join()
            self.exception = e

    def join(self, timeout: float | None = None) -> None:
        super().join(timeout)
        if getattr(self, "exception", None) is not None:
            raise self.exception  # type: ignore[misc]


def terminate_process(process: Any) -> None:
    process.terminate()
    process.join(30)
    if process.is_alive():
        process.kill()
        process.join(30)


class FileLinesNumberChecker:
    """True once every registered file exists with exactly its number of lines."""

    def __init__(self, path: pathlib.Path, n_lines: int) -> None:
        self.expected = [(pathlib.Path(path), n_lines)]

    def add_path(self, path: pathlib.Path, n_lines: int) -> "FileLinesNumberChecker":
        self.expected.append((pathlib.Path(path), n_lines))
        return self

    def __call__(self) -> bool:
        return all(p.exists() and _count_lines(p) == n for p, n in self.expected)

    def provide_information_on_failure(self) -> str:
        return "; ".join(f"{p}: {_count_lines(p) if p.exists() else 'missing'} line(s), expected {n}"
                         for p, n in self.expected)


def _count_lines(path: pathlib.Path) -> int:
    with open(path, encoding="utf-8", errors="replace") as f:
        return sum(1 for _ in f)


def wait_result_with_checker(checker: Callable[[], bool], timeout_sec: float, *, step: float = 0.1,
                             double_check_interval: float | None = None, target: Any = run,
                             processes: int = 1, first_port: int | None = None, args: Any = (),
                             kwargs: Any = None) -> None:
    """Runs ``target`` (``pw.run``) until ``checker()`` holds, at most ``timeout_sec``, then
    asserts that it held.  The run is in the main thread of this process; a watcher thread
    polls the checker and stops the run with SIGINT (a graceful stop for ``pw.run``).
    With ``target=None`` it only waits for the checker."""
    if processes != 1:
        pytest.fail("wait_result_with_checker with several processes is not supported by sparkway's test helpers")
    held = threading.Event()
    finished = threading.Event()
    lock = threading.Lock()

    def watch() -> None:
        deadline = time.monotonic() + timeout_sec
        while not finished.is_set() and time.monotonic() < deadline:
            finished.wait(step)
            if checker() and (double_check_interval is None or _holds_after(checker, double_check_interval)):
                held.set()
                break
        with lock:
            if target is not None and not finished.is_set():
                os.kill(os.getpid(), signal.SIGINT)

    if target is None:
        watch()
    else:
        watcher = threading.Thread(target=watch, name="wait_result_with_checker", daemon=True)
        watcher.start()
        try:
            target(*args, **(kwargs or {}))
        finally:
            _set_under(lock, finished)
            watcher.join()
    if not held.is_set() and checker():
        held.set()  # the run ended by itself with the result
    information = getattr(checker, "provide_information_on_failure", lambda: "")()
    assert held.is_set(), f"the checker did not hold within {timeout_sec} s. {information}"


def _holds_after(checker: Callable[[], bool], interval: float) -> bool:
    time.sleep(interval)
    return checker()


def _set_under(lock: threading.Lock, event: threading.Event) -> None:
    """Sets ``event`` holding ``lock``; a SIGINT the watcher sent just as the run ended
    is swallowed here instead of interrupting the test."""
    while True:
        try:
            with lock:
                event.set()
            return
        except KeyboardInterrupt:
            continue


def __getattr__(name: str) -> Any:
    from compat.shim import Missing, placeholder_allowed

    if not placeholder_allowed(name):
        raise AttributeError(name)
    return Missing(f"pathway.tests.utils.{name}")
