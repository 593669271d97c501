"""pw.utils (col, filtering), pw.pandas_transformer, pw.load_yaml, and JSON access.

Expected values are worked out by hand from the inputs unless a comment says they were
recorded from Pathway 0.33.0.
"""

from __future__ import annotations

import datetime
import warnings

import pandas as pd
import pytest
import yaml
from tables import assert_changes, assert_rows

import sparkway as pw

STREAM = """
  | a | __time__
1 | 1 | 2
2 | 2 | 2
3 | 3 | 4
"""


def test_unpack_col_by_names_and_by_schema():
    t = pw.debug.table_from_markdown("x | y | z\n1 | 2.5 | a\n3 | 4.5 | b")
    packed = t.select(p=pw.make_tuple(pw.this.x, pw.this.y, pw.this.z))
    by_names = pw.utils.col.unpack_col(packed.p, "i", "f", pw.this.s)
    assert_rows(by_names, [(1, 2.5, "a"), (3, 4.5, "b")])

    class Parts(pw.Schema):
        i: int
        f: float
        s: str

    by_schema = pw.utils.col.unpack_col(packed.p, schema=Parts)
    assert [str(k) for k in by_schema.schema._dtypes().values()] == ["int", "float", "str"]
    assert_rows(t + by_schema, [(1, 2.5, "a", 1, 2.5, "a"), (3, 4.5, "b", 3, 4.5, "b")])  # the same ids
    with pytest.raises(ValueError, match="exactly one"):
        pw.utils.col.unpack_col(packed.p, "i", schema=Parts)


def test_unpack_col_dict_reads_each_type_and_optional_fields():
    data = [
        ({"n": 7, "f": 1.5, "s": "x", "when": "2025-03-14T10:13:00.000000000", "dur": 90_000_000_000, "opt": 2},),
        ({"n": 8, "f": 2, "s": "y", "when": "2025-03-15T00:00:00.500000000", "dur": -1_000, "opt": None},),
    ]
    t = pw.debug.table_from_rows(pw.schema_from_types(j=pw.Json), data)

    class Fields(pw.Schema):
        n: int
        f: float
        s: str
        when: pw.DateTimeNaive
        dur: pw.Duration
        opt: int | None
        gone: str | None

    result = pw.utils.col.unpack_col_dict(t.j, Fields)
    assert_rows(result, [
        (7, 1.5, "x", datetime.datetime(2025, 3, 14, 10, 13), datetime.timedelta(seconds=90), 2, None),
        (8, 2.0, "y", datetime.datetime(2025, 3, 15, 0, 0, 0, 500_000), datetime.timedelta(microseconds=-1), None, None),
    ])


def test_unpack_col_dict_reads_a_null_as_none_in_optional_date_time_and_duration_fields():
    data = [({"at": "2025-03-14T10:13:00.000000000", "took": None},), ({"at": None, "took": 2_000},)]
    t = pw.debug.table_from_rows(pw.schema_from_types(j=pw.Json), data)
    result = pw.utils.col.unpack_col_dict(t.j, pw.schema_from_types(at=pw.DateTimeNaive | None, took=pw.Duration | None))
    assert_rows(result, [
        (datetime.datetime(2025, 3, 14, 10, 13), None),
        (None, datetime.timedelta(microseconds=2)),
    ])


def test_unpack_col_dict_fails_on_a_null_in_a_required_field():
    t = pw.debug.table_from_rows(pw.schema_from_types(j=pw.Json), [({"n": None},)])
    result = pw.utils.col.unpack_col_dict(t.j, pw.schema_from_types(n=int))
    with pytest.raises(ValueError, match="cannot unwrap a None value"):
        pw.debug.table_to_pandas(result)


def test_apply_all_rows_keeps_the_ids_and_recomputes_on_every_change():
    t = pw.debug.table_from_markdown(STREAM)
    # each value plus the sum of all: {1, 2} -> 4, 5; then {1, 2, 3} -> 7, 8, 9
    result = pw.utils.col.apply_all_rows(t.a, fun=lambda a: [x + sum(a) for x in a], result_col_name="res")
    assert_changes(result.update_types(res=int), [[(4, 1), (5, 1)], [(4, -1), (5, -1), (7, 1), (8, 1), (9, 1)]])
    assert_rows(t + result, [(1, 7), (2, 8), (3, 9)])


def test_multiapply_all_rows_gives_several_columns():
    t = pw.debug.table_from_markdown("a | b\n1 | 10\n2 | 20")

    def shifted(a: list[int], b: list[int]) -> tuple[list[int], list[int]]:
        return [x - min(a) for x in a], [x - min(b) for x in b]

    result = pw.utils.col.multiapply_all_rows(t.a, t.b, fun=shifted, result_col_names=["da", pw.this.db])
    assert_rows(t + result, [(1, 10, 0, 0), (2, 20, 1, 10)])


def test_groupby_reduce_majority_and_argmin_argmax_rows():
    t = pw.debug.table_from_markdown("""
    g | v
    1 | 5
    1 | 5
    1 | 7
    2 | 3
    2 | 9
    2 | 9
    """)
    assert_rows(pw.utils.col.groupby_reduce_majority(t.g, t.v), [(1, 5), (2, 9)])
    s = pw.debug.table_from_markdown("g | v | name\n1 | 5 | a\n1 | 2 | b\n2 | 8 | c\n2 | 9 | d\n3 | 1 | e")
    assert_rows(pw.utils.filtering.argmin_rows(s, s.g, what=s.v), [(1, 2, "b"), (2, 8, "c"), (3, 1, "e")])
    assert_rows(pw.utils.filtering.argmax_rows(s, s.g, what=s.v), [(1, 5, "a"), (2, 9, "d"), (3, 1, "e")])


class Total(pw.Schema):
    total: int


def test_pandas_transformer_keeps_ids_and_follows_updates():
    t = pw.debug.table_from_markdown(STREAM)

    @pw.pandas_transformer(output_schema=Total)
    def running(df: pd.DataFrame) -> pd.Series:
        return df["a"].sort_values().cumsum()  # 1, 3 and then 1, 3, 6

    result = running(t)
    assert_changes(result, [[(1, 1), (3, 1)], [(6, 1)]])  # the rows that did not change stay
    assert_rows(t.join(result, t.id == result.id).select(t.a, result.total), [(1, 1), (2, 3), (3, 6)])


def test_pandas_transformer_with_two_inputs_and_an_output_universe():
    left = pw.debug.table_from_markdown("  | x\n4 | 10\n5 | 20\n6 | 30")
    right = pw.debug.table_from_markdown("  | y\n4 | 1\n6 | 2")

    @pw.pandas_transformer(output_schema=Total, output_universe="right")
    def matched(left: pd.DataFrame, right: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame(left["x"][left.index.isin(right.index)] + right["y"])

    assert_rows(matched(left, right) + right, [(11, 1), (32, 2)])

    @pw.pandas_transformer(output_schema=Total)
    def left_count(left: pd.DataFrame, right: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"total": [len(left) - len(right)]}, index=[0])

    empty = pw.debug.table_from_markdown("  | y\n4 | 1\n").filter(pw.this.y > 1)
    assert_rows(left_count(left, empty), [(3,)])  # an empty table is an empty DataFrame


def test_pandas_transformer_checks_its_arguments_and_result():
    t = pw.debug.table_from_markdown("  | x\n1 | 10\n2 | 20")

    def identity(df: pd.DataFrame) -> pd.DataFrame:
        return df

    with pytest.raises(ValueError, match="output_universe"):
        pw.pandas_transformer(output_schema=Total, output_universe=1)(identity)(t)
    with pytest.raises(ValueError, match="output_universe"):
        pw.pandas_transformer(output_schema=Total, output_universe="other")(identity)(t)

    @pw.pandas_transformer(output_schema=Total, output_universe=0)
    def fewer(df: pd.DataFrame) -> pd.DataFrame:
        return df.iloc[:1]

    with pytest.raises(ValueError, match="does not match"):
        pw.debug.table_to_pandas(fewer(t))

    @pw.pandas_transformer(output_schema=Total)
    def named(df: pd.DataFrame) -> pd.DataFrame:
        return df.set_index(pd.Index(["a", "b"]))

    with pytest.raises(ValueError, match="use integers"):
        pw.debug.table_to_pandas(named(t))


def test_pandas_transformer_without_inputs_makes_a_constant_table():
    @pw.pandas_transformer(output_schema=Total)
    def numbers() -> pd.Series:
        return pd.Series([5, 6], index=[1, 2])

    labelled = pw.debug.table_from_markdown("  | total\n1 | 5\n2 | 6")
    assert_rows(numbers() + labelled.select(same=pw.this.total), [(5, 5), (6, 6)])  # ids from the index
    with pytest.raises(ValueError, match="unique"):
        pw.pandas_transformer(output_schema=Total)(lambda: pd.Series([1, 2], index=[0, 0]))()


def test_load_yaml_builds_tagged_objects_and_shares_variables(monkeypatch):
    monkeypatch.setenv("RETRIES", "3")
    monkeypatch.setenv("NAME", "c:")
    config = pw.load_yaml("""
$wait: !datetime.timedelta
  minutes: 2
first: $wait
later: [$wait, !pw.Json {value: {"k": 1}}]
retries: $RETRIES
name: $NAME
quoted: "$wait"
nested:
  $wait: !datetime.timedelta {seconds: 1}
  inner: $wait
""")
    assert config["first"] == datetime.timedelta(minutes=2)
    assert config["later"][0] is config["first"]  # a variable is built once
    assert config["later"][1] == pw.Json({"k": 1})
    assert config["retries"] == 3 and config["name"] == "c:" and config["quoted"] == "$wait"
    assert config["nested"] == {"inner": datetime.timedelta(seconds=1)}  # the inner definition hides the outer


def test_load_yaml_errors_and_warnings(tmp_path, monkeypatch):
    (tmp_path / "broken_config_module.py").write_text("import no_such_module_here\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(yaml.YAMLError, match="No module named 'no_such_module_here'"):  # the real cause
        pw.load_yaml("a: !broken_config_module.f {}")
    with pytest.raises(KeyError, match="not_there"):
        pw.load_yaml("a: $not_there")
    with pytest.raises(TypeError):
        pw.load_yaml("a: !datetime.timedelta {weeks: 1, typo: 2}")
    with pytest.warns(UserWarning, match="never used"):
        pw.load_yaml("$spare: 1\na: 2")
    with pytest.warns(DeprecationWarning):
        assert pw.load_yaml("a: !datetime.timedelta") == {"a": datetime.timedelta(0)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pw.load_yaml("a: !datetime.timezone.utc") == {"a": datetime.timezone.utc}  # not callable: as is


def test_json_access_as_pathway():
    # results recorded from Pathway 0.33.0
    t = pw.debug.table_from_rows(
        pw.schema_from_types(j=pw.Json),
        [({"a": {"b": 1}, "l": [0, 1, 2], "s": "xy"},), ({"a": 5},)],
    )
    j = pw.this.j
    result = t.select(
        item=j["a"]["b"], got=j.get("a"), default=j.get("zz", default={"b": 42}),
        negative=j["l"][-1], beyond=j["l"][3], in_string=j["s"][0], by_position=j.get(1),
    )
    types = {name: str(kind) for name, kind in result.schema._dtypes().items()}
    assert types == {
        "item": "Json", "got": "Optional[Json]", "default": "Json", "negative": "Json", "beyond": "Json",
        "in_string": "Json", "by_position": "Optional[Json]",
    }
    null = pw.Json(None)
    assert_rows(result, [
        (pw.Json(1), pw.Json({"b": 1}), pw.Json({"b": 42}), null, null, null, None),
        (null, pw.Json(5), pw.Json({"b": 42}), null, null, null, None),
    ])
    with pytest.raises(TypeError, match="Cannot get from"):
        t.select(x=j.get("a")["b"])


def test_flattening_a_json_that_is_no_array_fails():
    t = pw.debug.table_from_rows(pw.schema_from_types(j=pw.Json), [([1, 2],), ({"a": 1},)])
    with pytest.raises(ValueError, match="can't flatten this Json: {\"a\""):
        pw.debug.table_to_pandas(t.flatten(pw.this.j))
    # keeping Error values, that row gives no rows (as Pathway 0.33.0 does; the error is logged)
    kept = pw.debug.table_to_pandas(t.flatten(pw.this.j).select(n=pw.this.j.as_int()), terminate_on_error=False)
    assert sorted(kept["n"]) == [1, 2]


def test_to_duration_and_json_text():
    t = pw.debug.table_from_markdown("n | unit\n90 | min\n-1500 | ns\n3 | D")
    result = t.select(fixed=pw.this.n.dt.to_duration("s"), named=pw.this.n.dt.to_duration(pw.this.unit))
    assert_rows(result, [
        (datetime.timedelta(seconds=90), datetime.timedelta(minutes=90)),
        (datetime.timedelta(seconds=-1500), pd.Timedelta(-1500)),  # nanoseconds, as Pathway keeps them
        (datetime.timedelta(seconds=3), datetime.timedelta(days=3)),
    ])
    # as Pathway 0.33.0 writes them (recorded)
    assert str(pw.Json({"city": "Łódź", "d": pd.Timedelta("4 days 2 microseconds")})) == '{"city": "Łódź", "d": 345600000002000}'
    assert pw.Json.dumps(pw.DateTimeUtc("2025-03-14T10:13:00.123456789+00:00")) == '"2025-03-14T10:13:00.123456789+00:00"'


def test_debug_tables_take_ids_from_the_schema_primary_key():
    class Keyed(pw.Schema):
        k: int = pw.column_definition(primary_key=True)
        v: str

    from_rows = pw.debug.table_from_rows(Keyed, [(7, "a"), (9, "b")])
    from_pandas = pw.debug.table_from_pandas(pd.DataFrame({"k": [9, 7], "v": ["b", "a"]}), schema=Keyed)
    by_key = pw.debug.table_from_markdown("k | v\n7 | a\n9 | b").with_id_from(pw.this.k)
    for table in (from_rows, from_pandas):  # rows meet only where the ids are equal
        assert_rows(by_key.join(table, by_key.id == table.id).select(by_key.v, w=table.v), [("a", "a"), ("b", "b")])
    with pytest.raises(ValueError, match="either"):
        pw.debug.table_from_pandas(pd.DataFrame({"k": [1], "v": ["a"]}), schema=Keyed, id_from=["k"])


def test_py_object_wrapper_columns_and_table_to_dicts():
    class Objects(pw.Schema):
        o: pw.PyObjectWrapper[dict]

    @pw.udf
    def as_json(o: pw.PyObjectWrapper[dict]) -> pw.Json:
        return pw.Json(o.value)

    @pw.udf
    def grown(o: pw.PyObjectWrapper[dict]) -> pw.PyObjectWrapper[dict]:
        return pw.wrap_py_object({**o.value, "n": 2})

    when = pw.DateTimeNaive("2025-03-14T10:13:00.123456789")
    t = pw.debug.table_from_rows(Objects, [(pw.wrap_py_object({"when": when}),)])
    ids, columns = pw.debug.table_to_dicts(t.select(j=as_json(pw.this.o), g=grown(pw.this.o)))
    assert len(ids) == 1
    # the text Pathway 0.33.0 writes (recorded): the nanoseconds of a date-time made from text stay
    assert columns["j"][ids[0]] == pw.Json({"when": "2025-03-14T10:13:00.123456789"})
    assert isinstance(columns["g"][ids[0]], pw.PyObjectWrapper) and columns["g"][ids[0]].value == {"when": when, "n": 2}
