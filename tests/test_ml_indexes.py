"""pw.indexing (nearest neighbours, BM25, hybrid index, DataIndex) and pw.ml (KNNIndex,
k-NN classification, fuzzy matching, HMM decoding).

Expected values are computed here with numpy or worked out by hand from the inputs,
unless a comment says they were recorded from Pathway 0.33.0.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from tables import assert_changes, assert_rows, rows

import sparkway as pw
from sparkway.stdlib.indexing import (
    BruteForceKnn, BruteForceKnnMetricKind, DataIndex, HybridIndex, LshKnn, TantivyBM25, USearchKnn,
    USearchMetricKind, UsearchKnnFactory,
)
from sparkway.stdlib.indexing.bm25 import tokenize
from sparkway.stdlib.indexing.colnames import _SCORE
from sparkway.stdlib.indexing.metadata_filters import globmatch, passes
from sparkway.stdlib.ml.index import KNNIndex


def _vectors(name: str, points: np.ndarray) -> pw.Table:
    schema = pw.schema_from_types(**{name: int, "v": list[float]})
    return pw.debug.table_from_rows(schema, [(i, [float(x) for x in p]) for i, p in enumerate(points)])


def _numpy_nearest(data: np.ndarray, query: np.ndarray, k: int, metric: str) -> list[tuple[int, float]]:
    if metric == "l2sq":
        distance = ((data - query) ** 2).sum(axis=1)
    elif metric == "cos":
        distance = 1 - data @ query / (np.linalg.norm(data, axis=1) * np.linalg.norm(query))
    else:  # ip
        distance = 1 - data @ query
    order = np.argsort(distance)[:k]
    return [(int(i), float(distance[i])) for i in order]


def test_exact_nearest_neighbours_agree_with_numpy():
    generator = np.random.default_rng(7)
    points, asked = generator.normal(size=(25, 4)), generator.normal(size=(6, 4))
    docs, queries = _vectors("name", points), _vectors("q", asked)
    found = queries.select(queries.q)
    indexes = {
        "l2sq": BruteForceKnn(docs.v, None, dimensions=4, reserved_space=10, metric=BruteForceKnnMetricKind.L2SQ),
        "cos": BruteForceKnn(docs.v, None, dimensions=4, reserved_space=10, metric=BruteForceKnnMetricKind.COS),
        "ip": USearchKnn(docs.v, None, dimensions=4, reserved_space=10, metric=USearchMetricKind.IP),
    }
    for metric, inner in indexes.items():
        answers = DataIndex(docs, inner).query_as_of_now(queries.v, number_of_matches=3)
        found += answers.select(**{metric: pw.right.name, f"{metric}_score": pw.right[_SCORE]})
    # the live answers of the exact index (beyond Pathway, which answers as of now only)
    live = DataIndex(docs, indexes["l2sq"]).query(queries.v, number_of_matches=3)
    found += live.select(live_l2sq=pw.right.name)
    for q, *got in rows(found):
        for (metric, (names, scores)) in zip(indexes, zip(got[0:6:2], got[1:6:2])):
            expected = _numpy_nearest(points, asked[q], 3, metric)
            assert list(names) == [i for i, _ in expected], (metric, q)
            assert np.allclose(scores, [-d for _, d in expected]), (metric, q)
        assert list(got[6]) == [i for i, _ in _numpy_nearest(points, asked[q], 3, "l2sq")]


STREAM_DATA = """
  | name | x | y | __time__ | __diff__
1 | a    | 0 | 0 | 2        | 1
2 | b    | 5 | 5 | 2        | 1
3 | c    | 1 | 1 | 4        | 1
3 | c    | 1 | 1 | 6        | -1
"""


def _points(markdown: str) -> pw.Table:
    table = pw.debug.table_from_markdown(markdown)
    return table.select(table.name, v=pw.make_tuple(pw.cast(float, table.x), pw.cast(float, table.y)))


@pytest.mark.parametrize("kind", ["lsh", "brute_force"])
def test_live_answers_follow_insertions_and_deletions(kind):
    data = _points(STREAM_DATA)
    queries = _points("name | x | y | __time__\np    | 2 | 2 | 2")
    if kind == "lsh":
        inner = LshKnn(data.v, None, dimensions=2, n_or=4, n_and=2, bucket_length=100.0)
    else:
        inner = BruteForceKnn(data.v, None, dimensions=2, reserved_space=10, metric=BruteForceKnnMetricKind.L2SQ)
    found = DataIndex(data, inner).query(queries.v, number_of_matches=1).select(pw.left.name, near=pw.right.name)
    # (2, 2) is nearest to a (0, 0), then to c (1, 1) while c exists
    assert_changes(found, [
        [("p", ["a"], 1)],
        [("p", ["a"], -1), ("p", ["c"], 1)],
        [("p", ["a"], 1), ("p", ["c"], -1)],
    ])


def test_answers_as_of_now_are_given_once():
    data = _points(STREAM_DATA)
    queries = _points("name | x | y | __time__\np    | 2 | 2 | 2\nr    | 2 | 2 | 4\ns    | 2 | 2 | 6")
    inner = BruteForceKnn(data.v, None, dimensions=2, reserved_space=10, metric=BruteForceKnnMetricKind.L2SQ)
    found = DataIndex(data, inner).query_as_of_now(queries.v, number_of_matches=1, collapse_rows=False)
    # r is answered with c, which exists at its time, and keeps that answer when c goes
    assert_changes(found.select(pw.left.name, near=pw.right.name), [
        [("p", "a", 1)],
        [("r", "c", 1)],
        [("s", "a", 1)],
    ])


def test_metadata_filters_and_numbers_of_matches_per_query():
    docs = pw.debug.table_from_markdown("""
    name | x | meta
    a    | 0 | {"lang": "en", "path": "docs/a.md"}
    b    | 1 | {"lang": "pl", "path": "docs/x/b.md"}
    c    | 2 | {"lang": "en", "path": "src/c.py"}
    """, split_on_whitespace=False)
    docs = docs.select(docs.name, v=pw.make_tuple(pw.cast(float, docs.x)),
                       meta=pw.apply_with_type(pw.Json.parse, pw.Json, docs.meta))
    queries = pw.debug.table_from_rows(
        pw.schema_from_types(q=str, v=tuple[float], k=int, f=str | None),
        [("all", (0.0,), 3, None), ("en", (0.0,), 3, "lang == 'en'"), ("md", (2.0,), 3, "globmatch('docs/**', path)"),
         ("one", (2.0,), 1, None), ("none", (0.0,), 0, None)],
    )
    index = DataIndex(docs, BruteForceKnn(docs.v, docs.meta, dimensions=1, reserved_space=3,
                                          metric=BruteForceKnnMetricKind.L2SQ))
    found = index.query_as_of_now(queries.v, number_of_matches=queries.k, metadata_filter=queries.f)
    assert_rows(found.select(pw.left.q, pw.right.name), [
        ("all", ("a", "b", "c")), ("en", ("a", "c")), ("md", ("b", "a")), ("one", ("c",)), ("none", ()),
    ])


def test_bm25_scores_match_a_hand_computation():
    docs = pw.debug.table_from_markdown("""
    d | text
    1 | Apple, banana; APPLE!
    2 | banana cherry
    3 | cherry date elder fig
    """, split_on_whitespace=False)
    queries = pw.debug.table_from_markdown("q\napple cherry\nmango", split_on_whitespace=False)
    found = DataIndex(docs, TantivyBM25(docs.text, None)).query_as_of_now(queries.q, number_of_matches=5)
    result = {q: (tuple(d), tuple(s)) for q, d, s in rows(found.select(pw.left.q, pw.right.d, pw.right[_SCORE]))}
    # N = 3 documents of 3, 2 and 4 tokens (average 3); k1 = 1.2, b = 0.75
    apple_idf, cherry_idf = math.log(1 + 2.5 / 1.5), math.log(1 + 1.5 / 2.5)
    d1 = apple_idf * 2.2 * 2 / (2 + 1.2 * (0.25 + 0.75 * 3 / 3))
    d2 = cherry_idf * 2.2 * 1 / (1 + 1.2 * (0.25 + 0.75 * 2 / 3))
    d3 = cherry_idf * 2.2 * 1 / (1 + 1.2 * (0.25 + 0.75 * 4 / 3))
    assert result["apple cherry"][0] == (1, 2, 3)
    assert np.allclose(result["apple cherry"][1], [d1, d2, d3])
    assert np.allclose([d1, d2, d3], [1.34864, 0.54421, 0.41360], atol=1e-5)
    assert result["mango"] == ((), ())
    assert tokenize("Ünïcode wörds, x_y 42") == ["ünïcode", "wörds", "x", "y", "42"]


def test_hybrid_index_fuses_ranks():
    docs = pw.debug.table_from_markdown("name\nx\ny\nz")

    @pw.udf
    def first(name: str) -> list[float]:  # from the query "q": x, then y, then z
        return {"q": [0.0], "x": [1.0], "y": [2.0], "z": [9.0]}[name]

    @pw.udf
    def second(name: str) -> list[float]:  # y, then z, then x
        return {"q": [0.0], "x": [9.0], "y": [1.0], "z": [2.0]}[name]

    def knn(embedder):
        return BruteForceKnn(docs.name, None, dimensions=1, reserved_space=3, metric=BruteForceKnnMetricKind.L2SQ,
                             embedder=embedder)

    queries = pw.debug.table_from_markdown("q\nq")
    index = DataIndex(docs, HybridIndex([knn(first), knn(second)], k=1))
    found = index.query_as_of_now(queries.q, number_of_matches=2, collapse_rows=True)
    ((names, scores),) = rows(found.select(pw.right.name, pw.right[_SCORE]))
    # each index gives 1/(k + rank): y 1/3 + 1/2, x 1/2 + 1/4 (x is third of the second)
    assert names == ("y", "x") and np.allclose(scores, [1 / 3 + 1 / 2, 1 / 2])


def test_knn_index_distances_empty_answers_and_flat_rows():
    # recorded from Pathway 0.33.0 (KNNIndex's docstring): with these settings the query
    # far from every document shares no bucket with any, so it finds none
    docs = pw.debug.table_from_rows(
        pw.schema_from_types(document=str, embeddings=list[float]),
        [("document 1", [1.0, -1.0, 0.0]), ("document 2", [1.0, 1.0, 0.0]), ("document 3", [0.0, 0.0, 1.0])],
    )
    queries = pw.debug.table_from_rows(
        pw.schema_from_types(query=str, embeddings=list[float]),
        [("near", [0.1, 0.1, 0.1]), ("far", [-1.0, 10.0, -10.0])],
    )
    index = KNNIndex(docs.embeddings, docs, n_dimensions=3)
    collapsed = queries.select(queries.query) + index.get_nearest_items(queries.embeddings, k=2, with_distances=True)
    ((far, far_docs, far_dist), (near, near_docs, near_dist)) = rows(
        collapsed.select(pw.this.query, pw.this.document, pw.this.dist))
    assert (far, tuple(far_docs), tuple(far_dist)) == ("far", (), ())
    # squared distances, nearest first
    assert tuple(near_docs) == ("document 3", "document 2") and np.allclose(near_dist, [0.83, 1.63])
    flat = index.get_nearest_items(queries.embeddings, k=1, collapse_rows=False)
    assert_rows(flat.select(pw.this.document, asked=queries.ix(pw.this.query_id).query), [
        (None, "far"), ("document 3", "near"),
    ])


def test_index_type_errors_name_the_columns():
    table = pw.debug.table_from_markdown("text | n\naaa | 1")
    with pytest.raises(TypeError, match="data column should be compatible with type Array but is of type STR"):
        DataIndex(table, LshKnn(table.text, None, dimensions=2)).query(table.text)
    with pytest.raises(TypeError, match="query column should be compatible with type STR but is of type INT"):
        DataIndex(table, TantivyBM25(table.text, None)).query_as_of_now(table.n)
    with pytest.raises(ValueError, match="Either `dimensions` or `embedder`"):
        UsearchKnnFactory()
    with pytest.raises(ValueError, match="HAMMING metric is not available"):
        USearchKnn(table.text, None, dimensions=2, reserved_space=1, metric=USearchMetricKind.HAMMING)
    with pytest.raises(NotImplementedError, match="as-of-now"):
        TantivyBM25(table.text, None).query(table.text)


def test_metadata_filters_and_globs():
    assert passes("a.b == `1`", {"a": {"b": 1}}) and not passes("a.b == `1`", {"a": {}})
    assert not passes("a", {"a": 1})  # only true passes, not a truthy value
    assert passes(None, None)
    assert globmatch("**/*.md", "x/y/z.md") and globmatch("**", "x") and not globmatch("x/*", "x/y/z")
    with pytest.raises(Exception, match="Parse"):
        passes("p==0", {})


def test_fuzzy_match_tables_by_hand():
    left = pw.debug.table_from_markdown("name | city\nAnn | Paris\nBob | Rome\nCid | Oslo")
    right = pw.debug.table_from_markdown("who | where\nann | Rome\nbob | Paris\ncid | Lima")
    matches = pw.ml.smart_table_ops.fuzzy_match_tables(left, right)
    # Paris and Rome are each a word of two rows: weight 1 / (bits of 2) = 1/2; Oslo and
    # Lima match nothing
    assert_rows(
        matches.select(a=left.ix(matches.left).name, b=right.ix(matches.right).who, w=matches.weight),
        [("Ann", "bob", 0.5), ("Bob", "ann", 0.5)],
    )


def test_fuzzy_self_match_by_letters_keeps_the_best_partner():
    names = pw.debug.table_from_markdown("name\nabc\nabd\nxyz\nxyw")
    matches = pw.ml.smart_table_ops.smart_fuzzy_match(
        names.name, names.name, feature_generation=pw.ml.smart_table_ops.FuzzyJoinFeatureGeneration.LETTERS,
    )
    # a and b: two rows each, weight 1/2 each; abc-abd share both: 1.0; likewise x, y
    found = matches.select(pair=pw.apply(lambda a, b: tuple(sorted((a, b))), names.ix(matches.left).name,
                                         names.ix(matches.right).name), w=matches.weight)
    assert_rows(found, [(("abc", "abd"), 1.0), (("xyw", "xyz"), 1.0)])


def test_a_restarted_index_outputs_only_the_answers_that_changed(tmp_path):
    from sparkway.api import graph

    (tmp_path / "docs").mkdir()
    (tmp_path / "queries").mkdir()

    class Doc(pw.Schema):
        name: str
        x: float
        y: float

    class Query(pw.Schema):
        q: str
        x: float
        y: float

    def run() -> list[tuple]:
        graph.clear()
        docs = pw.io.csv.read(tmp_path / "docs", schema=Doc, mode="static", name="docs")
        queries = pw.io.csv.read(tmp_path / "queries", schema=Query, mode="static", name="queries")
        docs = docs.with_columns(v=pw.make_tuple(docs.x, docs.y))
        queries = queries.with_columns(v=pw.make_tuple(queries.x, queries.y))
        inner = LshKnn(docs.v, None, dimensions=2, n_or=4, n_and=2, bucket_length=100.0)
        found = DataIndex(docs, inner).query(queries.v, number_of_matches=1).select(pw.left.q, near=pw.right.name)
        (tmp_path / "out.jsonl").unlink(missing_ok=True)
        pw.io.jsonlines.write(found, tmp_path / "out.jsonl")
        pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state")))
        lines = (tmp_path / "out.jsonl").read_text().splitlines()
        return sorted((r["q"], tuple(r["near"]), r["diff"]) for r in map(json.loads, lines))

    (tmp_path / "docs" / "a.csv").write_text("name,x,y\na,0,0\nb,5,5\n")
    (tmp_path / "queries" / "a.csv").write_text("q,x,y\np,2,2\n")
    assert run() == [("p", ("a",), 1)]
    (tmp_path / "docs" / "b.csv").write_text("name,x,y\nc,1,1\n")
    assert run() == [("p", ("a",), -1), ("p", ("c",), 1)]  # c is nearer to (2, 2)


def test_knn_classification_takes_the_majority_label_of_the_neighbours():
    from sparkway.stdlib.ml.classifiers import knn_lsh_classifier_train, knn_lsh_classify

    points = pw.debug.table_from_markdown("""
      | x  | y  | label
    1 | 0  | 0  | a
    2 | 1  | 0  | a
    3 | 10 | 10 | b
    4 | 11 | 10 | b
    5 | 10 | 11 | b
    """)
    data = points.select(data=pw.make_tuple(pw.this.x, pw.this.y))
    labels = points.select(pw.this.label)
    queries = pw.debug.table_from_markdown("  | x | y\n1 | 0 | 1\n2 | 9 | 9").select(
        data=pw.make_tuple(pw.this.x, pw.this.y))
    # cells of 1000: every point shares every bucket, so the neighbours are the exact ones:
    # (0, 1) has a, a and b (distance 181); (9, 9) has three b
    model = knn_lsh_classifier_train(data, L=3, d=2, M=2, A=1000)
    found = knn_lsh_classify(model, labels, queries, k=3)
    assert_rows(queries.select(queries.data) + found, [((0, 1), "a"), ((9, 9), "b")])
