"""``pw.ml.smart_table_ops``: fuzzy matching of rows of tables."""

from sparkway.stdlib.ml.smart_table_ops._fuzzy_join import (
    Edge, Feature, FuzzyJoinFeatureGeneration, FuzzyJoinNormalization, JoinResult, Node, fuzzy_match,
    fuzzy_match_tables, fuzzy_match_with_hint, fuzzy_self_match, smart_fuzzy_match,
)

__all__ = [
    "Edge", "Feature", "FuzzyJoinFeatureGeneration", "FuzzyJoinNormalization", "JoinResult", "Node", "fuzzy_match",
    "fuzzy_match_tables", "fuzzy_match_with_hint", "fuzzy_self_match", "smart_fuzzy_match",
]
