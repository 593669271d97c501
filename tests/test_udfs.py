"""UDF options: stored results of non-deterministic functions, caches, executors,
timeouts, and the errors user functions raise.

User functions run in Spark's Python workers, so the functions here count their calls in
files, not in variables of the test.  Expected values are worked out by hand; the
replayed deletions, the errors for repeated insertions and the warning were checked
against Pathway 0.33.0.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest
from tables import assert_rows, changes

import sparkway as pw
from sparkway.api import graph
from sparkway.errors import ComputationError

pytestmark = pytest.mark.usefixtures("spark")


def _counter(path: Path):
    """A function returning 1, 2, 3... on successive calls, in any process."""

    def count(_: object) -> int:
        calls = int(path.read_text()) + 1 if path.exists() else 1
        path.write_text(str(calls))
        return calls

    return count


STREAM = """
  | a | __time__ | __diff__
1 | 1 |     2    |     1
1 | 1 |     4    |    -1
1 | 1 |     6    |     1
"""


def test_a_deletion_retracts_the_value_a_non_deterministic_udf_gave_at_insertion(tmp_path: Path) -> None:
    count = _counter(tmp_path / "calls")

    @pw.udf
    def tick(a: int) -> int:
        return count(a)

    t = pw.debug.table_from_markdown(STREAM)
    # inserted with the first call's 1, deleted as 1 (no call), inserted again with 2
    assert changes(t.select(x=tick(pw.this.a))) == [[(1, 1)], [(1, -1)], [(2, 1)]]
    assert (tmp_path / "calls").read_text() == "2"


def test_pw_apply_stores_results_too_but_a_deterministic_udf_is_called_again(tmp_path: Path) -> None:
    count = _counter(tmp_path / "applied")
    t = pw.debug.table_from_markdown(STREAM)
    assert changes(t.select(x=pw.apply(count, pw.this.a))) == [[(1, 1)], [(1, -1)], [(2, 1)]]

    recount = _counter(tmp_path / "deterministic")

    @pw.udf(deterministic=True)
    def tock(a: int) -> int:
        return recount(a)

    # said to be deterministic: the deletion calls it again (2), the insertion too (3)
    assert changes(t.select(x=tock(pw.this.a))) == [[(1, 1)], [(2, -1)], [(3, 1)]]


def test_an_append_only_table_does_not_store_results() -> None:
    t = pw.debug.table_from_markdown("a | __time__\n1 | 2\n2 | 4")
    selected = t.select(x=pw.apply(lambda a: a * 10, pw.this.a))
    assert not selected._node.is_stateful
    assert_rows(selected, [(10,), (20,)])


def test_stored_results_survive_a_restart(tmp_path: Path) -> None:
    count = _counter(tmp_path / "calls")
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.csv").write_text("k\n7\n")

    class S(pw.Schema):
        k: int

    def run() -> list[tuple[int, int, bool]]:
        graph.clear()
        seen: list[tuple[int, int, bool]] = []
        t = pw.io.csv.read(str(data), schema=S, mode="static", retract_when_emptied=True)
        t = t.select(k=pw.this.k, x=pw.udf(lambda k: count(k), return_type=int)(pw.this.k))
        pw.io.subscribe(t, lambda key, row, time, is_addition: seen.append((row["k"], row["x"], is_addition)))
        pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state")))
        return seen

    assert run() == [(7, 1, True)]
    (data / "a.csv").unlink()  # the second run deletes the row: it retracts the stored 1
    assert run() == [(7, 1, False)]
    assert (tmp_path / "calls").read_text() == "1"


def test_a_row_inserted_twice_without_a_deletion_is_an_error() -> None:
    class S(pw.Schema):
        a: int = pw.column_definition(primary_key=True)
        b: int

    t = pw.debug.table_from_markdown(
        """
        a | b | __time__ | __diff__
        1 | 2 |     2    |     1
        2 | 3 |     2    |     1
        1 | 4 |     4    |     1
        2 | 3 |     6    |    -1
        """,
        schema=S,
    )
    t.select(b=pw.udf(lambda x: x + 1, return_type=int)(pw.this.b))
    with pytest.raises(ComputationError, match="Got a second insertion of a row with key"):
        pw.run_all()


def test_a_disk_cache_keeps_results_across_runs(tmp_path: Path) -> None:
    count = _counter(tmp_path / "calls")

    @pw.udf(deterministic=True, cache_strategy=pw.udfs.DiskCache())
    def cached(a: int) -> int:
        count(a)
        return a * 10

    config = pw.persistence.Config(
        pw.persistence.Backend.filesystem(tmp_path / "storage"), persistence_mode=pw.PersistenceMode.UDF_CACHING
    )
    for _ in range(2):  # the second run reads its input again, and finds every result cached
        t = pw.debug.table_from_markdown("a\n1\n2\n2")
        seen = []
        pw.io.subscribe(t.select(r=cached(pw.this.a)), lambda key, row, time, is_addition: seen.append(row["r"]))
        pw.run(persistence_config=config)
        assert sorted(seen) == [10, 20, 20]
        graph.clear()
    assert int((tmp_path / "calls").read_text()) <= 3  # 2 values, computed in the first run only
    assert list((tmp_path / "storage" / "runtime_calls").glob("*.sqlite"))


def test_a_result_larger_than_the_disk_cache_fails_its_row(tmp_path: Path) -> None:
    @pw.udf(deterministic=True, cache_strategy=pw.udfs.DiskCache(size_limit=10))
    def inc(a: int) -> int:
        return a + 1

    pw.debug.table_from_markdown("a\n1").select(r=inc(pw.this.a))
    config = pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "storage"))
    with pytest.raises(KeyError, match="size_limit"):
        pw.run_all(persistence_config=config)


def test_a_plain_function_with_an_async_executor_runs_its_rows_in_threads() -> None:
    # each call waits for the two others: only calls running at once finish
    barrier = threading.Barrier(3, timeout=30)

    @pw.udf(executor=pw.udfs.async_executor())
    def inc(a: int) -> int:
        barrier.wait()
        return a + 3

    t = pw.debug.table_from_markdown("a\n1\n2\n3")
    assert_rows(t.select(r=inc(pw.this.a)), [(4,), (5,), (6,)])


def test_a_user_function_may_hold_a_lock_and_its_exception_class_is_kept() -> None:
    lock = threading.Lock()
    barrier = threading.Barrier(2, timeout=0.2)

    @pw.udf
    def guarded(a: int) -> int:
        with lock:
            return a * 2

    @pw.udf
    def waits(a: int) -> int:
        barrier.wait()  # alone: the barrier breaks
        return a

    t = pw.debug.table_from_markdown("a\n1\n2")
    assert_rows(t.select(r=guarded(pw.this.a)), [(2,), (4,)])
    t.select(r=waits(pw.this.a))
    with pytest.raises(threading.BrokenBarrierError):
        pw.run_all()


def test_an_exception_class_of_a_library_is_the_class_caught() -> None:
    @pw.udf
    def parse(text: str) -> int:
        return json.loads(text)  # json.JSONDecodeError takes other arguments than a message

    pw.debug.table_from_markdown("a\n{bad").select(r=parse(pw.this.a))
    with pytest.raises(json.JSONDecodeError, match="Expecting property name"):
        pw.run_all()


def test_a_call_longer_than_the_timeout_fails_with_timeout_error() -> None:
    @pw.udf(executor=pw.udfs.async_executor(timeout=0.1))
    async def slow(a: int) -> int:
        await asyncio.sleep(5)
        return a

    pw.debug.table_from_markdown("a\n1").select(r=slow(pw.this.a))
    with pytest.raises(TimeoutError):
        pw.run_all()


def test_async_options_make_a_function_for_apply_async(tmp_path: Path) -> None:
    @pw.udfs.async_options(timeout=10.0, capacity=2, cache_strategy=pw.udfs.InMemoryCache())
    def inc(x: int) -> int:
        return x + 1

    t = pw.debug.table_from_markdown("a\n1\n2\n2")
    assert_rows(t.select(r=pw.apply_async(inc, pw.this.a)), [(2,), (3,), (3,)])


def test_run_async_works_inside_a_running_event_loop() -> None:
    from sparkway.api.udfs import _run_async

    async def answer() -> int:
        return 42

    async def fails() -> None:
        raise ValueError("boom")

    async def main() -> None:
        assert _run_async(answer()) == 42
        with pytest.raises(ValueError, match="boom"):
            _run_async(fails())

    asyncio.run(main())


def test_a_return_type_narrower_than_the_annotation_warns() -> None:
    @pw.udf(return_type=int)
    def f(a: int) -> int | None:
        return a

    with pytest.warns(Warning, match=r"return_type parameter \(<class 'int'>\) is inconsistent"):
        f(pw.this.a)


def test_iterating_a_column_expression_says_what_to_do() -> None:
    t = pw.debug.table_from_markdown("a\n1")
    with pytest.raises(TypeError, match=r"is not iterable.*pw\.apply"):
        list(t.a)


def test_a_row_deleted_twice_at_once_is_an_error() -> None:
    class S(pw.Schema):
        a: int = pw.column_definition(primary_key=True)
        b: int

    t = pw.debug.table_from_markdown(
        """
        a | b | __time__ | __diff__
        1 | 2 |     2    |     1
        1 | 2 |     6    |    -1
        1 | 2 |     6    |    -1
        """,
        schema=S,
    )
    t.select(b=pw.udf(lambda x: x + 1, return_type=int)(pw.this.b))
    with pytest.raises(ComputationError, match="Got more deletions of a row with key"):
        pw.run_all()


def test_a_function_called_on_no_column_is_refused() -> None:
    # Pathway asserts that an applied function has an argument
    def one() -> int:
        return 1

    for call in (lambda: pw.apply(one), lambda: pw.udf(one)(), lambda: pw.apply_with_type(one, int)):
        with pytest.raises(AssertionError, match="one is called on no column"):
            call()
