"""Expressions against expected tables: column references, operators, functions,
``pw.apply``/``pw.udf``, the ``.str``/``.dt`` namespaces and JSON access.

Each test builds small input tables with ``pw.debug.table_from_markdown`` and compares the
final contents (``pw.debug.table_to_pandas``) with rows worked out by hand.  Several
checks share one ``select`` where that is natural: every computation is a Spark run.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Optional

import pandas as pd
import pytest
from tables import assert_rows

import sparkway as pw

pytestmark = pytest.mark.usefixtures("spark")


# -- column references -----------------------------------------------------------------------

def test_this_table_column_and_item_references():
    t = pw.debug.table_from_markdown(
        """
          | a | b
        1 | 1 | 10
        2 | 2 | 20
        """
    )
    result = t.select(pw.this.a, t.b, c=pw.this["a"] + t["b"], d=t.a * 100)
    assert result.column_names() == ["a", "b", "c", "d"]
    assert_rows(result, [(1, 10, 11, 100), (2, 20, 22, 200)])


def test_select_keeps_ids_and_star_expansion():
    t = pw.debug.table_from_markdown(
        """
          | a | b
        1 | 1 | 10
        2 | 2 | 20
        """
    )
    result = t.select(*pw.this, e=pw.this.a - 1)
    before = pw.debug.table_to_pandas(t)
    after = pw.debug.table_to_pandas(result)
    assert sorted(after.index) == sorted(before.index)
    assert {i: (r.a, r.b, r.e) for i, r in after.iterrows()} == {i: (r.a, r.b, r.a - 1) for i, r in before.iterrows()}


def test_column_of_another_table_is_rejected():
    a = pw.debug.table_from_markdown("x\n1")
    b = pw.debug.table_from_markdown("y\n2\n3")  # other ids (tables with the same ids share them)
    with pytest.raises(ValueError, match="Its universe is different"):
        a.select(z=b.y)
    # a filter may lack rows of its input: its columns are not the input's
    with pytest.raises(ValueError, match="Its universe is different"):
        a.select(a.x, z=a.filter(pw.this.x > 5).x)


def test_columns_of_tables_with_the_same_ids_are_read_row_by_row():
    t = pw.debug.table_from_markdown("a | b\n1 | 10\n2 | 20\n3 | 30")
    doubled = t.select(c=pw.this.a * 100)
    assert_rows(t.select(t.a, doubled.c, s=t.b + doubled.c), [(1, 100, 110), (2, 200, 220), (3, 300, 330)])
    assert_rows(t + doubled, [(1, 10, 100), (2, 20, 200), (3, 30, 300)])
    # a filtered table's rows are among its input's, and a sorted table's are its input's
    big = t.filter(pw.this.a > 1)
    ordered = t.sort(key=pw.this.b)
    assert_rows(big.select(big.a, doubled.c, has_prev=ordered.prev.is_not_none()), [(2, 200, True), (3, 300, True)])
    # rows labelled by their positions 0, 1, 2 have the ids of t's rows: promised, they are one universe
    names = pw.debug.table_from_markdown("  | name\n0 | x\n1 | y\n2 | z")
    pw.universes.promise_are_equal(t, names)
    assert_rows(t.select(t.a, names.name), [(1, "x"), (2, "y"), (3, "z")])


# -- arithmetic ----------------------------------------------------------------------------------

def test_int_power_is_exact_and_wraps_around_and_shifts_take_the_count_modulo_64():
    t = pw.debug.table_from_markdown(
        """
        a  | b
        3  | 39
        2  | 63
        3  | 40
        -1 | 63
        2  | -1
        -1 | -3
        1  | 64
        """
    )
    result = t.select(pw.this.a, pw.this.b, p=pw.this.a ** pw.this.b, l=pw.this.a << 3, r=pw.this.a >> 1)

    def wrapped(value: int) -> int:  # 64-bit two's complement, as Pathway's ints
        return (value + 2**63) % 2**64 - 2**63

    def power(a: int, b: int) -> int:  # a negative exponent: the integer part of 1 / a**-b
        return wrapped(a**b) if b >= 0 else int(1 / a**-b)

    expected = [(a, b, power(a, b), a * 8, a >> 1) for a, b in
                [(3, 39), (2, 63), (3, 40), (-1, 63), (2, -1), (-1, -3), (1, 64)]]
    assert_rows(result, expected)
    assert power(3, 40) == -6289078614652622815  # as Pathway 0.33 prints it
    shifted = pw.debug.table_from_markdown("a | n\n1 | 64\n1 | 63").select(l=pw.this.a << pw.this.n)
    assert_rows(shifted, [(1,), (-(2**63),)])  # a count of 64 shifts by 0, as in Pathway
    with pytest.raises(TypeError):
        t.select(s=pw.this.a << 1.5)


def test_int_arithmetic_with_python_semantics_for_negatives():
    t = pw.debug.table_from_markdown(
        """
        a  | b
        7  | 2
        -7 | 2
        7  | -2
        -7 | -2
        """
    )
    result = t.select(
        pw.this.a, pw.this.b,
        add=pw.this.a + pw.this.b, sub=pw.this.a - pw.this.b, mul=pw.this.a * pw.this.b,
        div=pw.this.a / pw.this.b, fdiv=pw.this.a // pw.this.b, mod=pw.this.a % pw.this.b,
        sq=pw.this.a ** 2, cube=pw.this.b ** 3, neg=-pw.this.a, ab=abs(pw.this.a),
        radd=1 + pw.this.a, rsub=10 - pw.this.a, rdiv=1 / pw.this.b, rmod=9 % pw.this.b,
    )
    types = result.schema._dtypes()
    assert str(types["div"]) == "float" and str(types["rdiv"]) == "float"  # int / int is float
    assert {str(types[c]) for c in ("add", "sub", "mul", "fdiv", "mod", "sq", "cube", "neg", "rmod")} == {"int"}
    assert_rows(result, [
        (7, 2, 9, 5, 14, 3.5, 3, 1, 49, 8, -7, 7, 8, 3, 0.5, 1),
        (-7, 2, -5, -9, -14, -3.5, -4, 1, 49, 8, 7, 7, -6, 17, 0.5, 1),
        (7, -2, 5, 9, -14, -3.5, -4, -1, 49, -8, -7, 7, 8, 3, -0.5, -1),
        (-7, -2, -9, -5, 14, 3.5, 3, -1, 49, -8, 7, 7, -6, 17, -0.5, -1),
    ])


def test_float_and_mixed_arithmetic():
    t = pw.debug.table_from_markdown(
        """
        x    | y    | n
        7.5  | 2.0  | 1
        -7.5 | 2.0  | 2
        7.5  | -2.0 | 3
        """
    )
    result = t.select(
        pw.this.x, fdiv=pw.this.x // pw.this.y, mod=pw.this.x % pw.this.y,
        mixed=pw.this.x + pw.this.n, half=pw.this.n / 2, pw_=pw.this.y ** 2,
    )
    assert {str(result.schema._dtypes()[c]) for c in ("fdiv", "mod", "mixed", "half", "pw_")} == {"float"}
    assert_rows(result, [
        (7.5, 3.0, 1.5, 8.5, 0.5, 4.0),
        (-7.5, -4.0, 0.5, -5.5, 1.0, 4.0),
        (7.5, -4.0, -0.5, 10.5, 1.5, 4.0),
    ])


def test_float_modulo_is_python_s_exactly():
    # Python's % (fmod, moved by the divisor when the signs differ) rounds once; computing
    # ((a % b) + b) % b rounds twice (-0.24548424000000002 for the first row)
    t = pw.debug.table_from_markdown(
        """
        x           | y
        -0.24548424 | -0.56365047
        -0.33810194 | 0.52811729
        5.5         | -2.0
        """
    )
    rows = [(x, y) for x, y in [(-0.24548424, -0.56365047), (-0.33810194, 0.52811729), (5.5, -2.0)]]
    assert_rows(t.select(m=pw.this.x % pw.this.y), [(x % y,) for x, y in rows])


def test_and_or_evaluate_their_right_side_only_where_needed():
    t = pw.debug.table_from_markdown(
        """
        a | b
        1 | 0
        3 | 2
        6 | 3
        """
    )
    result = t.select(
        x=(pw.this.b != 0) & (pw.this.a // pw.this.b > 1),
        y=(pw.this.b == 0) | (pw.this.a // pw.this.b > 1),
    )
    assert_rows(result, [(False, True), (False, False), (True, True)])


def test_tuples_order_only_without_optional_items_and_compare_only_like_items():
    # Pathway's build-time errors, recorded with Pathway 0.33
    t = pw.debug.table_from_markdown(
        """
        a | b
        1 | x
        """
    ).with_columns(n=pw.if_else(pw.this.a == 1, None, pw.this.a))
    with pytest.raises(TypeError, match=r"binary operator lt on columns of types tuple\[int \| None\], tuple\[int\]\."):
        t.select(z=pw.make_tuple(pw.this.n) < pw.make_tuple(pw.this.a))
    with pytest.raises(TypeError, match=r"binary operator eq on columns of types tuple\[int, int\], tuple\[int, str\]\."):
        t.select(z=pw.make_tuple(pw.this.a, pw.this.a) == pw.make_tuple(pw.this.a, pw.this.b))
    same = t.select(z=pw.make_tuple(pw.this.n) == pw.make_tuple(pw.this.n))  # equality takes None
    assert_rows(same, [(True,)])


def test_duration_division_by_zero_is_zero_division_error():
    t = pw.debug.table_from_markdown(
        """
        s | z
        5 | 0
        """
    ).select(d=pw.this.s * dt.timedelta(seconds=1), zero=pw.this.z * dt.timedelta(seconds=1), z=pw.this.z)
    for result in (t.select(q=pw.this.d // pw.this.zero), t.select(q=pw.this.d % pw.this.zero),
                   t.select(q=pw.this.d // pw.this.z)):
        with pytest.raises(ZeroDivisionError):
            pw.debug.table_to_pandas(result)


def test_string_concatenation_and_repetition():
    t = pw.debug.table_from_markdown(
        """
        s  | n
        ab | 2
        c  | 3
        """
    )
    assert_rows(t.select(cat=pw.this.s + "!", rep=pw.this.s * pw.this.n), [("ab!", "abab"), ("c!", "ccc")])


# -- comparison and boolean ---------------------------------------------------------------------

def test_comparisons_on_ints_and_strings():
    t = pw.debug.table_from_markdown(
        """
        a | b | s
        1 | 2 | apple
        2 | 2 | pear
        3 | 2 | fig
        """
    )
    result = t.select(
        pw.this.a,
        eq=pw.this.a == pw.this.b, ne=pw.this.a != pw.this.b, lt=pw.this.a < pw.this.b,
        le=pw.this.a <= pw.this.b, gt=pw.this.a > pw.this.b, ge=pw.this.a >= pw.this.b,
        s_lt=pw.this.s < "fig", s_eq=pw.this.s == "pear",
    )
    assert_rows(result, [
        (1, False, True, True, True, False, False, True, False),
        (2, True, False, False, True, False, True, False, True),
        (3, False, True, False, False, True, True, False, False),
    ])


def test_boolean_and_or_not_xor():
    t = pw.debug.table_from_markdown(
        """
        p     | q
        True  | True
        True  | False
        False | True
        False | False
        """
    )
    result = t.select(
        pw.this.p, pw.this.q, both=pw.this.p & pw.this.q, either=pw.this.p | pw.this.q,
        notp=~pw.this.p, xor=pw.this.p ^ pw.this.q, mixed=(pw.this.p | pw.this.q) & ~pw.this.q,
    )
    assert_rows(result, [
        (True, True, True, True, False, False, False),
        (True, False, False, True, False, True, True),
        (False, True, False, True, True, True, False),
        (False, False, False, False, True, False, False),
    ])


def test_expression_has_no_truth_value():
    with pytest.raises(TypeError, match="truth value"):
        bool(pw.this.a > 1)


# -- conditionals and None handling ------------------------------------------------------------------

OPTIONALS = """
    a  | x    | y
    1  | 10   | 100
    -2 |      | 200
    3  |      |
    """


def test_if_else():
    t = pw.debug.table_from_markdown(OPTIONALS)
    result = t.select(
        pw.this.a,
        absolute=pw.if_else(pw.this.a >= 0, pw.this.a, -pw.this.a),
        sign=pw.if_else(pw.this.a > 0, "pos", "neg"),
        widened=pw.if_else(pw.this.a > 0, pw.this.a, 0.5),  # int and float unify to float
        maybe=pw.if_else(pw.this.a > 0, pw.this.x, None),
    )
    assert str(result.schema._dtypes()["widened"]) == "float"
    assert result.schema._dtypes()["maybe"].optional
    assert_rows(result, [(1, 1, "pos", 1.0, 10), (-2, 2, "neg", 0.5, None), (3, 3, "pos", 3.0, None)])


def test_coalesce_require_is_none():
    t = pw.debug.table_from_markdown(OPTIONALS)
    result = t.select(
        pw.this.a,
        first=pw.coalesce(pw.this.x, pw.this.y, 0),
        fill=pw.this.x.num.fill_na(-1),
        req=pw.require(pw.this.a * 2, pw.this.x),
        none=pw.this.x.is_none(),
        some=pw.this.y.is_not_none(),
    )
    types = result.schema._dtypes()
    assert not types["first"].optional  # the last argument is never None
    assert types["req"].optional
    assert_rows(result, [
        (1, 10, 10, 2, False, True),
        (-2, 200, -1, None, True, True),
        (3, 0, -1, None, True, False),
    ])


def test_unwrap_removes_optional_and_fails_on_none():
    t = pw.debug.table_from_markdown(OPTIONALS)
    present = t.filter(pw.this.x.is_not_none()).select(u=pw.unwrap(pw.this.x))
    assert not present.schema._dtypes()["u"].optional
    assert_rows(present, [(10,)])
    with pytest.raises(Exception, match="unwrap"):
        pw.debug.table_to_pandas(t.select(u=pw.unwrap(pw.this.x)))


# -- casts ---------------------------------------------------------------------------------------

def test_cast_between_numbers_strings_and_bools():
    t = pw.debug.table_from_markdown(
        """
        i  | f    | b
        7  | 2.7  | True
        -3 | -2.7 | False
        """
    )
    result = t.select(
        pw.this.i,
        i_f=pw.cast(float, pw.this.i), f_i=pw.cast(int, pw.this.f), i_s=pw.cast(str, pw.this.i),
        f_s=pw.cast(str, pw.this.f), b_i=pw.cast(int, pw.this.b), i_b=pw.cast(bool, pw.this.i),
    )
    types = result.schema._dtypes()
    assert [str(types[c]) for c in ("i_f", "f_i", "i_s", "b_i", "i_b")] == ["float", "int", "str", "int", "bool"]
    # float -> int truncates toward zero, as Python's int()
    assert_rows(result, [(7, 7.0, 2, "7", "2.7", 1, True), (-3, -3.0, -2, "-3", "-2.7", 0, True)])


def test_cast_of_floats_to_str_writes_the_shortest_digits_positionally():
    # texts recorded with Pathway 0.33.0 (Rust's display of a float)
    t = pw.debug.table_from_markdown("b\n1.0\n2.5e20\n4294967296.2\n0.00001\n1e16\n35184372088832.1\n-0.0")
    texts = pw.debug.table_to_pandas(t.select(c=pw.cast(str, pw.this.b)))["c"]
    assert sorted(texts) == sorted(
        ["1", "250000000000000000000", "4294967296.2", "0.00001", "10000000000000000", "35184372088832.1", "-0"]
    )


def test_cast_to_types():
    t = pw.debug.table_from_markdown(
        """
        a | b
        1 | 2.5
        2 | 3.5
        """
    )
    result = t.cast_to_types(a=float, b=int)
    assert [str(v) for v in result.schema._dtypes().values()] == ["float", "int"]
    assert_rows(result, [(1.0, 2), (2.0, 3)])


# -- Python functions --------------------------------------------------------------------------------

def test_apply_apply_with_type_and_udf():
    t = pw.debug.table_from_markdown(
        """
        a | s
        1 | x
        2 | yy
        """
    )

    def describe(a: int, s: str) -> str:
        return f"{s}:{a}"

    @pw.udf
    def double(v: int) -> int:
        return 2 * v

    @pw.udf(return_type=float)
    def halve(v):
        return v / 2

    def scaled(v, factor):
        return v * factor

    result = t.select(
        pw.this.a,
        d=pw.apply(describe, pw.this.a, pw.this.s),
        n=pw.apply_with_type(lambda s: len(s), int, pw.this.s),
        dbl=double(pw.this.a),
        half=halve(pw.this.a),
        kw=pw.apply(scaled, pw.this.a, factor=10),
        anything=pw.apply(lambda a: [a] * a, pw.this.a),  # no annotation: any Python value
        chained=double(pw.this.a) + 1,
    )
    types = result.schema._dtypes()
    assert [str(types[c]) for c in ("d", "n", "dbl", "half")] == ["str", "int", "int", "float"]
    assert_rows(result, [
        (1, "x:1", 1, 2, 0.5, 10, [1], 3),
        (2, "yy:2", 2, 4, 1.0, 20, [2, 2], 5),
    ])


def test_apply_sees_none_unless_udf_propagates_it():
    t = pw.debug.table_from_markdown(OPTIONALS)

    @pw.udf(propagate_none=True)
    def inc(v: int) -> int:
        return v + 1

    def show(v: Optional[int]) -> str:
        return "none" if v is None else str(v)

    result = t.select(pw.this.a, shown=pw.apply(show, pw.this.x), inc=inc(pw.this.x))
    assert str(result.schema._dtypes()["inc"]) == "Optional[int]"  # a None argument gives None
    assert_rows(result, [(1, "10", 11), (-2, "none", None), (3, "none", None)])


def test_batch_udfs_return_lists_and_are_not_fully_async():
    @pw.udf(max_batch_size=4)
    def total(a: list[int]) -> int:
        return sum(a)

    with pytest.raises(ValueError, match="A batch UDF has to return a list but is annotated as returning <class 'int'>"):
        pw.debug.table_from_markdown("a\n1").select(t=total(pw.this.a))
    with pytest.raises(ValueError, match="not supported for fully asynchronous"):
        pw.udf(max_batch_size=4, executor=pw.udfs.fully_async_executor())(lambda a: a)


def test_apply_with_tuple_and_json_arguments():
    t = pw.debug.table_from_markdown(
        """
        a | b
        1 | 2
        """
    )

    def total(pair: tuple[int, int]) -> int:
        return pair[0] + pair[1]

    result = t.select(s=pw.apply(total, pw.make_tuple(pw.this.a, pw.this.b)))
    assert_rows(result, [(3,)])


# -- tuples -------------------------------------------------------------------------------------------

def test_make_tuple_and_item_access():
    t = pw.debug.table_from_markdown(
        """
        a | s
        1 | x
        2 | y
        """
    )
    result = t.select(tp=pw.make_tuple(pw.this.a, pw.this.s, pw.this.a * 2), second=pw.make_tuple(pw.this.a, pw.this.s)[1])
    assert_rows(result, [((1, "x", 2), "x"), ((2, "y", 4), "y")])


# -- the .str namespace -----------------------------------------------------------------------------------

def test_str_methods():
    t = pw.debug.table_from_markdown(
        """
          | s
        1 | Hello
        2 | "  abcabc  "
        """
    )
    s = pw.this.s
    result = t.select(
        s,
        lower=s.str.lower(), upper=s.str.upper(), n=s.str.len(), rev=s.str.reversed(),
        strip=s.str.strip(), starts=s.str.startswith("He"), ends=s.str.endswith("o"),
        count=s.str.count("bc"), find=s.str.find("l"), rep=s.str.replace("l", "L"),
        sl=s.str.slice(1, 3),
    )
    assert_rows(result, [
        ("Hello", "hello", "HELLO", 5, "olleH", "Hello", True, True, 0, 2, "HeLLo", "el"),
        ("  abcabc  ", "  abcabc  ", "  ABCABC  ", 10, "  cbacba  ", "abcabc", False, False, 2, -1, "  abcabc  ", " a"),
    ])


def test_str_parse_methods():
    t = pw.debug.table_from_markdown(
        """
          | i     | f      | b
        1 | "42"  | "1.5"  | true
        2 | "-3"  | "-2"   | False
        3 | "x"   | "y"    | maybe
        """
    )
    result = t.select(
        i=pw.this.i.str.parse_int(optional=True),
        f=pw.this.f.str.parse_float(optional=True),
        b=pw.this.b.str.parse_bool(optional=True),
    )
    types = result.schema._dtypes()
    assert [str(types[c].with_optional(False)) for c in ("i", "f", "b")] == ["int", "float", "bool"]
    assert_rows(result, [(42, 1.5, True), (-3, -2.0, False), (None, None, None)])
    strict = t.filter(pw.this.i == "x").select(i=pw.this.i.str.parse_int())
    with pytest.raises(Exception, match="parse"):
        pw.debug.table_to_pandas(strict)
    # own words for true and false, compared without case
    words = t.select(b=pw.this.b.str.parse_bool(true_values=["MAYBE", "true"], false_values=["false"]))
    assert_rows(words, [(True,), (False,), (True,)])


def test_str_count_find_rfind_in_a_range_as_python():
    names = ["Alice", "olice", "Hello", "World", "Zoo", "oo"]
    t = pw.debug.table_from_markdown("name\n" + "\n".join(names))
    ranges = [(None, None), (1, None), (1, 4), (-3, None), (-3, -1), (2, 100)]
    columns = {}
    for k, (start, end) in enumerate(ranges):
        columns[f"c{k}"] = pw.this.name.str.count("o", start, end)
        columns[f"f{k}"] = pw.this.name.str.find("o", start, end)
        columns[f"r{k}"] = pw.this.name.str.rfind("o", start, end)
    expected = [
        (name, *[value for start, end in ranges for value in
                 (name.count("o", start, end), name.find("o", start, end), name.rfind("o", start, end))])
        for name in names
    ]
    assert_rows(t.select(pw.this.name, **columns), expected)


# -- the .dt namespace ---------------------------------------------------------------------------------------

def test_dt_parts_format_and_floor():
    t = pw.debug.table_from_markdown(
        """
          | s
        1 | 2023-03-15T10:20:30
        2 | 2024-02-29T23:59:01
        """
    )
    parsed = t.select(t=pw.this.s.str.strip().dt.strptime("%Y-%m-%dT%H:%M:%S"))
    assert str(parsed.schema._dtypes()["t"]) == "DateTimeNaive"
    d = pw.this.t
    result = parsed.select(
        y=d.dt.year(), mo=d.dt.month(), day=d.dt.day(), h=d.dt.hour(), mi=d.dt.minute(), sec=d.dt.second(),
        wd=d.dt.weekday(), fmt=d.dt.strftime("%Y/%m/%d %H"), ts=d.dt.timestamp(unit="s"),
        fl=d.dt.floor(dt.timedelta(hours=1)),
    )
    # year..weekday of 2023-03-15 (a Wednesday: 2) and 2024-02-29 (a Thursday: 3)
    assert_rows(result, [
        (2023, 3, 15, 10, 20, 30, 2, "2023/03/15 10", 1678875630.0, dt.datetime(2023, 3, 15, 10)),
        (2024, 2, 29, 23, 59, 1, 3, "2024/02/29 23", 1709251141.0, dt.datetime(2024, 2, 29, 23)),
    ])


def test_dt_round_goes_to_the_nearest_multiple_of_the_duration_and_ties_up():
    t = pw.debug.table_from_markdown(
        """
          | s
        1 | 2023-05-15T12:07:29
        2 | 2023-05-15T12:07:30
        3 | 2023-05-15T12:22:31
        4 | 1969-12-31T23:52:30
        """
    ).select(pw.this.s, t=pw.this.s.dt.strptime("%Y-%m-%dT%H:%M:%S"))
    # durations as timedelta or as pandas text, as Pathway accepts them
    result = t.select(pw.this.s, r=pw.this.t.dt.round(dt.timedelta(minutes=15)), f=pw.this.t.dt.floor("15min"))
    assert_rows(result, [
        ("2023-05-15T12:07:29", dt.datetime(2023, 5, 15, 12, 0), dt.datetime(2023, 5, 15, 12, 0)),
        ("2023-05-15T12:07:30", dt.datetime(2023, 5, 15, 12, 15), dt.datetime(2023, 5, 15, 12, 0)),
        ("2023-05-15T12:22:31", dt.datetime(2023, 5, 15, 12, 30), dt.datetime(2023, 5, 15, 12, 15)),
        ("1969-12-31T23:52:30", dt.datetime(1970, 1, 1, 0, 0), dt.datetime(1969, 12, 31, 23, 45)),
    ])


def test_text_durations_as_pandas_writes_them():
    t = pw.debug.table_from_markdown("s\n2023-05-15T10:13:07.123456\n2023-05-15T23:59:59.999999").select(
        pw.this.s, d=pw.this.s.dt.strptime("%Y-%m-%dT%H:%M:%S.%f")
    )
    # "D" is one day, "2h3min" 123 minutes, "14ms22ms14us" 36014 us, "ns" below the microsecond
    result = t.select(pw.this.s, a=pw.this.d.dt.round("D"), b=pw.this.d.dt.floor("2h3min"),
                      c=pw.this.d.dt.round("14ms22ms14us"), e=pw.this.d.dt.round("ns"))
    epoch = dt.datetime(1970, 1, 1)

    def rounded(s: str, step: int, up: bool) -> dt.datetime:
        us = (dt.datetime.fromisoformat(s) - epoch) // dt.timedelta(microseconds=1) + (step // 2 if up else 0)
        return epoch + dt.timedelta(microseconds=us - us % step)

    day, two_h_3_min = 86_400_000_000, 123 * 60_000_000
    assert_rows(result, [
        (s, rounded(s, day, True), rounded(s, two_h_3_min, False), rounded(s, 36014, True), dt.datetime.fromisoformat(s))
        for s in ["2023-05-15T10:13:07.123456", "2023-05-15T23:59:59.999999"]
    ])


def test_dt_durations_timezones_and_timestamps():
    t = pw.debug.table_from_markdown(
        """
          | start               | end                      | epoch
        1 | 2023-03-15T10:00:00 | 2023-03-17T10:01:30+0200 | 0
        2 | 2023-03-15T10:00:00 | 2023-03-15T12:00:00+0000 | 86400
        """
    )
    parsed = t.select(
        start=pw.this.start.dt.strptime("%Y-%m-%dT%H:%M:%S").dt.to_utc("UTC"),
        end=pw.this.end.dt.strptime("%Y-%m-%dT%H:%M:%S%z"),
        naive=pw.this.epoch.dt.from_timestamp(unit="s"),
        utc=pw.this.epoch.dt.utc_from_timestamp(unit="s"),
    )
    assert [str(v) for v in parsed.schema._dtypes().values()] == ["DateTimeUtc", "DateTimeUtc", "DateTimeNaive", "DateTimeUtc"]
    spans = parsed.select(
        length=pw.this.end - pw.this.start,
        secs=(pw.this.end - pw.this.start).dt.seconds(),
        days=(pw.this.end - pw.this.start).dt.days(),
        later=pw.this.naive + dt.timedelta(hours=1),
        utc_hour=pw.this.utc.dt.hour(),
    )
    assert str(spans.schema._dtypes()["length"]) == "Duration"
    # +0200 means 08:01:30 UTC: 1 day 22:01:30 after the start
    assert_rows(spans, [
        (dt.timedelta(days=1, hours=22, minutes=1, seconds=30), 165690, 1, dt.datetime(1970, 1, 1, 1), 0),
        (dt.timedelta(hours=2), 7200, 0, dt.datetime(1970, 1, 2, 1), 0),
    ])


def test_duration_arithmetic():
    t = pw.debug.table_from_markdown(
        """
          | start               | end
        1 | 2023-03-15T10:00:00 | 2023-03-15T13:30:00
        2 | 2023-03-15T10:00:00 | 2023-03-14T09:00:00
        """
    ).select(
        start=pw.this.start.dt.strptime("%Y-%m-%dT%H:%M:%S"), end=pw.this.end.dt.strptime("%Y-%m-%dT%H:%M:%S")
    )
    d = pw.this.end - pw.this.start
    hour = dt.timedelta(hours=1)
    result = t.select(
        hours=d / hour, whole=d // hour, rest=d % hour, twice=d * 2, half=d / 2, back=pw.this.start + d,
    )
    types = result.schema._dtypes()
    assert [str(types[c]) for c in ("hours", "whole", "rest", "twice", "half")] == ["float", "int", "Duration", "Duration", "Duration"]
    # -25 h: floor division and modulo follow Python's signs, as for timedelta
    assert_rows(result, [
        (3.5, 3, dt.timedelta(minutes=30), dt.timedelta(hours=7), dt.timedelta(hours=1, minutes=45), dt.datetime(2023, 3, 15, 13, 30)),
        (-25.0, -25, dt.timedelta(0), dt.timedelta(hours=-50), dt.timedelta(hours=-12, minutes=-30), dt.datetime(2023, 3, 14, 9)),
    ])


# -- JSON ----------------------------------------------------------------------------------------------------

class JsonSchema(pw.Schema):
    data: pw.Json


JSON_ROWS = """
      | data
    1 | {"a": 1, "b": "x", "c": [10, 20], "f": 2.5, "t": true, "o": {"k": "v"}}
    2 | {"a": -3, "b": "y", "c": [], "f": 1, "t": false, "o": {}}
    """


def test_json_item_access_and_conversions():
    t = pw.debug.table_from_markdown(JSON_ROWS, schema=JsonSchema)
    d = pw.this.data
    result = t.select(
        a=d["a"], ai=pw.unwrap(d["a"].as_int()) + 1, b=d["b"].as_str(), f=d["f"].as_float(), tt=d["t"].as_bool(),
        nested=d["o"].get("k"), first=d["c"].get(0), missing=d.get("zz"), dflt=d.get("zz", default={"k": 5}),
        dflt_s=d.get("zz", default=[1]), dflt_col=d.get("zz", default=pw.this.data["b"]),
        plain=pw.apply(lambda j: j["a"].value * 10, d),  # a Python function gets pw.Json
    )
    types = result.schema._dtypes()
    assert str(types["a"].with_optional(False)) == "Json"
    assert [str(types[c].with_optional(False)) for c in ("ai", "b", "f", "tt")] == ["int", "str", "float", "bool"]
    assert_rows(result, [
        (pw.Json(1), 2, "x", 2.5, True, pw.Json("v"), pw.Json(10), None, pw.Json({"k": 5}), pw.Json([1]), pw.Json("x"), 10),
        (pw.Json(-3), -2, "y", 1.0, False, None, None, None, pw.Json({"k": 5}), pw.Json([1]), pw.Json("y"), -30),
    ])
    # as Pathway 0.33.0: a default must be a Json (or a dict, a list, None)
    with pytest.raises(TypeError, match="Default must be of type .*Json | None, found <class 'int'>"):
        t.select(x=d.get("zz", default=5))


def test_json_from_pandas_and_wrong_type_conversion_fails():
    frame = pd.DataFrame({"data": [{"n": "text"}, {"n": 2}]})
    t = pw.debug.table_from_pandas(frame)
    assert str(t.schema._dtypes()["data"]) == "Json"
    assert_rows(t.select(n=pw.this.data["n"]), [(pw.Json("text"),), (pw.Json(2),)])
    with pytest.raises(Exception, match="not a int|is not"):
        pw.debug.table_to_pandas(t.select(n=pw.this.data["n"].as_int()))


def test_dt_parts_below_the_second_and_duration_parts_truncated_toward_zero():
    t = pw.debug.table_from_markdown(
        """
          | s                          | us
        1 | 2023-05-15T10:13:07.123456 | 90061000001
        2 | 1969-12-31T23:59:59.999999 | -1500
        """
    ).select(
        pw.this.us,
        t=pw.this.s.dt.strptime("%Y-%m-%dT%H:%M:%S.%f"),
        d=pw.apply_with_type(lambda n: dt.timedelta(microseconds=n), pw.Duration, pw.this.us),
    )
    parts = t.select(
        pw.this.us, ms=pw.this.t.dt.millisecond(), mc=pw.this.t.dt.microsecond(), ns=pw.this.t.dt.nanosecond(),
        w=pw.this.d.dt.weeks(), days=pw.this.d.dt.days(), h=pw.this.d.dt.hours(), m=pw.this.d.dt.minutes(),
        s=pw.this.d.dt.seconds(), dms=pw.this.d.dt.milliseconds(), dus=pw.this.d.dt.microseconds(),
        dns=pw.this.d.dt.nanoseconds(),
    )
    # 90061000001 us = 1 day 1 h 1 min 1 s 1 us; -1500 us is -1 ms, 0 s (truncated, as Pathway counts)
    assert_rows(parts, [
        (90061000001, 123, 123456, 123456000, 0, 1, 25, 1501, 90061, 90061000, 90061000001, 90061000001000),
        (-1500, 999, 999999, 999999000, 0, 0, 0, 0, 0, -1, -1500, -1500000),
    ])


def test_str_swapcase_title_rfind_removeprefix_removesuffix_as_python():
    words = ["aBc_Def", "xyzx", ""]
    t = pw.debug.table_from_markdown("s\n" + "\n".join(f'"{w}"' for w in words))
    result = t.select(
        pw.this.s, a=pw.this.s.str.swapcase(), b=pw.this.s.str.title(), c=pw.this.s.str.rfind("x"),
        d=pw.this.s.str.removeprefix("aB"), e=pw.this.s.str.removesuffix("zx"), f=pw.this.s.str.rfind(""),
    )
    expected = [(w, w.swapcase(), w.title(), w.rfind("x"), w.removeprefix("aB"), w.removesuffix("zx"), w.rfind(""))
                for w in words]
    assert_rows(result, expected)


def test_json_values_convert_to_python_types_or_refuse():
    class Data(pw.Schema):
        data: pw.Json

    @pw.udf
    def count_plus_one(data: pw.Json) -> int:
        return data["n"].as_int() + len(data["tags"].as_list())

    t = pw.debug.table_from_rows(Data, [({"n": 41, "tags": ["x"]},)])
    assert_rows(t.select(r=count_plus_one(pw.this.data)), [(42,)])
    assert pw.Json({"s": "a"})["s"].as_str() == "a" and pw.Json(1.5).as_float() == 1.5 and pw.Json(3).as_float() == 3.0
    with pytest.raises(ValueError, match="Cannot convert Json a to <class 'int'>"):
        pw.Json("a").as_int()


def test_strptime_takes_up_to_nine_fraction_digits():
    t = pw.debug.table_from_markdown("s\n2023-05-15T10:13:00.123456789+00:00\n2023-05-15T10:13:00.5+01:00")
    parsed = t.select(d=pw.this.s.dt.strptime("%Y-%m-%dT%H:%M:%S.%f%z"))
    # as Pathway parses them: the nanoseconds stay, ".5" is half a second
    assert_rows(parsed, [(pd.Timestamp("2023-05-15T10:13:00.123456789+00:00"),),
                         (dt.datetime(2023, 5, 15, 9, 13, 0, 500000, tzinfo=dt.timezone.utc),)])


def test_run_without_outputs_only_warns(caplog):
    pw.run()
    assert any("nothing to run" in r.getMessage() for r in caplog.records)


def test_udf_classes_async_functions_batches_caches_and_retries(tmp_path):
    class Inc(pw.UDF):
        def __init__(self, inc):
            super().__init__()
            self.inc = inc

        def __wrapped__(self, a: int) -> int:
            return a + self.inc

    @pw.udf(executor=pw.udfs.async_executor(timeout=5), cache_strategy=pw.udfs.InMemoryCache())
    async def tenfold(a: int) -> int:
        await asyncio.sleep(0.01)
        return a * 10

    @pw.udf(max_batch_size=16)
    def add(a: list[int], b: list[int]) -> list[int]:
        return [x + y for x, y in zip(a, b)]

    marker = tmp_path / "failed-once"
    retry = pw.udfs.FixedDelayRetryStrategy(max_retries=2, delay_ms=1)

    @pw.udf(executor=pw.udfs.fully_async_executor(retry_strategy=retry))
    async def flaky(a: int) -> int:
        # the first call of each row fails; the retry succeeds
        done = marker.with_name(f"{marker.name}-{a}")
        if not done.exists():
            done.write_text("")
            raise RuntimeError("transient")
        return -a

    t = pw.debug.table_from_markdown("a | b\n1 | 1\n2 | 0\n3 | 1")
    result = t.select(
        x=Inc(2)(pw.this.a), y=tenfold(pw.this.a), z=add(pw.this.a, pw.this.b), f=flaky(pw.this.a),
        w=pw.apply_async(tenfold.__wrapped__, pw.this.b),
    ).await_futures()
    assert [str(k) for k in result.schema._dtypes().values()] == ["int"] * 5
    assert_rows(result, [(3, 10, 2, -1, 10), (4, 20, 2, -2, 0), (5, 30, 4, -3, 10)])


def test_to_string_writes_values_as_pathway_does():
    # expected texts recorded with Pathway 0.33.0
    t = pw.debug.table_from_markdown("a  | b      | c\n1  | 1.0    | True\n-2 | 2.5e20 | False")
    text = t.select(
        a=pw.this.a.to_string(), b=pw.this.b.to_string(), c=pw.this.c.to_string(),
        small=(pw.this.a * 1e-8).to_string(), big=(pw.this.a * 1e10 + 0.5).to_string(),
    )
    assert_rows(text, [("1", "1.0", "True", "1e-8", "10000000000.5"), ("-2", "2.5e20", "False", "-2e-8", "-19999999999.5")])
    spans = pw.debug.table_from_markdown("ms\n0\n1000\n86400000\n-5").select(
        d=(pw.this.ms.dt.from_timestamp("ms") - pw.this.ms.dt.from_timestamp("s")).to_string(),
        n=pw.if_else(pw.this.ms > 0, pw.this.ms, None).to_string(),
    )
    assert_rows(spans, [("", "None"), ("-16m -39s", "1000"), ("-999d", "86400000"), ("4s 995000000ns", "None")])


def test_wall_clock_times_in_a_time_zone_as_pathway_converts_them():
    # recorded with Pathway 0.33.0: a time that happens twice (autumn) is the later one, a
    # time that never happens (spring) is the moment the clocks jumped
    t = pw.debug.table_from_markdown(
        """
        s
        2023-03-26T02:30:00
        2023-10-29T01:59:00
        2023-10-29T02:00:00
        2023-10-29T02:23:00
        """
    ).select(d=pw.this.s.dt.strptime("%Y-%m-%dT%H:%M:%S"))
    utc = t.select(u=pw.this.d.dt.to_utc("Europe/Warsaw").dt.strftime("%Y-%m-%d %H:%M:%S%z"))
    assert sorted(pw.debug.table_to_pandas(utc)["u"]) == [
        "2023-03-26 01:00:00+0000", "2023-10-28 23:59:00+0000", "2023-10-29 01:00:00+0000", "2023-10-29 01:23:00+0000",
    ]
    shifted = pw.debug.table_from_markdown("s\n2023-03-26T01:23:00\n2023-10-29T01:23:00").select(
        d=pw.this.s.dt.strptime("%Y-%m-%dT%H:%M:%S")
    ).select(
        pw.this.d,
        later=pw.this.d.dt.add_duration_in_timezone(dt.timedelta(hours=2), timezone="Europe/Warsaw"),
    ).select(
        later=pw.this.later.dt.strftime("%m-%d %H:%M"),
        back=pw.this.later.dt.subtract_duration_in_timezone(dt.timedelta(hours=2), "Europe/Warsaw").dt.strftime("%H:%M"),
        span=pw.this.later.dt.subtract_date_time_in_timezone(pw.this.d, "Europe/Warsaw"),
        local=pw.this.d.dt.to_utc("Europe/Warsaw").dt.to_naive_in_timezone("America/New_York").dt.strftime("%m-%d %H:%M"),
    )
    assert_rows(shifted, [
        ("03-26 04:23", "01:23", dt.timedelta(hours=2), "03-25 20:23"),
        ("10-29 02:23", "01:23", dt.timedelta(hours=2), "10-28 19:23"),
    ])


def test_strftime_takes_pathway_s_fraction_and_offset_directives():
    # recorded with Pathway 0.33.0 (Rust's chrono formats)
    t = pw.debug.table_from_markdown("s\n2023-03-25T02:04:05.123456").select(
        n=pw.this.s.dt.strptime("%Y-%m-%dT%H:%M:%S.%f")
    ).with_columns(u=pw.this.n.dt.to_utc("UTC"))
    result = t.select(
        a=pw.this.n.dt.strftime("%f|%3f|%6f|%9f|%.f|%.3f|%%f"), b=pw.this.u.dt.strftime("%z %Z %:z"),
    )
    assert_rows(result, [("123456000|123|123456|123456000|.123456|.123|%f", "+0000 UTC +00:00")])


def test_json_as_type_takes_a_default_or_unwraps():
    Data = pw.schema_from_types(j=pw.Json, n=int)
    t = pw.debug.table_from_rows(Data, [(pw.Json(42), 1), (pw.Json(None), 2), (None, 3)])
    result = t.select(
        a=pw.this.j.as_int(), b=pw.this.j.as_int(default=5), c=pw.this.j.as_float(default=pw.this.n),
    )
    assert {k: str(v) for k, v in result.schema._dtypes().items()} == {"a": "Optional[int]", "b": "int", "c": "float"}
    assert_rows(result, [(42, 42, 42.0), (None, 5, 2.0), (None, 5, 3.0)])
    with pytest.raises(TypeError, match="type of default <class 'str'> is not compatible with <class 'int'>"):
        t.select(r=pw.this.j.as_int(default="x"))
    with pytest.raises(TypeError, match="can only be applied to JSON columns, but column has type <class 'int'>"):
        t.select(r=pw.this.n.as_int())
    t.select(r=pw.this.j.as_int(unwrap=True))
    with pytest.raises(ValueError, match="cannot unwrap a None value"):
        pw.run_all()


def test_json_values_follow_python_protocols_in_udfs():
    @pw.udf
    def describe(j: pw.Json) -> str:
        return f"{len(j['l'])} {bool(j['e'])} {int(j['n']) + 1} {float(j['n'])} {next(reversed(j['l'])).value}"

    Data = pw.schema_from_types(j=pw.Json)
    t = pw.debug.table_from_rows(Data, [(pw.Json({"l": [1, 2, 3], "e": {}, "n": 4}),)])
    assert_rows(t.select(d=describe(pw.this.j)), [("3 False 5 4.0 3",)])
    with pytest.raises(TypeError, match="object of type 'int' has no len()"):
        len(pw.Json(42))


def test_expressions_print_as_pathway_prints_them():
    # texts as Pathway 0.33.0 prints them
    t = pw.debug.table_from_markdown("pet | age\n1   | 10")
    other = t.copy()
    assert repr(t.pet + other.age) == "(<table1>.pet + <table2>.age)"
    assert repr(pw.if_else(t.pet == 1, other.pet, -t.age)) == "pathway.if_else((<table1>.pet == 1), <table2>.pet, (-<table1>.age))"
    assert repr(pw.reducers.tuple(t.pet, skip_nones=True)) == "pathway.reducers.tuple(<table1>.pet, skip_nones=True)"
    assert repr(pw.cast(float, t.pet)) == "pathway.cast(FLOAT, <table1>.pet)"
    assert repr(pw.this.owner.get(2, "x")) == "(pathway.this.owner).get(2, 'x')"
    assert repr(pw.this.ts.dt.round("D")) == "(pathway.this.ts).dt.round('D')"  # as written

    @pw.udf
    def foo(a: int) -> int:
        return a

    assert repr(foo(age=t.age)) == "pathway.apply(foo, <table1>.age)"
    assert repr(t.pointer_from(4)) == "<table1>.pointer_from(4)"

    @pw.udf(executor=pw.udfs.fully_async_executor())
    async def later(a: int) -> int:
        return a

    assert repr(later(t.age)) == "pathway.apply_fully_async(later, <table1>.age)"


def test_assert_table_has_schema_checks_columns_and_types():
    t = pw.debug.table_from_markdown("a | b\n1 | x")
    pw.assert_table_has_schema(t, pw.schema_from_types(a=float))  # int is narrower than float
    pw.assert_table_has_schema(t, pw.schema_from_types(a=Optional[int], b=str), allow_superset=False)
    with pytest.raises(AssertionError, match="column 'a' is of type int, not float"):
        pw.assert_table_has_schema(t, pw.schema_from_types(a=float), allow_subtype=False)
    with pytest.raises(AssertionError, match="columns the schema does not: b"):
        pw.assert_table_has_schema(t, pw.schema_from_types(a=int), allow_superset=False)
    with pytest.raises(AssertionError, match="no column 'c'"):
        pw.assert_table_has_schema(t, pw.schema_from_types(c=int))


def test_declare_type_only_narrows_or_extends():
    # which declarations Pathway 0.33 accepts was recorded from it
    ints = pw.debug.table_from_markdown("v\n1\n2")
    floats = pw.debug.table_from_markdown("v\n1.5\n2")
    assert ints.select(v=pw.declare_type(float, pw.this.v)).schema._dtypes()["v"].name == "float"
    assert floats.select(v=pw.declare_type(int, pw.this.v)).schema._dtypes()["v"].name == "int"
    for table, target in [(ints, str), (ints, bool), (ints, pw.Pointer), (floats, int | None)]:
        with pytest.raises(TypeError, match="Cannot change type"):
            table.select(v=pw.declare_type(target, pw.this.v))


def test_equality_of_optional_values_is_never_none():
    # as in Pathway 0.33 (recorded): None == None is True, None == 1.0 is False
    t = pw.debug.table_from_markdown("a | b | c\n1 | 1.0 | 1\n2 |  | \n3 | 3.5 | 2")
    result = t.select(eq=t.a == t.b, ne=t.a != t.b, same=t.c == t.c)
    assert {name: str(kind) for name, kind in result.schema._dtypes().items()} == {"eq": "bool", "ne": "bool", "same": "bool"}
    assert_rows(result, [(True, False, True), (False, True, True), (False, True, True)])


def test_str_replace_with_a_count_replaces_the_first_occurrences():
    t = pw.debug.table_from_markdown("value | n\nScaciscics | 3\nyelliwwiid | 2")
    result = t.select(at_most_n=pw.this.value.str.replace("c", "t", pw.this.n), one=pw.this.value.str.replace("i", "o", 1))
    # by hand, with Python's str.replace(old, new, count)
    assert_rows(result, [("Statistics", "Scacoscics"), ("yelliwwiid", "yellowwiid")])


def test_tuple_items_by_constant_negative_and_computed_indexes():
    t = pw.debug.table_from_markdown("a | b | c\n3 | 2 | 1\n4 | 1 | 0").with_columns(tup=pw.make_tuple(pw.this.a, pw.this.b))
    result = t.select(first=pw.this.tup[0], last=pw.this.tup[-1], picked=pw.this.tup[pw.this.c],
                      safe=pw.this.tup.get(pw.this.c, default=100))
    assert_rows(result, [(3, 2, 2, 2), (4, 1, 4, 4)])  # by hand
    with pytest.raises(IndexError, match="Index 2 out of range for a tuple of type tuple\\[int, int\\]"):
        t.select(x=pw.this.tup[2])
    with pytest.warns(UserWarning, match="Consider using just the default value"):
        beyond = t.select(x=pw.this.tup.get(2, default=pw.this.c))
    assert_rows(beyond, [(1,), (0,)])


def test_items_of_untyped_python_objects_index_as_python_does():
    def first_n(n):  # no annotation: a column of Python objects (Any)
        return tuple(range(n))

    t = pw.debug.table_from_markdown("n\n2\n4").select(tup=pw.apply(first_n, pw.this.n))
    result = t.select(second=pw.this.tup[1], last=pw.this.tup[-1], third=pw.this.tup.get(2, default=-1))
    assert_rows(result, [(1, 1, -1), (1, 3, 2)])  # by hand: (0, 1) and (0, 1, 2, 3)
    with pytest.raises(IndexError, match="tuple index out of range"):
        pw.debug.compute_and_print(t.select(x=pw.this.tup[3]))


def test_sorted_tuple_puts_none_first():
    t = pw.debug.table_from_markdown("g | v\n1 | 1\n1 | \n1 | -1")
    result = t.groupby(pw.this.g).reduce(s=pw.reducers.sorted_tuple(pw.this.v))
    assert_rows(result, [((None, -1, 1),)])  # Pathway's order (recorded from it)


# -- Python functions run only where Pathway runs them ---------------------------------------

def test_python_functions_are_not_called_where_require_or_a_branch_leaves_them_out():
    def _fails_on_none(a: int | None, b: int | None) -> int:
        return a + b  # TypeError on a None, which the rows reaching it never have

    t = pw.debug.table_from_markdown(
        """
        a | b
        1 | 2
        3 |
        """
    )
    result = t.select(
        required=pw.require(pw.apply(_fails_on_none, t.a, t.b), t.b),
        branch=pw.if_else(t.b.is_none(), -1, pw.apply(_fails_on_none, t.a, t.b)),
        conjunction=t.b.is_not_none() & (pw.apply(_fails_on_none, t.a, t.b) > 0),
        disjunction=t.b.is_none() | (pw.apply(_fails_on_none, t.a, t.b) > 0),
    )
    assert_rows(result, [(3, 3, True, True), (None, -1, False, True)])


def test_round_as_python_rounds_and_fill_na_keeps_the_column_type():
    t = pw.debug.table_from_markdown(
        """
        v     | digits | maybe
        2.5   | 0      | 1.5
        2.675 | 2      |
        0.125 | 2      | nan
        """
    )
    result = t.select(
        fixed=t.v.num.round(), per_row=t.v.num.round(t.digits), filled=t.maybe.num.fill_na(0),
        as_float=pw.apply(float, t.digits),
    )
    assert result.typehints()["filled"] is float and result.typehints()["as_float"] is float
    # Python's round: ties to even, on the exact binary value (2.675 is just below 2.675)
    assert_rows(result, [(2.0, 2.0, 1.5, 0.0), (3.0, 2.67, 0.0, 2.0), (0.0, 0.12, 0.0, 2.0)])


def test_apply_passes_keyword_columns_by_name_with_pathways_deprecation_warning():
    t = pw.debug.table_from_markdown("a | b\n1 | 10\n2 | 20")

    def minus(x: int, y: int) -> int:
        return x - y

    with pytest.warns(DeprecationWarning, match="keyword arguments"):
        result = t.select(d=pw.apply(minus, y=t.a, x=t.b))
    assert result.typehints()["d"] is int
    assert_rows(result, [(9,), (18,)])
