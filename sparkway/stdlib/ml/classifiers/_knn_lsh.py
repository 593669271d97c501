"""k nearest neighbours by locality-sensitive hashing, and classification by them.

``knn_lsh_classifier_train(data, L, type, d=..., M=..., A=...)`` indexes the vectors of
``data.data`` (with optional JSON ``data.metadata``) and returns a query function: given
a table of queries (column ``data``, and ``k`` and ``metadata_filter`` when they vary by
query), a table with the queries' ids of their neighbours' ids (``knns_ids``), nearest
first, or with ``with_distances=True`` of ``(id, distance)`` pairs
(``knns_ids_with_dists``). The neighbours are the nearest rows among those sharing an LSH
bucket with the query (``sparkway.stdlib.indexing.lsh``), so a query far from every row
may have none. The answers follow the data as it changes.
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from sparkway.api import reducers
from sparkway.api.functions import apply_with_type
from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.core.dtypes import Pointer
from sparkway.stdlib.indexing import _replies
from sparkway.stdlib.indexing.lsh import cosine_bucketer, euclidean_bucketer
from sparkway.stdlib.indexing.metadata_filters import is_filter_error, passes

DistanceTypes = Literal["euclidean", "cosine"]


class DataPoint(Schema):
    data: np.ndarray


def _euclidean_distance(data: np.ndarray, query: np.ndarray) -> np.ndarray:
    return np.sum((data - query) ** 2, axis=1).astype(float)


def _cosine_distance(data: np.ndarray, query: np.ndarray) -> np.ndarray:
    return 1 - (data @ query) / (np.linalg.norm(data, axis=1) * np.linalg.norm(query))


def _keys_of(projection: Callable[[Any], Any]) -> Callable[[Any], list[int]]:
    """A projection's band values (one per band) as bucket keys that tell bands apart."""

    def keys(vector: Any) -> list[int]:
        return [
            int.from_bytes(
                hashlib.blake2b(f"{band}:{value}".encode(), digest_size=8).digest(), "little", signed=True
            )
            for band, value in enumerate(np.asarray(projection(vector)).ravel().tolist())
        ]

    return keys


def _candidate(distance: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., Any]:
    """A ``pairwise_replies`` candidate measured by ``distance``; an invalid metadata
    filter matches no row."""

    def candidate(query: Any, value: Any, metadata: Any, expression: str | None, key: int, k: int) -> Any:
        if k <= 0:
            return None
        try:
            if not passes(expression, metadata):
                return None
        except Exception as error:
            if is_filter_error(error):
                return None
            raise
        vector = np.asarray(value, dtype=float).ravel()
        return float(distance(vector[None, :], np.asarray(query, dtype=float).ravel())[0]), key

    return candidate


def _distances_of(reply: list[tuple[int, float]]) -> list[tuple[int, float]]:
    return [(key, -score) for key, score in reply]


def _ids_of(reply: list[tuple[int, float]]) -> list[int]:
    return [key for key, _ in reply]


def _query_function(data: Table, buckets: Callable[[Any], list[int]], candidate: Callable[..., Any]) -> Callable[..., Table]:
    metadata = data.metadata if "metadata" in data.column_names() else None
    rows = _replies.data_rows(data.data, metadata)

    def lsh_perform_query(queries: Table, k: Any = None, with_distances: bool = False) -> Table:
        """The neighbours of each query (see the module's docstring)."""
        count = queries.k if k is None else k
        metadata_filter = queries.metadata_filter if "metadata_filter" in queries.column_names() else None
        asked = _replies.query_rows(queries.data, count, metadata_filter)
        replies = _replies.pairwise_replies(asked, rows, candidate, buckets=buckets, as_of_now=False)
        if with_distances:
            found = apply_with_type(_distances_of, list[tuple[Pointer, float]], replies._pw_index_reply)
            return replies.select(query_id=replies.id, knns_ids_with_dists=found).with_universe_of(queries)
        found = apply_with_type(_ids_of, list[Pointer], replies._pw_index_reply)
        return replies.select(query_id=replies.id, knns_ids=found).with_universe_of(queries)

    return lsh_perform_query


def knn_lsh_generic_classifier_train(
    data: Table, lsh_projection: Callable[[Any], Any], distance_function: Callable[[np.ndarray, np.ndarray], np.ndarray],
    L: int,
) -> Callable[..., Table]:
    """The query function (see the module's docstring) of an index whose buckets are the
    ``L`` values ``lsh_projection`` gives a vector, and whose distance is
    ``distance_function(matrix of rows, query)``."""
    return _query_function(data, _keys_of(lsh_projection), _candidate(distance_function))


def knn_lsh_euclidean_classifier_train(data: Table, d: int, M: int, L: int, A: float) -> Callable[..., Table]:
    """The query function of an index of ``d``-dimensional vectors by Euclidean distance
    (squared), with ``L`` bands of ``M`` projections cut into cells of length ``A``."""
    return _query_function(data, euclidean_bucketer(d, M, L, A), _candidate(_euclidean_distance))


def knn_lsh_classifier_train(data: Table, L: int, type: DistanceTypes = "euclidean", **kwargs: Any) -> Callable[..., Table]:  # noqa: A002
    """The query function of an LSH index of ``data.data`` (see the module's docstring):
    ``type="euclidean"`` takes ``d`` (dimensions), ``M`` (projections per band) and ``A``
    (cell length); ``"cosine"`` takes ``d`` and ``M``.

    >>> import sparkway as pw
    >>> from sparkway.stdlib.ml.classifiers import knn_lsh_classifier_train
    >>> data = pw.debug.table_from_markdown("x | y\\n0 | 0\\n1 | 1\\n9 | 9").select(
    ...     data=pw.make_tuple(pw.this.x, pw.this.y))
    >>> queries = pw.debug.table_from_markdown("x | y\\n2 | 2").select(data=pw.make_tuple(pw.this.x, pw.this.y))
    >>> nearest = knn_lsh_classifier_train(data, L=10, d=2, M=3, A=10)(queries, k=1, with_distances=True)
    >>> pw.debug.compute_and_print(nearest.select(d=pw.apply(lambda x: x[0][1], pw.this.knns_ids_with_dists)),
    ...     include_id=False)
    d
    2.0
    """
    if type == "euclidean":
        return _query_function(data, euclidean_bucketer(kwargs["d"], kwargs["M"], L, kwargs["A"]),
                               _candidate(_euclidean_distance))
    if type == "cosine":
        return _query_function(data, cosine_bucketer(kwargs["d"], kwargs["M"], L), _candidate(_cosine_distance))
    raise ValueError(
        f"Not supported `type` {type} in knn_lsh_classifier_train. The allowed values are 'euclidean' and 'cosine'."
    )


def _majority(labels: list[Any] | None) -> Any:
    """The most frequent label; among equally frequent ones, the nearest neighbour's."""
    if not labels:
        return None
    return collections.Counter(labels).most_common(1)[0][0]


def _unlabelled(_: Any) -> None:
    return None


def _ranked_ids(ids: list[int] | None) -> list[tuple[int, int]]:
    return list(enumerate(ids or ()))


def knn_lsh_classify(knn_model: Callable[..., Table], data_labels: Table, queries: Table, k: Any) -> Table:
    """The label of each query: the most frequent ``label`` (a column of ``data_labels``,
    whose ids are the indexed rows') among its ``k`` nearest neighbours, or None without
    neighbours; ties go to the nearest neighbour's label."""
    knns = knn_model(queries, k)
    ranked = knns.select(_pw_qid=knns.id, _pw_r=apply_with_type(_ranked_ids, list[tuple[int, Pointer]], knns.knns_ids))
    flat = ranked.flatten("_pw_r")
    neighbours = flat.select(flat._pw_qid, _pw_rank=flat._pw_r[0], _pw_id=flat._pw_r[1])
    labelled = neighbours.with_columns(label=data_labels.ix(neighbours._pw_id).label)
    label_type = data_labels.schema._dtypes()["label"]
    voted = labelled.groupby(id=labelled._pw_qid, sort_by=labelled._pw_rank).reduce(
        predicted_label=apply_with_type(_majority, label_type.with_optional(), reducers.tuple(labelled.label))
    )
    none = knns.select(predicted_label=apply_with_type(_unlabelled, label_type.with_optional(), knns.knns_ids))
    return none.update_cells(voted.promise_universe_is_subset_of(none))
