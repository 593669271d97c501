"""numpy array columns (Pathway's ``Array`` type): their types, ``@``, indexing,
``flatten``, ``pw.reducers.ndarray`` and arrays in and out of user functions.

Expected types and values were recorded by running the same programs on Pathway 0.33
(the oracle); where ids decide an order (the ids of both differ), tests compare what
does not depend on it.
"""

from __future__ import annotations

import typing

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest

import sparkway as pw
from sparkway.core import dtypes as dt

pytestmark = pytest.mark.usefixtures("spark")


def arrays(table: pw.Table, column: str, order_by: str | None = None) -> list[tuple]:
    """A column's arrays as (dtype, shape, values) triples, in ``order_by``'s order."""
    frame = pw.debug.table_to_pandas(table)
    if order_by is not None:
        frame = frame.sort_values(order_by)
    out = []
    for value in frame[column]:
        assert isinstance(value, np.ndarray), value
        out.append((value.dtype.name, value.shape, value.tolist()))
    return out


def test_annotations_give_array_types():
    # as pw.internals.dtype.wrap gives them in Pathway 0.33
    assert dt.dtype_of(np.ndarray) == dt.ANY_ARRAY
    assert dt.dtype_of(np.ndarray[typing.Any, np.dtype[np.float64]]) == dt.Array(None, dt.FLOAT)
    assert dt.dtype_of(npt.NDArray[np.int64]) == dt.INT_ARRAY
    assert dt.dtype_of(np.ndarray[tuple[int, int], np.dtype[np.int64]]) == dt.INT_ARRAY_2D
    assert dt.dtype_of(np.ndarray[None, float]) == dt.Array(0, dt.FLOAT)
    assert dt.dtype_of(typing.Optional[np.ndarray]) == dt.ANY_ARRAY.with_optional()
    assert str(dt.Array(2, int)) == "Array(2, int)"


def test_pandas_arrays_keep_dimensions_and_element_types():
    df = pd.DataFrame({
        "a": [np.array([1, 2]), np.array([[1, 2], [3, 4]])],
        "f": [np.array([1.0, 2.0]), np.array([3.0])],
        "m": [np.array([1, 2], dtype=np.int32), np.array([1.5], dtype=np.float32)],
        "i": [0, 1],
    })
    t = pw.debug.table_from_pandas(df)
    # Pathway: a is Array(INT) (dimensions differ), f Array(1, FLOAT), m Array(1) (elements differ)
    assert t.schema._dtypes()["a"] == dt.Array(None, dt.INT)
    assert t.schema._dtypes()["f"] == dt.Array(1, dt.FLOAT)
    assert t.schema._dtypes()["m"] == dt.Array(1)
    assert arrays(t, "a", "i") == [("int64", (2,), [1, 2]), ("int64", (2, 2), [[1, 2], [3, 4]])]
    # int32 and float32 arrays come back as int64 and float64 ones, as in Pathway
    assert arrays(t, "m", "i") == [("int64", (2,), [1, 2]), ("float64", (1,), [1.5])]


def test_matrix_multiplication_follows_numpy():
    pairs = [
        (np.array([1, 2]), np.array([3, 4])),
        (np.array([1.0, 2.0]), np.array([3.0, 4.0])),
        (np.array([[1, 2]]), np.array([3, 4])),
        (np.array([1, 2]), np.array([[1], [2]])),
        (np.ones(0), np.ones(0)),
        (np.zeros((0, 0), dtype=int), np.zeros((0, 2), dtype=int)),
        (np.array([[1, 2], [3, 4]]), np.array([[1, 0], [0, 2]])),
    ]
    t = pw.debug.table_from_pandas(
        pd.DataFrame({"a": [a for a, _ in pairs], "b": [b for _, b in pairs], "i": range(len(pairs))})
    )
    result = t.select(pw.this.i, c=t.a @ t.b)
    assert result.schema._dtypes()["c"] == dt.ANY_ARRAY
    # the oracle's results: vector @ vector is a 0-dimensional array
    assert arrays(result, "c", "i") == [
        ("int64", (), 11),
        ("float64", (), 11.0),
        ("int64", (1,), [11]),
        ("int64", (1,), [5]),
        ("float64", (), 0.0),
        ("int64", (0, 2), []),
        ("int64", (2, 2), [[1, 4], [3, 8]]),
    ]


@pytest.mark.parametrize(
    "a, b",
    [(np.zeros((2, 3)), np.zeros((2, 3))), (np.zeros(3), np.zeros(())), (np.array([1, 2]), np.array([1.0, 2.0]))],
)
def test_matrix_multiplication_of_unfit_arrays_is_a_value_error(a, b):
    t = pw.debug.table_from_pandas(pd.DataFrame({"a": [a], "b": [b]}))
    with pytest.raises(ValueError):  # Pathway: ValueError, also for int @ float
        pw.debug.table_to_pandas(t.select(c=t.a @ t.b))


def test_arrays_take_no_elementwise_operators():
    t = pw.debug.table_from_pandas(pd.DataFrame({"a": [np.array([1, 2])]}))
    for expression in (t.a + t.a, t.a * 2, t.a < t.a):  # Pathway rejects these too
        with pytest.raises(TypeError, match="arrays take == and !="):
            t.select(c=expression)
    with pytest.raises(TypeError):
        t.select(c=-t.a)
    optional = t.select(a=pw.declare_type(typing.Optional[np.ndarray], t.a))
    with pytest.raises(TypeError):
        optional.select(c=optional.a @ optional.a)


def test_indexing_gives_rows_and_elements():
    t = pw.debug.table_from_pandas(pd.DataFrame({
        "v": [np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0])],
        "m": [np.array([[1, 2, 3], [4, 5, 6]]), np.array([[4, 5], [6, 7]])],
        "i": [0, 1],
    }))
    result = t.select(pw.this.i, last=t.v[-1], second=t.v.get(2, default=-1.0), row=t.m[1])
    # Pathway: FLOAT, FLOAT, Array(1, INT)
    assert result.schema._dtypes()["last"] == dt.FLOAT
    assert result.schema._dtypes()["second"] == dt.FLOAT
    assert result.schema._dtypes()["row"] == dt.INT_ARRAY_1D
    frame = pw.debug.table_to_pandas(result).sort_values("i")
    assert frame["last"].tolist() == [3.0, 5.0]
    assert frame["second"].tolist() == [3.0, -1.0]
    assert arrays(result, "row", "i") == [("int64", (3,), [4, 5, 6]), ("int64", (2,), [6, 7])]


def test_index_out_of_range_is_an_index_error():
    t = pw.debug.table_from_pandas(pd.DataFrame({"v": [np.array([1, 2])], "k": [2]}))
    with pytest.raises(IndexError):
        pw.debug.table_to_pandas(t.select(x=t.v[t.k]))


def test_flatten_gives_elements_or_rows():
    t = pw.debug.table_from_pandas(pd.DataFrame({
        "v": [np.array([1, 2]), np.array([], dtype=int), np.array([3])],
        "m": [np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[5.0, 6.0]]), np.array([[7.0, 8.0]])],
        "k": [1, 2, 3],
    }))
    flat = t.flatten(t.v)
    assert flat.schema._dtypes()["v"] == dt.INT  # Pathway: INT from Array(1, INT)
    assert sorted(pw.debug.table_to_pandas(flat)[["v", "k"]].itertuples(index=False, name=None)) == [
        (1, 1), (2, 1), (3, 3)
    ]
    rows = t.flatten(t.m)
    assert rows.schema._dtypes()["m"] == dt.FLOAT_ARRAY_1D  # Pathway: Array(1, FLOAT) from Array(2, FLOAT)
    assert sorted(v for _, _, v in arrays(rows, "m")) == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]


def test_ndarray_reducer_collects_values_into_arrays():
    t = pw.debug.table_from_markdown(
        """
           | colA | colB | colD | colF
        1  | valA | -1   |  4   | 1.5
        2  | valA |  1   |  7   | 2
        3  | valA |  2   | -3   | 3
        4  | valB |  4   |      | 4
        5  | valB |  4   |  6   | 5
        6  | valB |  7   |  1   | 6
        """
    )
    result = t.groupby(t.colA).reduce(
        t.colA,
        b=pw.reducers.ndarray(t.colB),
        d=pw.reducers.ndarray(t.colD, skip_nones=True),
        f=pw.reducers.ndarray(t.colF),
    )
    assert result.schema._dtypes()["b"] == dt.ANY_ARRAY  # Pathway: Array
    frame = pw.debug.table_to_pandas(result).set_index("colA")
    # the oracle's arrays, up to their order (which follows row ids, and ids differ)
    assert sorted(frame.loc["valA", "b"].tolist()) == [-1, 1, 2]
    assert sorted(frame.loc["valB", "d"].tolist()) == [1, 6]
    assert frame.loc["valB", "b"].dtype == np.int64 and frame.loc["valA", "f"].dtype == np.float64
    # one order for every reducer of a groupby: colF follows colB row by row
    for group in ("valA", "valB"):
        pairs = sorted(zip(frame.loc[group, "b"].tolist(), frame.loc[group, "f"].tolist()))
        assert pairs == {"valA": [(-1, 1.5), (1, 2.0), (2, 3.0)], "valB": [(4, 4.0), (4, 5.0), (7, 6.0)]}[group]


def test_ndarray_reducer_stacks_arrays():
    t = pw.debug.table_from_markdown(
        """
        a | b | val
        0 | 0 | 1
        0 | 0 | 2
        0 | 1 | 3
        0 | 1 | 4
        """
    )
    inner = t.groupby(pw.this.a, pw.this.b).reduce(pw.this.a, v=pw.reducers.ndarray(pw.this.val))
    outer = inner.groupby(pw.this.a).reduce(v=pw.reducers.ndarray(pw.this.v))
    [(kind, shape, values)] = arrays(outer, "v")
    assert (kind, shape) == ("int64", (2, 2))
    assert sorted(sorted(row) for row in values) == [[1, 2], [3, 4]]


def test_sum_of_arrays_is_element_wise():
    t = pw.debug.table_from_pandas(pd.DataFrame({
        "g": [1, 1, 2, 3, 3],
        "data": [np.array([1, 2, 3]), np.array([4, 5, 6]), np.array([7, 8, 9]), np.array([0.5, 1.0]), np.array([0.25, 2.0])],
    }))
    sums = t.groupby(pw.this.g).reduce(pw.this.g, s=pw.reducers.sum(pw.this.data))
    got = {g: (s.dtype.name, s.tolist()) for g, s in pw.debug.table_to_pandas(sums)[["g", "s"]].itertuples(index=False)}
    assert got == {1: ("int64", [5, 7, 9]), 2: ("int64", [7, 8, 9]), 3: ("float64", [0.75, 3.0])}


def test_ndarray_reducer_takes_numbers_and_arrays_only():
    t = pw.debug.table_from_markdown("s | n\na | 1\nb |")
    with pytest.raises(TypeError):
        t.reduce(x=pw.reducers.ndarray(t.s))
    with pytest.raises(TypeError, match="skip_nones"):
        t.reduce(x=pw.reducers.ndarray(t.n))


def test_arrays_in_schemas_and_user_functions():
    class Schema(pw.Schema):
        a: int
        v: np.ndarray

    t = pw.debug.table_from_rows(Schema, [(1, np.array([1, 1, 1])), (2, np.array([[1.5]]))])

    @pw.udf
    def doubled(x: np.ndarray) -> npt.NDArray[np.float64]:
        return x * 2.0

    result = t.select(pw.this.a, w=doubled(pw.this.v), same=pw.this.v == pw.this.v)
    assert result.schema._dtypes()["w"] == dt.FLOAT_ARRAY
    assert arrays(result, "w", "a") == [("float64", (3,), [2.0, 2.0, 2.0]), ("float64", (1, 1), [[3.0]])]
    assert pw.debug.table_to_pandas(result)["same"].tolist() == [True, True]


def test_groupby_sort_by_orders_tuples_and_arrays():
    t = pw.debug.table_from_markdown(
        """
        a | v | k
        0 | 1 | 3
        0 | 2 | 1
        0 | 3 | 2
        0 | 4 | 0
        """
    )
    result = t.groupby(pw.this.a, sort_by=pw.this.k).reduce(
        tu=pw.reducers.tuple(pw.this.v), nd=pw.reducers.ndarray(pw.this.v)
    )
    frame = pw.debug.table_to_pandas(result)
    # the oracle: (4, 2, 3, 1) and [4 2 3 1], the values in the order of k
    assert frame["tu"].tolist() == [(4, 2, 3, 1)]
    assert arrays(result, "nd") == [("int64", (4,), [4, 2, 3, 1])]


def test_float_array_columns_take_int_arrays():
    class Floats(pw.Schema):
        v: npt.NDArray[np.float64]

    class Ints(pw.Schema):
        v: npt.NDArray[np.int64]

    # Pathway: an int array in a float array column becomes a float array ...
    t = pw.debug.table_from_rows(Floats, [(np.array([1, 2]),)])
    assert arrays(t, "v") == [("float64", (2,), [1.0, 2.0])]
    # ... and a float array in an int array column is a TypeError
    with pytest.raises(TypeError):
        pw.debug.table_from_rows(Ints, [(np.array([1.5]),)])


def test_arrays_written_as_shape_and_elements(tmp_path):
    t = pw.debug.table_from_pandas(
        pd.DataFrame({"a": [np.array([1, 2]), np.array([[1.5, 2.0], [3.0, 4.0]])], "k": [1, 2]})
    )
    pw.io.jsonlines.write(t, str(tmp_path / "out.jsonl"))
    pw.io.csv.write(t, str(tmp_path / "out.csv"))
    pw.run()
    # the oracle writes {"shape": [...], "elements": [...]} in both formats
    lines = sorted((tmp_path / "out.jsonl").read_text().splitlines())
    assert [line.split(',"k"')[0] for line in lines] == [
        '{"a":{"shape":[2,2],"elements":[1.5,2.0,3.0,4.0]}',
        '{"a":{"shape":[2],"elements":[1,2]}',
    ]
    csv_lines = sorted((tmp_path / "out.csv").read_text().splitlines()[1:])
    assert [line.rsplit(",", 3)[0] for line in csv_lines] == [
        '"{""shape"":[2,2],""elements"":[1.5,2.0,3.0,4.0]}"',
        '"{""shape"":[2],""elements"":[1,2]}"',
    ]
