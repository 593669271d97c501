"""Schemas: class definitions and their checks, equality, and schemas built from dicts and
CSV headers.  Nothing here runs Spark: a schema is built before any data moves.

Expected behaviour follows Pathway 0.33 (checked against it where noted).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sparkway as pw


def test_schema_class_checks_its_column_definitions():
    with pytest.raises(ValueError, match="definitions of columns a, c lack type annotation"):
        class Unannotated(pw.Schema):
            a = pw.column_definition()
            b: int = pw.column_definition()
            c = pw.column_definition()

    with pytest.raises(ValueError, match="pw.column_definition\\(default_value=1\\)"):
        class PlainDefault(pw.Schema):
            a: int = 1

    with pytest.raises(TypeError):
        class TwoTypes(pw.Schema):
            a: int = pw.column_definition(dtype=str)

    # Pathway 0.33's wording, which its tests match
    with pytest.raises(ValueError, match="schema property `append_only` has value True but column `a` got False"):
        class Ambiguous(pw.Schema, append_only=True):
            a: int = pw.column_definition(append_only=False)


def test_schemas_are_equal_when_columns_in_order_options_and_properties_are():
    class A(pw.Schema):
        a: int = pw.column_definition(primary_key=True)
        b: str = pw.column_definition(default_value="foo")

    class Same(pw.Schema):
        a: int = pw.column_definition(primary_key=True)
        b: str = pw.column_definition(default_value="foo")

    class Reordered(pw.Schema):
        b: str = pw.column_definition(default_value="foo")
        a: int = pw.column_definition(primary_key=True)

    class NoKey(pw.Schema):
        a: int
        b: str = pw.column_definition(default_value="foo")

    class AppendOnly(pw.Schema, append_only=True):
        a: int = pw.column_definition(primary_key=True)
        b: str = pw.column_definition(default_value="foo")

    built = pw.schema_builder(
        {"a": pw.column_definition(primary_key=True, dtype=int), "b": pw.column_definition(default_value="foo", dtype=str)}
    )
    assert A == Same and A == built and hash(A) == hash(Same)
    assert A != Reordered and A != NoKey and A != AppendOnly
    with pytest.raises(TypeError):
        A()


def test_schema_from_dict_takes_types_their_names_or_column_options():
    schema = pw.schema_from_dict(
        {"a": Any, "b": {"dtype": "int", "default_value": 5}, "c": {"dtype": str, "primary_key": True}, "d": "typing.Any"},
        name="S", properties={"append_only": True},
    )
    expected = pw.schema_builder(
        {
            "a": pw.column_definition(dtype=Any),
            "b": pw.column_definition(dtype=int, default_value=5),
            "c": pw.column_definition(dtype=str, primary_key=True),
            "d": pw.column_definition(dtype=Any),
        },
        name="S", properties=pw.SchemaProperties(append_only=True),
    )
    assert schema == expected and schema.__name__ == "S"
    assert schema.primary_key_columns() == ["c"]
    with pytest.raises(ValueError, match="unknown type name"):
        pw.schema_from_dict({"a": "integer"})


def test_schema_from_csv_infers_int_float_str_from_the_rows_it_reads(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text('id,value,time,diff\n"a",x,1692262484324,1\n#"b",y,1692262510368,1.1\n"c",z,1692262510368,1\n')
    types = {name: str(kind) for name, kind in pw.schema_from_csv(str(path))._dtypes().items()}
    assert types == {"id": "str", "value": "str", "time": "int", "diff": "float"}  # "#..." is a row here
    one_row = pw.schema_from_csv(str(path), num_parsed_rows=1)._dtypes()
    assert str(one_row["diff"]) == "int"
    without_comments = pw.schema_from_csv(str(path), comment_character="#")._dtypes()
    assert str(without_comments["diff"]) == "int"
    assert {str(t) for t in pw.schema_from_csv(str(path), num_parsed_rows=0)._dtypes().values()} == {"Any"}
    assert pw.schema_from_csv(str(path), delimiter=";").column_names() == ["id,value,time,diff"]
    quoted = tmp_path / "quoted.csv"
    quoted.write_text('ID,"va""l""ue"\n"1","w"\n')
    assert pw.schema_from_csv(str(quoted)).column_names() == ["ID", 'va"l"ue']
    assert str(pw.schema_from_csv(str(quoted))._dtypes()["ID"]) == "int"


def test_schema_columns_names_properties_and_union():
    # recorded from Pathway 0.33
    class A(pw.Schema, append_only=True):
        a: int = pw.column_definition(name="@timestamp")
        b: int

    assert list(A.keys()) == ["@timestamp", "b"]  # name= names the column in the table too
    assert A["@timestamp"].append_only is True and A.universe_properties.append_only is True
    assert (A | pw.schema_from_types(c=str)).column_names() == ["c", "@timestamp", "b"]

    class C(pw.Schema):
        a: int = pw.column_definition(append_only=True)
        b: int = pw.column_definition(append_only=False)
        c: int

    assert [C[n].append_only for n in "abc"] == [True, False, False]
    assert C.universe_properties.append_only is True  # one append-only column makes the rows so


def test_assert_matches_schema():
    wide = pw.schema_from_types(a=int, b=str)
    wide.assert_matches_schema(pw.schema_from_types(a=float))  # a subtype, and more columns
    with pytest.raises(AssertionError):
        wide.assert_matches_schema(pw.schema_from_types(a=float), allow_subtype=False)
    with pytest.raises(AssertionError):
        wide.assert_matches_schema(pw.schema_from_types(a=int), allow_superset=False)


def test_schema_prints_as_pathway_does():
    # texts recorded from Pathway 0.33 (programs and doctests print schemas)
    class S(pw.Schema):
        k: int = pw.column_definition(primary_key=True)
        name: str | None
        tags: list[pw.Json]
        at: pw.DateTimeUtc

    assert repr(S) == (
        "<pathway.Schema types={'k': <class 'int'>, 'name': str | None, 'tags': list[pathway.internals.json.Json], "
        "'at': <class 'pathway.internals.datetime_types.DateTimeUtc'>}, id_type=pathway.engine.Pointer[int]>"
    )
    assert str(S) == (
        "id           | k   | name          | tags       | at\n"
        "Pointer(INT) | INT | Optional(STR) | List(Json) | DATE_TIME_UTC"
    )
    assert str(pw.schema_from_types()) == "id\nANY_POINTER"
    assert repr(pw.schema_from_types(a=tuple[int, float])).endswith(
        "types={'a': tuple[int, float]}, id_type=<class 'pathway.engine.Pointer'>>"
    )


def test_generated_schema_class_is_the_same_schema(tmp_path):
    import importlib.util

    import numpy as np

    schema = pw.schema_builder(
        {
            "k": pw.column_definition(dtype=int, primary_key=True),
            "@at": pw.column_definition(dtype=pw.DateTimeUtc),
            "tags": pw.column_definition(dtype=list[str | None], default_value=()),
            "grid": pw.column_definition(dtype=np.ndarray[tuple[int, int], np.dtype[float]]),
            "anything": pw.column_definition(dtype=Any),
            "ref": pw.column_definition(dtype=pw.Pointer[int] | None),
        },
        name="Row",
    )
    path = tmp_path / "row.py"
    schema.generate_class_to_file(path, generate_imports=True)
    spec = importlib.util.spec_from_file_location("generated_row", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.Row == schema and module.Row.primary_key_columns() == ["k"]
    assert module.Row["tags"].default_value == ()


def test_the_id_column_has_the_type_of_the_ids() -> None:
    # Pathway: schema.id.dtype, Table._id_column.dtype, dtype.Pointer(INT) and .typehint
    from sparkway.core import dtypes as dt

    grouped = pw.Table.empty(a=int, b=str).groupby(pw.this.a, pw.this.b).reduce()
    assert grouped.schema.id.dtype == dt.Pointer(dt.INT, dt.STR)
    typed = pw.Table.empty().update_id_type(pw.Pointer[int])
    assert typed._id_column.dtype.typehint == pw.Pointer[int]
    assert pw.Table.concat_reindex(typed, typed)._id_column.dtype.typehint is pw.Pointer


def test_a_serialized_schema_reads_back_and_its_defaults_are_pathways_bytes() -> None:
    class S(pw.Schema):
        key: int = pw.column_definition(primary_key=True, default_value=5)
        note: str | None
        pair: tuple[bytes, bool] = pw.column_definition(default_value=(b"w", True))
        data: pw.Json = pw.column_definition(default_value=pw.Json({"a": 1}))
        grid: np.ndarray[None, int] = pw.column_definition(default_value=np.array([[1, 2], [3, 4]]))

    data = S.to_json_serializable_dict()
    columns = data["columns"]
    # as Pathway 0.33 writes them (recorded from it)
    assert columns["note"]["dtype"] == {"type": "OPTIONAL", "wrapped": {"type": "STR"}}
    assert columns["key"]["_serialized_default_value"] == "AgAAAAUAAAAAAAAA"
    assert columns["pair"]["_serialized_default_value"] == "BwAAAAIAAAAAAAAABgAAAAEAAAAAAAAAdwEAAAAB"
    assert columns["data"]["_serialized_default_value"] == "DQAAAAcAAAAAAAAAeyJhIjoxfQ=="
    assert "_serialized_default_value" not in columns["note"]
    again = pw.schema_from_dict(**data)
    assert again.to_json_serializable_dict() == data
    assert again.primary_key_columns() == ["key"] and again.typehints()["note"] == str | None
    assert again.default_values()["grid"].tolist() == [[1, 2], [3, 4]]
