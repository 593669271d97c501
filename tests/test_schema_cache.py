"""The schemas of Spark Connect plans kept across runs (``engine/schema_cache.py``): one
digest for plans that differ only in what changes from run to run, none for plans that
read named data, and an analyser asked once per plan."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from pyspark.sql.connect.proto import base_pb2 as base
from pyspark.sql.connect.proto import expressions_pb2 as ex
from pyspark.sql.connect.proto import relations_pb2 as rel
from pyspark.sql.connect.proto import types_pb2 as types
from pyspark.sql.types import LongType, StructField, StructType

from sparkway.engine.schema_cache import keep_schemas, plan_digest


def _attribute(name: str, plan_id: int) -> ex.Expression:
    return ex.Expression(unresolved_attribute=ex.Expression.UnresolvedAttribute(unparsed_identifier=name,
                                                                                  plan_id=plan_id))


def _plan(leaf_id: int = 7, top_id: int = 8, column: str = "id", call_site: str = "a.py:1",
          leaf: rel.Relation | None = None, udf: ex.PythonUDF | None = None) -> base.Plan:
    """``range(3).select(<column> of the range[, a Python function of it])``."""
    if leaf is None:
        leaf = rel.Relation(range=rel.Range(start=0, end=3, step=1))
    leaf.common.plan_id = leaf_id
    expressions = [_attribute(column, leaf_id)]
    if udf is not None:
        expressions.append(ex.Expression(common_inline_user_defined_function=ex.CommonInlineUserDefinedFunction(
            function_name="f", deterministic=True, arguments=[_attribute(column, leaf_id)], python_udf=udf)))
    top = rel.Relation(project=rel.Project(input=leaf, expressions=expressions))
    top.common.plan_id = top_id
    top.common.origin.python_origin.call_site = call_site
    return base.Plan(root=top)


def _udf(body: bytes, output: types.DataType) -> ex.PythonUDF:
    return ex.PythonUDF(output_type=output, eval_type=100, command=body, python_ver="3.11")


LONG = types.DataType(long=types.DataType.Long())
STRING = types.DataType(string=types.DataType.String())


def test_plans_that_differ_in_plan_ids_call_sites_and_function_bodies_share_a_digest() -> None:
    first = plan_digest(_plan(7, 8, call_site="a.py:1", udf=_udf(b"pickled once", LONG)), "settings")
    again = plan_digest(_plan(40, 41, call_site="b.py:9", udf=_udf(b"pickled again", LONG)), "settings")
    assert first is not None and first == again


def test_what_decides_a_schema_changes_the_digest() -> None:
    reference = plan_digest(_plan(udf=_udf(b"f", LONG)), "settings")
    assert plan_digest(_plan(column="other", udf=_udf(b"f", LONG)), "settings") != reference
    assert plan_digest(_plan(udf=_udf(b"f", STRING)), "settings") != reference  # the declared type
    assert plan_digest(_plan(udf=_udf(b"f", LONG)), "other settings") != reference
    # the same ids in another pattern: the select reads the top, not the leaf
    swapped = _plan(udf=_udf(b"f", LONG))
    swapped.root.project.expressions[0].unresolved_attribute.plan_id = 8
    assert plan_digest(swapped, "settings") != reference


def test_plans_that_name_data_or_hide_their_leaves_have_no_digest() -> None:
    files = rel.Relation(read=rel.Read(data_source=rel.Read.DataSource(format="parquet", paths=["/data"])))
    assert plan_digest(_plan(leaf=files), "settings") is None
    table = rel.Relation(read=rel.Read(named_table=rel.Read.NamedTable(unparsed_identifier="sales")))
    assert plan_digest(_plan(leaf=table), "settings") is None
    assert plan_digest(_plan(leaf=rel.Relation(sql=rel.SQL(query="select 1"))), "settings") is None
    cached = rel.Relation(cached_remote_relation=rel.CachedRemoteRelation(relation_id="a1"))
    assert plan_digest(_plan(leaf=cached), "settings") is None
    compressed = base.Plan(compressed_operation=base.Plan.CompressedOperation(data=b"\x28\xb5"))
    assert plan_digest(compressed, "settings") is None


def test_a_rerun_takes_the_schema_from_the_folder_and_a_damaged_entry_is_asked_again(tmp_path: Path) -> None:
    asked: list[base.Plan] = []
    schema = StructType([StructField("id", LongType())])

    def analyse(plan: base.Plan) -> StructType:
        asked.append(plan)
        return schema

    def session() -> SimpleNamespace:  # what a run attached to a Connect server holds
        spark = SimpleNamespace(client=SimpleNamespace(schema=analyse))
        keep_schemas(spark, tmp_path / "schemas", "settings")  # type: ignore[arg-type]
        return spark

    assert session().client.schema(_plan(1, 2)) == schema
    assert session().client.schema(_plan(5, 6)) == schema  # a rerun: new plan ids
    assert len(asked) == 1
    files = rel.Relation(read=rel.Read(data_source=rel.Read.DataSource(format="parquet", paths=["/data"])))
    rerun = session()
    rerun.client.schema(_plan(leaf=files))
    rerun.client.schema(_plan(leaf=files))
    assert len(asked) == 3  # named data: asked every time
    (entry,) = (tmp_path / "schemas").iterdir()
    entry.write_text('{"type": "struct", "fie')
    assert session().client.schema(_plan(1, 2)) == schema
    assert len(asked) == 4 and StructType.fromJson(json.loads(entry.read_text())) == schema
