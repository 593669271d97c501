"""Fuzzy matching of rows of two tables (or of one table with itself) by shared features.

Rows ("nodes") have features (e.g. the words or letters of a text) through weighted
edges. A pair of nodes sharing features gets the sum, over each pair of their edges to
one feature, of the two edges' weights times the feature's weight, normalized by how
many edges the feature has (common features count less). Then each node keeps one
partner: every left node its best right node, then every right node its best left node
among those (ties by the nodes' ids), so that the matching is one to one.

Features with ``HEAVY_LIGHT_THRESHOLD`` edges or more ("heavy") do not make pairs: they
only add to the weight of pairs that lighter features make, which keeps a very common
feature from pairing everything with everything.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from enum import IntEnum, auto
from typing import Any

from sparkway.api import reducers
from sparkway.api.functions import apply_with_type, make_tuple
from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.api.thisclass import left, right
from sparkway.core.dtypes import Pointer
from sparkway.core.expression import ColumnRef


class Node(Schema):
    pass


class Feature(Schema):
    weight: float
    normalization_type: int


class Edge(Schema):
    node: Pointer
    feature: Pointer
    weight: float


class JoinResult(Schema):
    left: Pointer
    right: Pointer
    weight: float


def _words(value: Any) -> list[str]:
    return str(value).split()


def _letters(value: Any) -> list[str]:
    return [c.lower() for c in str(value) if c.isalnum()]


class FuzzyJoinFeatureGeneration(IntEnum):
    """How a value becomes features: ``TOKENIZE`` its whitespace-separated words,
    ``LETTERS`` its letters and digits (lower-cased), ``AUTO`` as ``TOKENIZE``."""

    AUTO = auto()
    TOKENIZE = auto()
    LETTERS = auto()

    @property
    def generate(self) -> Callable[[Any], list[str]]:
        return _letters if self is FuzzyJoinFeatureGeneration.LETTERS else _words


def _by_power_of_two(count: float) -> float:
    return 0.0 if count == 0 else 1 / 2 ** math.ceil(math.log2(count))


def _by_bits(count: float) -> float:
    return 0.0 if count == 0 else 1 / math.ceil(math.log2(count + 1))


def _unchanged(count: float) -> float:
    return count


class FuzzyJoinNormalization(IntEnum):
    """The factor of a feature with ``n`` edges: ``WEIGHT`` 1 / (n rounded up to a power
    of two), ``LOGWEIGHT`` 1 / (the number of bits of n), ``NONE`` n itself.

    >>> FuzzyJoinNormalization.WEIGHT.normalize(3), FuzzyJoinNormalization.LOGWEIGHT.normalize(3)
    (0.25, 0.5)
    """

    WEIGHT = auto()
    LOGWEIGHT = auto()
    NONE = auto()

    @property
    def normalize(self) -> Callable[[float], float]:
        return {
            FuzzyJoinNormalization.WEIGHT: _by_power_of_two,
            FuzzyJoinNormalization.LOGWEIGHT: _by_bits,
            FuzzyJoinNormalization.NONE: _unchanged,
        }[self]


def _normalized(count: int, normalization_type: int) -> float:
    return FuzzyJoinNormalization(normalization_type).normalize(count)


def _joined_text(*values: Any) -> str:
    return " ".join(str(v) for v in values)


def fuzzy_match_tables(
    left_table: Table,
    right_table: Table,
    *,
    by_hand_match: Table | None = None,
    normalization: FuzzyJoinNormalization = FuzzyJoinNormalization.LOGWEIGHT,
    feature_generation: FuzzyJoinFeatureGeneration = FuzzyJoinFeatureGeneration.AUTO,
    left_projection: dict[str, str] | None = None,
    right_projection: dict[str, str] | None = None,
) -> Table:
    """Matches rows of two tables by the words of their values (all columns' values in
    one text). With projections (column -> group name, for both tables), only columns
    of the same group are compared, and a pair's weight sums its groups' matches.
    Columns ``left``, ``right`` (ids of the tables' rows) and ``weight``.

    >>> import sparkway as pw
    >>> a = pw.debug.table_from_markdown("name | city\\nAnn | Paris\\nBob | Rome")
    >>> b = pw.debug.table_from_markdown("who | where\\nann | Rome\\nbob | Paris")
    >>> m = pw.ml.smart_table_ops.fuzzy_match_tables(a, b)
    >>> pw.debug.compute_and_print(m.select(a=a.ix(m.left).name, b=b.ix(m.right).who, w=m.weight), include_id=False)
    a   | b   | w
    Ann | bob | 0.5
    Bob | ann | 0.5
    """
    if not left_projection or not right_projection:
        return _match_texts(left_table, right_table, list(left_table.column_names()), list(right_table.column_names()),
                            by_hand_match, normalization, feature_generation)
    groups = list(dict.fromkeys(
        [left_projection[c] for c in left_table.column_names() if c in left_projection]
        + [right_projection[c] for c in right_table.column_names() if c in right_projection]
    ))
    matches = [
        _match_texts(
            left_table, right_table,
            [c for c in left_table.column_names() if left_projection.get(c) == group],
            [c for c in right_table.column_names() if right_projection.get(c) == group],
            by_hand_match, normalization, feature_generation,
        )
        for group in groups
    ]
    every = Table.concat_reindex(*matches)
    return every.groupby(every.left, every.right).reduce(every.left, every.right, weight=reducers.sum(every.weight))


def _match_texts(
    left_table: Table, right_table: Table, left_columns: list[str], right_columns: list[str],
    by_hand_match: Table | None, normalization: FuzzyJoinNormalization,
    feature_generation: FuzzyJoinFeatureGeneration,
) -> Table:
    """``smart_fuzzy_match`` of the texts of some columns of each table."""
    texts = [
        table.select(_pw_text=apply_with_type(_joined_text, str, *(table[c] for c in columns)))
        for table, columns in ((left_table, left_columns), (right_table, right_columns))
    ]
    return smart_fuzzy_match(
        texts[0]._pw_text, texts[1]._pw_text, by_hand_match=by_hand_match, normalization=normalization,
        feature_generation=feature_generation,
    )


def smart_fuzzy_match(
    left_col: ColumnRef,
    right_col: ColumnRef,
    *,
    by_hand_match: Table | None = None,
    normalization: FuzzyJoinNormalization = FuzzyJoinNormalization.LOGWEIGHT,
    feature_generation: FuzzyJoinFeatureGeneration = FuzzyJoinFeatureGeneration.AUTO,
    HEAVY_LIGHT_THRESHOLD: int = 100,  # noqa: N803 - Pathway's name
) -> Table:
    """Matches the rows of two columns' tables by the features of their values (each
    occurrence of a feature is an edge of weight 1; features are weighted 1, normalized
    by ``normalization``). The same column twice matches its table's rows with each
    other (never a row with itself, each pair once). Columns ``right``, ``left``,
    ``weight``.
    """
    self_match = left_col.table is right_col.table and left_col.name == right_col.name
    sides = []
    for side, column in enumerate([left_col] if self_match else [left_col, right_col]):
        split = column.table.select(_pw_f=apply_with_type(feature_generation.generate, list[str], column))
        flat = split.flatten("_pw_f", origin_id="_pw_node")
        sides.append(flat.select(node=flat._pw_node, feature=flat._pw_f, weight=1.0, _pw_side=side))
    return _matched(sides, None, int(normalization), HEAVY_LIGHT_THRESHOLD, by_hand_match)


def fuzzy_self_match(
    edges: Table, features: Table, by_hand_match: Table | None = None, HEAVY_LIGHT_THRESHOLD: int = 100,  # noqa: N803
) -> Table:
    """Matches the nodes of ``edges`` (an ``Edge`` table: node, feature, weight) with each
    other, by their ``features`` (a ``Feature`` table: weight, normalization_type)."""
    return _fuzzy_match(edges, None, features, HEAVY_LIGHT_THRESHOLD, by_hand_match)


def fuzzy_match(
    edges_left: Table, edges_right: Table, features: Table, by_hand_match: Table | None = None,
    HEAVY_LIGHT_THRESHOLD: int = 100,  # noqa: N803
) -> Table:
    """Matches the nodes of ``edges_left`` with those of ``edges_right`` (``Edge`` tables),
    by their ``features`` (a ``Feature`` table). Columns ``right``, ``left``, ``weight``.

    >>> import sparkway as pw
    >>> from sparkway.stdlib.ml.smart_table_ops import FuzzyJoinNormalization, fuzzy_match
    >>> features = pw.debug.table_from_markdown("  | weight\\n1 | 1.0").with_columns(
    ...     normalization_type=int(FuzzyJoinNormalization.WEIGHT))
    >>> edge = lambda node: pw.debug.table_from_markdown(f"node | weight\\n{node} | 1.0").with_columns(
    ...     node=features.pointer_from(pw.this.node), feature=features.pointer_from(1))
    >>> m = fuzzy_match(edge(7), edge(8), features)
    >>> pw.debug.compute_and_print(m.select(pw.this.weight), include_id=False)
    weight
    0.5
    """
    return _fuzzy_match(edges_left, edges_right, features, HEAVY_LIGHT_THRESHOLD, by_hand_match)


def fuzzy_match_with_hint(
    edges_left: Table, edges_right: Table, features: Table, by_hand_match: Table,
    HEAVY_LIGHT_THRESHOLD: int = 100,  # noqa: N803
) -> Table:
    """``fuzzy_match`` where the pairs of ``by_hand_match`` (columns left, right, weight)
    are given: their nodes are matched with nothing else, and the pairs are part of the
    result."""
    return _fuzzy_match(edges_left, edges_right, features, HEAVY_LIGHT_THRESHOLD, by_hand_match)


def _without_nodes(edges: Table, nodes: ColumnRef) -> Table:
    """The edges whose node is not among the values of ``nodes``."""
    taken = nodes.table.groupby(nodes).reduce(_pw_taken=nodes)
    joined = edges.join_left(taken, edges.node == taken._pw_taken, id=edges.id)
    return joined.filter(right._pw_taken.is_none()).select(*left)


def _best_partner(candidates: list[tuple[float, int, int]]) -> tuple[float, int]:
    """Of ``(weight, node, partner)``, the partner of highest weight; ties go to the pair
    of highest ids (compared as ``(smaller id, larger id)``). Its weight and partner."""
    best = max(candidates, key=lambda c: (c[0], min(c[1], c[2]), max(c[1], c[2])))
    return best[0], best[2]


def _pick(pairs: Table, by: str, other: str) -> Table:
    """For each ``by`` node, its best pair (see ``_best_partner``)."""
    grouped = pairs.groupby(pairs[by]).reduce(
        pairs[by], _pw_c=reducers.tuple(make_tuple(pairs.weight, pairs[by], pairs[other]))
    )
    best = grouped.select(grouped[by], _pw_b=apply_with_type(_best_partner, tuple[float, Pointer], grouped._pw_c))
    return best.select(**{by: best[by], other: best._pw_b[1], "weight": best._pw_b[0]})


def _fuzzy_match(
    edges_left: Table, edges_right: Table | None, features: Table, threshold: int, by_hand_match: Table | None,
) -> Table:
    """Matches of ``Edge`` tables, ``edges_right`` None for a self match."""
    sides = [edges_left] if edges_right is None else [edges_left, edges_right]
    tagged = [e.select(e.node, e.feature, e.weight, _pw_side=side) for side, e in enumerate(sides)]
    return _matched(tagged, features, None, threshold, by_hand_match)


def _feature_contributions(symmetric: bool, threshold: int) -> Callable[..., list]:
    """What one feature gives, from all its edges ``(side, node, weight)``: with fewer
    than ``threshold`` edges, a pair ``(True, 0, left, right, weight)`` per two edges of
    two nodes (of the two sides, or of one in a self match); else ("heavy") its edges
    ``(False, side, node, node, weight)``, whose weights include the feature's."""

    def contributions(edges: list[tuple[int, int, float]], weight: float, normalization_type: int) -> list:
        feature_weight = weight * _normalized(len(edges), normalization_type)
        if len(edges) >= threshold:
            return [(False, side, node, node, w * feature_weight) for side, node, w in edges]
        lefts = edges if symmetric else [e for e in edges if e[0] == 0]
        rights = edges if symmetric else [e for e in edges if e[0] == 1]
        return [
            (True, 0, left, right, wl * wr * feature_weight)
            for _, left, wl in lefts for _, right, wr in rights if not (symmetric and left == right)
        ]

    return contributions


_CONTRIBUTION = list[tuple[bool, int, Pointer, Pointer, float]]


def _matched(
    sides: list[Table], features: Table | None, normalization_type: int | None, threshold: int,
    by_hand_match: Table | None,
) -> Table:
    """The one-to-one matching of the nodes of the edge tables ``sides`` (columns node,
    feature, weight, _pw_side; one side for a self match). A feature's weight and
    normalization are ``features``' (rows with the features' ids), or 1 and
    ``normalization_type``."""
    symmetric = len(sides) == 1
    if by_hand_match is not None:
        sides = [_without_nodes(sides[0], by_hand_match.left), *(_without_nodes(s, by_hand_match.right) for s in sides[1:])]
    edges = sides[0] if symmetric else Table.concat_reindex(*sides)
    per_feature = edges.groupby(edges.feature).reduce(
        edges.feature, _pw_e=reducers.tuple(make_tuple(edges._pw_side, edges.node, edges.weight))
    )
    if features is None:
        weight, kind = 1.0, normalization_type
    else:
        described = features.ix(per_feature.feature)
        weight, kind = described.weight, described.normalization_type
    contributions = apply_with_type(_feature_contributions(symmetric, threshold), _CONTRIBUTION, per_feature._pw_e, weight, kind)
    flat = per_feature.select(per_feature.feature, _pw_c=contributions).flatten("_pw_c")
    c = flat._pw_c
    parts = flat.select(flat.feature, _pw_light=c[0], _pw_side=c[1], _pw_a=c[2], _pw_b=c[3], _pw_w=c[4])
    light = parts.filter(parts._pw_light).select(left=parts._pw_a, right=parts._pw_b, weight=parts._pw_w)
    heavy = parts.filter(~parts._pw_light).select(parts.feature, side=parts._pw_side, node=parts._pw_a, weight=parts._pw_w)
    light_pairs = light.groupby(light.left, light.right).reduce(light.left, light.right, weight=reducers.sum(light.weight))
    # heavy features only add to the pairs light features made
    heavy_left = heavy if symmetric else heavy.filter(heavy.side == 0)
    heavy_right = heavy.copy() if symmetric else heavy.filter(heavy.side == 1)
    with_left = light_pairs.join(heavy_left, light_pairs.left == heavy_left.node).select(
        light_pairs.left, light_pairs.right, heavy_left.feature, _pw_lw=heavy_left.weight,
    )
    heavy_pairs = with_left.join(
        heavy_right, with_left.right == heavy_right.node, with_left.feature == heavy_right.feature,
    ).select(with_left.left, with_left.right, weight=with_left._pw_lw * heavy_right.weight)
    pairs = Table.concat_reindex(light_pairs, heavy_pairs)
    weights = pairs.groupby(pairs.left, pairs.right).reduce(pairs.left, pairs.right, weight=reducers.sum(pairs.weight))
    matched = _pick(_pick(weights, "left", "right"), "right", "left")
    if symmetric:
        matched = matched.filter(matched.left < matched.right)
    if by_hand_match is not None:
        matched = matched.update_rows(by_hand_match.select(by_hand_match.right, by_hand_match.left, by_hand_match.weight))
    return matched
