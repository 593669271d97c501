"""Locality-sensitive hashing (LSH) of vectors into buckets, for approximate nearest
neighbours: vectors that are near each other likely share a bucket.

A bucketer maps a vector to ``L`` bucket keys (the "ORs"), one per band; a band is ``M``
random projections (the "ANDs"), and two vectors share the band's key only when all ``M``
agree. The projections come from numpy's generator seeded with ``seed``, drawn in the
order Pathway draws them, so that the same vectors share buckets as in Pathway.

>>> from sparkway.stdlib.indexing.lsh import euclidean_bucketer
>>> buckets = euclidean_bucketer(d=2, M=3, L=4, A=10.0)
>>> near, far = buckets([0.0, 0.0]), buckets([100.0, 100.0])
>>> len(near), bool(set(near) & set(buckets([0.1, 0.1]))), bool(set(near) & set(far))
(4, True, False)
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np

Bucketer = Callable[[Any], list[int]]


def _band_keys(cells: np.ndarray, bands: int) -> list[int]:
    """One 64-bit key per band of the cells (the band's number is part of the key, so
    that different bands never share one)."""
    keys = []
    for band, part in enumerate(np.split(np.asarray(cells, dtype=np.int64), bands)):
        digest = hashlib.blake2b(band.to_bytes(4, "little") + part.tobytes(), digest_size=8).digest()
        keys.append(int.from_bytes(digest, "little", signed=True))
    return keys


def euclidean_bucketer(d: int, M: int, L: int, A: float = 1.0, seed: int = 0) -> Bucketer:
    """Buckets for the Euclidean distance: each of the ``M * L`` projections is onto a
    random unit line, shifted at random and cut into cells of length ``A``.

    >>> buckets = euclidean_bucketer(d=3, M=2, L=5, A=1.0)
    >>> buckets([1.0, 2.0, 3.0]) == buckets((1.0, 2.0, 3.0))
    True
    """
    generator = np.random.default_rng(seed=seed)
    lines = generator.standard_normal((d, M * L))
    lines = lines / np.linalg.norm(lines, axis=0)
    shift = generator.random(size=M * L) * A

    def buckets(vector: Any) -> list[int]:
        cells = np.floor_divide(np.asarray(vector, dtype=float) @ lines + shift, A)
        return _band_keys(cells, L)

    return buckets


def cosine_bucketer(d: int, M: int, L: int, seed: int = 0) -> Bucketer:
    """Buckets for the cosine distance: each projection is the side of a random
    hyperplane through the origin the vector lies on.

    >>> buckets = cosine_bucketer(d=2, M=4, L=3)
    >>> buckets([1.0, 1.0]) == buckets([5.0, 5.0])  # one direction: the same buckets
    True
    """
    generator = np.random.default_rng(seed=seed)
    hyperplanes = generator.standard_normal((d, M * L))

    def buckets(vector: Any) -> list[int]:
        sides = (np.asarray(vector, dtype=float) @ hyperplanes >= 0).astype(np.int64)
        return _band_keys(sides, L)

    return buckets
