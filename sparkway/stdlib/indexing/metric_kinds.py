"""The metrics of the nearest-neighbour indexes (Pathway has them in ``pathway.engine``).

Each metric is a distance: smaller is nearer, and an index's score of a match is minus
its distance.

>>> import numpy as np
>>> from sparkway.stdlib.indexing.metric_kinds import USearchMetricKind, distances
>>> distances(USearchMetricKind.L2SQ, np.array([0.0, 0.0]), np.array([[3.0, 4.0], [1.0, 0.0]])).tolist()
[25.0, 1.0]
"""

from __future__ import annotations

import enum

import numpy as np


class BruteForceKnnMetricKind(enum.Enum):
    """The metrics of ``BruteForceKnn``: ``L2SQ`` (squared Euclidean distance) and
    ``COS`` (cosine distance, one minus the cosine similarity)."""

    L2SQ = "l2sq"
    COS = "cos"


class USearchMetricKind(enum.Enum):
    """The metrics of ``USearchKnn`` (USearch's names). sparkway computes ``IP`` (one minus
    the inner product), ``L2SQ`` and ``COS``; an index with another one is refused when it
    is built."""

    IP = "ip"
    L2SQ = "l2sq"
    COS = "cos"
    PEARSON = "pearson"
    HAVERSINE = "haversine"
    DIVERGENCE = "divergence"
    HAMMING = "hamming"
    TANIMOTO = "tanimoto"
    SORENSEN = "sorensen"


#: the metrics sparkway computes, by name (``distances``)
SUPPORTED = ("ip", "l2sq", "cos")


def check_supported(metric: BruteForceKnnMetricKind | USearchMetricKind) -> str:
    """The metric's name, or a ValueError naming the metrics sparkway computes."""
    if metric.value not in SUPPORTED:
        raise ValueError(
            f"the {metric.name} metric is not available in sparkway's nearest-neighbour indexes: "
            f"use {', '.join(m.upper() for m in SUPPORTED)}"
        )
    return metric.value


def distances(
    metric: BruteForceKnnMetricKind | USearchMetricKind | str, query: np.ndarray, data: np.ndarray
) -> np.ndarray:
    """The distance of ``query`` (a vector) to each row of ``data`` (a matrix); a cosine
    distance to or from a zero vector is 1 (no similarity)."""
    name = metric if isinstance(metric, str) else metric.value
    if name == "l2sq":
        return np.sum((data - query) ** 2, axis=1)
    dots = data @ query
    if name == "ip":
        return 1.0 - dots
    if name == "cos":
        norms = np.linalg.norm(data, axis=1) * np.linalg.norm(query)
        with np.errstate(divide="ignore", invalid="ignore"):
            similarity = np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), 0.0)
        return 1.0 - similarity
    raise ValueError(f"unknown metric {name!r}: use one of {', '.join(SUPPORTED)}")
