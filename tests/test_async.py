"""Asynchronous and batched user functions: ``pw.udf`` of coroutine functions and with
``max_batch_size``, and ``pw.AsyncTransformer``.

Expected rows are worked out by hand; the AsyncTransformer's statuses, column order and
types were checked against Pathway 0.33.0 (same program, same results).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tables import assert_rows

import sparkway as pw
from sparkway.errors import ComputationError

pytestmark = pytest.mark.usefixtures("spark")


def test_async_udf_awaits_the_rows_of_a_batch_concurrently():
    # each call waits for the other two: only concurrent calls can finish
    barrier = asyncio.Barrier(3)

    @pw.udf
    async def inc(a: int) -> int:
        await asyncio.wait_for(barrier.wait(), 30)
        return a + 3

    t = pw.debug.table_from_markdown("a\n1\n2\n3")
    assert_rows(t.select(r=inc(pw.this.a)), [(4,), (5,), (6,)])


def test_batch_udf_gets_chunks_of_at_most_max_batch_size_rows():
    # the function returns each row's a + b and the size of the chunk it came in:
    # 5 rows in chunks of at most 2 are chunks of 2, 2 and 1
    @pw.udf(max_batch_size=2)
    def add(a: list[int], b: list[int]) -> list[tuple[int, int]]:
        return [(x + y, len(a)) for x, y in zip(a, b)]

    @pw.udf(max_batch_size=2)
    async def add_async(a: list[int], b: list[int]) -> list[int]:
        return [x + y for x, y in zip(a, b)]

    t = pw.debug.table_from_markdown("a | b\n1 | 1\n2 | 0\n3 | 1\n4 | 0\n5 | 1")
    result = t.select(s=add(pw.this.a, pw.this.b), t=add_async(pw.this.a, pw.this.b))
    sums = sorted(r[0][0] for r in _final(result))
    sizes = sorted(r[0][1] for r in _final(result))
    assert sums == [2, 2, 4, 4, 6]
    assert sizes == [1, 2, 2, 2, 2]
    assert sorted(r[1] for r in _final(result)) == [2, 2, 4, 4, 6]


def test_batch_udf_returning_too_few_rows_fails_the_step():
    @pw.udf(max_batch_size=16, return_type=int)
    def short(a: list[int]) -> list[int]:
        return a[:-1]

    t = pw.debug.table_from_markdown("a\n1\n2\n3")
    with pytest.raises(ComputationError, match=r"number of rows produced by a UDF \(2\) is different .* \(3\)"):
        pw.debug.table_to_pandas(t.select(r=short(pw.this.a)))


def test_async_udf_with_none_and_propagate_none():
    @pw.udf
    async def add(a: int | None, b: int | None) -> int | None:
        return None if a is None or b is None else a + b

    @pw.udf(propagate_none=True)
    async def double(a: int) -> int:
        return 2 * a

    t = pw.debug.table_from_markdown("a | b\n1 | 6\n2 |\n  | 8")
    result = t.select(s=add(pw.this.a, pw.this.b), d=double(pw.this.a))
    assert_rows(result, [(7, 2), (None, 4), (None, None)])


def _Transformer(**kwargs: Any) -> pw.AsyncTransformer:  # noqa: N802 - used as the class
    # defined in a function: the Python workers get the class by value (this test
    # module is not importable there)
    class Output(pw.Schema):
        ret: int
        s: str

    class Transformer(pw.AsyncTransformer, output_schema=Output):
        async def invoke(self, value: int, instance: int) -> dict[str, Any]:
            await asyncio.sleep(0.01)
            if value == 2:
                raise ValueError("two")
            if value == 5:
                return {"ret": value}  # a column missing: a failure
            return {"ret": value + 1, "s": str(value)}

    return Transformer(**kwargs)


_ROWS = """
  | value | instance
1 | 1     | 1
2 | 2     | 1
3 | 3     | 2
4 | 5     | 3
5 | 6     | 4
"""


def test_async_transformer_statuses_and_tables():
    t = pw.debug.table_from_markdown(_ROWS)
    transformer = _Transformer(input_table=t)
    assert transformer.finished.column_names() == ["_async_status", "ret", "s"]
    assert [str(k) for k in transformer.successful.schema._dtypes().values()] == ["int", "str"]
    assert [str(k) for k in transformer.failed.schema._dtypes().values()] == ["Optional[int]", "Optional[str]"]
    assert_rows(transformer.finished, [
        ("-FAILURE-", None, None), ("-FAILURE-", None, None), ("-SUCCESS-", 2, "1"),
        ("-SUCCESS-", 4, "3"), ("-SUCCESS-", 7, "6"),
    ])
    # rows keep the ids of the input rows
    assert set(pw.debug.table_to_pandas(transformer.successful).index) < set(pw.debug.table_to_pandas(t).index)


def test_async_transformer_failure_fails_its_instance():
    t = pw.debug.table_from_markdown(_ROWS)
    transformer = _Transformer(input_table=t, instance=pw.this.instance)
    # value 2 fails instance 1, so value 1 fails with it
    assert_rows(transformer.successful, [(4, "3"), (7, "6")])
    assert_rows(transformer.failed, [(None, None)] * 3)


def test_async_transformer_checks_its_arguments():
    t = pw.debug.table_from_markdown("value | instance | other\n1 | 2 | 3")
    with pytest.raises(TypeError, match="Input table has a column 'other' but it is not present"):
        _Transformer(input_table=t)
    with pytest.raises(TypeError, match="Column 'instance' is present on the argument list"):
        _Transformer(input_table=t.select(pw.this.value))


def _final(table: pw.Table) -> list[tuple]:
    frame = pw.debug.table_to_pandas(table)
    return [tuple(r) for r in frame.itertuples(index=False)]


def test_fully_async_results_are_futures_until_awaited():
    # messages as Pathway 0.33.0 gives them (recorded from the oracle)
    @pw.udf(executor=pw.udfs.fully_async_executor())
    async def inc(a: int) -> int:
        return a + 1

    t = pw.debug.table_from_markdown("a\n1\n2").with_columns(ret=inc(pw.this.a))
    with pytest.raises(TypeError, match=r"binary operator add on columns of types _asyncio\.Future\[int\], <class 'int'>"):
        t.select(r=pw.this.ret + 1)
    with pytest.raises(TypeError, match=r"Using column of type _asyncio\.Future\[int\] is not allowed here"):
        t.groupby(pw.this.ret)
    with pytest.raises(TypeError, match=r"Cannot perform pathway\.reducers\.sum when column of type _asyncio\.Future"):
        t.reduce(s=pw.reducers.sum(pw.this.ret))
    chained = t.select(r=inc(pw.this.ret))  # a fully async UDF takes another's future
    assert_rows(t.await_futures().select(r=pw.this.ret * 10), [(20,), (30,)])
    assert_rows(chained.await_futures(), [(3,), (4,)])
