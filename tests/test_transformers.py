"""Row transformers (``pw.transformer``) and ``pw.table_transformer``.

Expected values are worked out by hand; the streaming ones were also checked against
Pathway 0.33.0 (whose transformers are ``pathway.internals.transformer`` & co.).
Transformers are made by functions here, so that Spark's workers get their classes by
value (this test module cannot be imported there).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest
from tables import assert_changes, assert_rows

import sparkway as pw
from sparkway.api import graph


def _tree() -> Any:
    @pw.transformer
    class tree:
        class nodes(pw.ClassArg):
            parent = pw.input_attribute()
            value = pw.input_attribute()
            scale = 10

            @staticmethod
            def double(x: int) -> int:
                return 2 * x

            def scaled(self, x: int) -> int:
                return x * self.scale

            @pw.output_attribute
            def depth(self) -> int:
                return 0 if self.parent is None else self.transformer.nodes[self.parent].depth + 1

            @pw.attribute
            def parent_total(self) -> int:
                return 0 if self.parent is None else self.transformer.nodes[self.parent].total

            @pw.output_attribute(output_name="path_total")
            def total(self) -> int:
                return self.value + self.parent_total

            @pw.output_attribute
            def fancy(self) -> int:
                return self.scaled(self.double(self.value))

            @pw.method
            def above(self, steps: int) -> int:
                node = self
                for _ in range(steps):
                    if node.parent is None:
                        return -1
                    node = self.transformer.nodes[node.parent]
                return node.value

    return tree


def _nodes(markdown: str) -> pw.Table:
    """Nodes named by ``name``, with the id of their parent (named by ``parent_name``)."""
    t = pw.debug.table_from_markdown(markdown).with_id_from(pw.this.name)
    return t.select(pw.this.name, pw.this.value, parent=pw.this.pointer_from(pw.this.parent_name, optional=True))


TREE = """
name | parent_name | value
a    |             | 1
b    | a           | 10
c    | b           | 100
d    | a           | 1000
"""


def test_attributes_follow_pointers_and_outputs_keep_the_input_ids():
    t = _nodes(TREE)
    out = _tree()(t).nodes
    # columns in the order of the attributes' names, named by output_name
    assert out.column_names() == ["above", "depth", "fancy", "path_total"]
    assert str(out.schema._dtypes()["above"]) == "Callable(..., int)"
    assert_rows(
        t.select(t.name, out.depth, out.path_total, out.fancy),  # same ids: columns side by side
        [("a", 0, 1, 20), ("b", 1, 11, 200), ("c", 2, 111, 2000), ("d", 1, 1001, 20000)],
    )


def test_methods_are_called_in_later_operations():
    t = _nodes(TREE)
    out = _tree()(t).nodes
    renamed = out.select(up=out.above)  # a method column moves with select
    c_row = out.ix_ref("c", context=t)  # a looked-up row's method
    assert_rows(
        t.select(t.name, up1=out.above(1), up2=out.above(pw.this.value % 7), moved=renamed.up(1), of_c=c_row.above(1)),
        [  # 10 % 7 = 3, 100 % 7 = 2, 1000 % 7 = 6
            ("a", -1, -1, -1, 10), ("b", 1, -1, 1, 10), ("c", 10, 1, 10, 10), ("d", 1, -1, 1, 10),
        ],
    )
    assert_rows(out.filter(out.above(1) == 1).select(out.depth), [(1,), (1,)])  # b and d
    combined = t + out
    assert_rows(
        combined.groupby(combined.depth).reduce(combined.depth, s=pw.reducers.sum(combined.above(1))),
        [(0, -1), (1, 2), (2, 10)],
    )


def test_changes_reach_the_rows_that_read_them_through_pointers():
    t = _nodes("""
          | name | parent_name | value | __time__ | __diff__
        1 | a    |             | 1     | 2        | 1
        2 | b    | a           | 10    | 2        | 1
        3 | c    | b           | 100   | 2        | 1
        4 | d    | a           | 1000  | 2        | 1
        1 | a    |             | 1     | 4        | -1
        1 | a    |             | 2     | 4        | 1
        3 | c    | b           | 100   | 6        | -1
        3 | c    | b           | 200   | 6        | 1
    """)
    out = _tree()(t).nodes
    assert_changes(t.select(t.name, out.path_total), [
        [("a", 1, 1), ("b", 11, 1), ("c", 111, 1), ("d", 1001, 1)],
        # the root's value is in every path
        [("a", 1, -1), ("a", 2, 1), ("b", 11, -1), ("b", 12, 1), ("c", 111, -1), ("c", 112, 1),
         ("d", 1001, -1), ("d", 1002, 1)],
        [("c", 112, -1), ("c", 212, 1)],  # a leaf: only its own row
    ])


def _walk() -> Any:
    @pw.transformer
    class walk:
        class nodes(pw.ClassArg):
            next = pw.input_attribute()
            value = pw.input_attribute()

        class requests(pw.ClassArg):
            start = pw.input_attribute()
            steps = pw.input_attribute()

            @pw.output_attribute
            def reached(self) -> int:
                node = self.transformer.nodes[self.start]
                for _ in range(self.steps):
                    node = self.transformer.nodes[node.next]
                return node.value

            @pw.output_attribute
            def same_as_own_class(self) -> bool:
                return walk.requests(self, self.id).steps == self.steps  # Transformer.class(self, pointer)

    return walk


def test_two_classes_one_reading_the_other():
    nodes = pw.debug.table_from_markdown("""
        k | next_k | value
        1 | 2      | 10
        2 | 3      | 20
        3 | 1      | 30
    """).with_id_from(pw.this.k)
    nodes = nodes.select(pw.this.value, next=pw.this.pointer_from(pw.this.next_k))
    requests = pw.debug.table_from_markdown("""
        start_k | steps
        1       | 0
        1       | 4
        3       | 2
    """)
    requests = requests.select(pw.this.steps, start=nodes.pointer_from(pw.this.start_k))
    result = _walk()(nodes, requests)  # positionally: classes in the order of their names
    assert list(result.keys()) == ["nodes", "requests"] and result.nodes.column_names() == []
    assert_rows(requests.select(requests.steps, result.requests.reached, result["requests"].same_as_own_class), [
        (0, 10, True), (2, 20, True), (4, 20, True),
    ])


def _prices() -> Any:
    @pw.transformer
    class prices:
        class products(pw.ClassArg):
            unit = pw.input_attribute()

            @pw.method
            def cost(self, quantity: int) -> int:
                return self.unit * quantity

    return prices


def _orders() -> Any:
    @pw.transformer
    class orders:
        class lines(pw.ClassArg):
            quantity = pw.input_attribute()
            price = pw.input_method(int)

            @pw.output_attribute
            def total(self) -> int:
                return self.price(self.quantity)

            @pw.method
            def discounted(self, percent: int) -> int:
                return self.total - self.price(self.quantity) * percent // 100

    return orders


def test_method_columns_are_input_methods_of_other_transformers():
    products = pw.debug.table_from_markdown("""
        name  | unit
        apple | 3
        pear  | 5
    """).with_id_from(pw.this.name)
    costs = _prices()(products=products).products
    lines = pw.debug.table_from_markdown("""
        product | quantity
        apple   | 10
        pear    | 2
        apple   | 1
    """)
    lines = lines.select(pw.this.quantity, price=costs.ix_ref(pw.this.product).cost)
    out = _orders()(lines=lines).lines
    assert_rows(lines.select(lines.quantity, out.total, d=out.discounted(50)), [(1, 3, 2), (2, 10, 5), (10, 30, 15)])


class Chain(pw.Schema):
    k: int = pw.column_definition(primary_key=True)
    prev: int | None


def test_deep_chains_of_rows():
    n = 3000  # each row reads the one before it: recursion one level per row
    t = pw.debug.table_from_rows(Chain, [(k, k - 1 if k else None) for k in range(n)])
    t = t.select(pw.this.k, prev=pw.this.pointer_from(pw.this.prev, optional=True))
    out = _tree()(t.select(parent=pw.this.prev, value=pw.this.k)).nodes
    assert_rows(t.filter(t.k == n - 1).select(out.depth), [(n - 1,)])


def _pointers() -> Any:
    @pw.transformer
    class pointers:
        class rows(pw.ClassArg):
            key = pw.input_attribute()

            @pw.output_attribute
            def own(self) -> bool:
                return self.pointer_from(self.key) == self.id

            @pw.output_attribute
            def none(self) -> bool:
                return self.pointer_from(None, optional=True) is None

    return pointers


def test_pointer_from_gives_the_ids_of_tables():
    t = pw.debug.table_from_markdown("key\nx\nyz\nlonger_than_thirty_two_bytes_to_be_sure").with_id_from(pw.this.key)
    assert_rows(_pointers()(t).rows, [(True, True)] * 3)


def test_a_restarted_program_outputs_only_what_changed(tmp_path: Path):
    (tmp_path / "in").mkdir()

    class Node(pw.Schema):
        name: str = pw.column_definition(primary_key=True)
        parent: str
        value: int

    def run() -> list[tuple[str, int, int]]:
        graph.clear()
        t = pw.io.csv.read(tmp_path / "in", schema=Node, mode="static", name="nodes")
        t = t.select(pw.this.name, pw.this.value, parent=pw.if_else(
            pw.this.parent == "-", None, pw.this.pointer_from(pw.this.parent)))
        out = _tree()(t).nodes
        pw.io.jsonlines.write(t.select(t.name, out.path_total), tmp_path / "out.jsonl")
        pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state")))
        lines = (tmp_path / "out.jsonl").read_text().splitlines()
        return sorted((r["name"], r["path_total"], r["diff"]) for r in map(json.loads, lines))

    (tmp_path / "in" / "a.csv").write_text("name,parent,value\na,-,1\nb,a,10\n")
    assert run() == [("a", 1, 1), ("b", 11, 1)]
    (tmp_path / "in" / "b.csv").write_text("name,parent,value\nc,b,100\n")
    assert run() == [("c", 111, 1)]


# -- errors ----------------------------------------------------------------------------------


def test_build_time_errors():
    t = _nodes(TREE)
    with pytest.raises(KeyError, match="reads column.*'parent'.*its columns: name, value"):
        _tree()(t.without(pw.this.parent))
    with pytest.raises(TypeError, match="needs a table for each of its classes; missing: requests"):
        _walk()(t)
    with pytest.raises(TypeError, match="has no class 'edges'"):
        _walk()(nodes=t, requests=t, edges=t)
    with pytest.raises(TypeError, match="input method lines.price needs a method column"):
        _orders()(lines=pw.debug.table_from_markdown("quantity | price\n1 | 2"))
    with pytest.raises(TypeError, match="only method columns"):
        t.select(x=t.value(1))
    out = _tree()(t).nodes
    with pytest.raises(ValueError, match="a method column can be called in select"):
        t.join(out, t.id == out.id).select(x=out.above(1))
    other = _tree()(t).nodes
    with pytest.raises(TypeError, match="method columns of different transformers or methods cannot be combined"):
        t.select(m=pw.if_else(t.value > 5, out.above, other.above))

    class Expected(pw.Schema):
        depth: int

    with pytest.raises(RuntimeError, match="output schema validation error"):
        class nodes(pw.ClassArg, output=Expected):
            @pw.output_attribute(output_name="height")
            def depth(self) -> int:
                return 0


def _run_error(table: pw.Table, **kwargs: Any) -> Exception:
    with pytest.raises(pw.errors.ComputationError) as caught:
        pw.debug.compute_and_print(table, **kwargs)
    return caught.value


def _computed(attribute: Callable[[Any], Any]) -> pw.Table:
    """The output of a transformer computing ``attribute`` for the rows of a table (3, and 4)."""
    @pw.transformer
    class single:
        class rows(pw.ClassArg):
            a = pw.input_attribute()
            p = pw.input_attribute()
            out = pw.output_attribute(attribute)

    t = pw.debug.table_from_markdown("k | a | other\n1 | 3 | 2\n2 | 4 | 1").with_id_from(pw.this.k)
    return single(t.select(pw.this.a, p=pw.this.pointer_from(pw.this.other))).rows


def test_errors_of_a_run_name_the_line_of_the_transformer():
    def cycle(self: Any) -> int:
        return self.transformer.rows[self.p].out  # each row reads the other's

    error = _run_error(_computed(cycle))
    assert isinstance(error, RecursionError) and "single.rows.out" in str(error) and "depends on itself" in str(error)
    assert "return self.transformer.rows[self.p].out  # each row reads the other's" in error.__notes__[0]
    missing = _computed(lambda self: self.transformer.rows[self.pointer_from("nowhere")].a)
    error = _run_error(missing, terminate_on_error=False)  # no Error values: the run stops, as in Pathway
    assert isinstance(error, KeyError) and "single.rows has no row with id" in str(error)


def test_wrong_values_and_references_fail_the_run():
    def text(self: Any) -> int:
        return "not an int"

    def whole(self: Any) -> int:
        return self.a / 2 * 2  # a float that is a whole number fits an int column

    error = _run_error(_computed(text))
    assert isinstance(error, TypeError) and "single.rows.out returned 'not an int' (str)" in str(error)
    assert isinstance(_run_error(_computed(lambda self: self.transformer.rows["x"].a)), TypeError)
    other = _tree()
    assert "another transformer" in str(_run_error(_computed(lambda self: other.nodes(self, self.id).value)))
    error = _run_error(_computed(lambda self: self.b))
    assert isinstance(error, AttributeError) and "`rows` has no attribute `b`" in str(error)
    assert_rows(_computed(whole), [(3,), (4,)])

    @pw.transformer
    class lying:
        class rows(pw.ClassArg):
            @pw.method
            def half(self, k: int) -> int:
                return "half"

    t = pw.debug.table_from_markdown("a\n3")
    error = _run_error(t.select(h=lying(t).rows.half(1)))
    assert isinstance(error, TypeError) and "lying.rows.half returned 'half' (str)" in str(error)


# -- pw.table_transformer ----------------------------------------------------------------------


class Pair(pw.Schema):
    a: int
    b: int


class Summed(pw.Schema):
    a: int
    b: int
    s: int


def test_table_transformer_checks_the_annotated_tables():
    @pw.table_transformer
    def add(t: pw.Table[Pair], offset: int) -> pw.Table[Summed]:
        return t.with_columns(s=pw.this.a + pw.this.b + offset)

    t = pw.debug.table_from_markdown("a | b\n1 | 2")
    assert_rows(add(t, offset=10), [(1, 2, 13)])
    assert_rows(add(t.with_columns(c=0), 0), [(1, 2, 0, 3)])  # extra columns pass by default
    with pytest.raises(AssertionError, match="argument t of add has incorrect schema: the table has no column 'b'"):
        add(t.select(pw.this.a), 0)

    @pw.table_transformer(allow_superset={"return": False})
    def strict(t: pw.Table[Pair]) -> pw.Table[Pair]:
        return t

    assert_rows(strict(t), [(1, 2)])
    with pytest.raises(AssertionError, match="the return value of strict has incorrect schema"):
        strict(t.with_columns(c=0))
