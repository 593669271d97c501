"""Full-text search ranked by BM25 (Pathway's ``TantivyBM25``, with Tantivy's scoring).

Texts are split into tokens as Tantivy's default tokenizer does: runs of letters and
digits, lower-cased, tokens of 40 bytes or more left out. A query's tokens are its
terms (each occurrence counts); a document's score is the sum over the terms of

    idf(t) * (k1 + 1) * tf / (tf + k1 * (1 - b + b * length / average length))

with ``idf(t) = ln(1 + (N - n + 0.5) / (n + 0.5))``, ``k1 = 1.2``, ``b = 0.75``, ``N``
the number of indexed documents, ``n`` those containing ``t``, ``tf`` its count in the
document. Documents without any term of the query are not matches.

>>> from sparkway.stdlib.indexing.bm25 import tokenize
>>> tokenize("Cras ex lorem, luctus-nec DUI!")
['cras', 'ex', 'lorem', 'luctus', 'nec', 'dui']
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from sparkway.api.functions import apply_with_type
from sparkway.api.table import Table
from sparkway.core.expression import ColumnRef, Expr
from sparkway.stdlib.indexing import _replies
from sparkway.stdlib.indexing.data_index import InnerIndex
from sparkway.stdlib.indexing.metadata_filters import passes
from sparkway.stdlib.indexing.retrievers import InnerIndexFactory

K1 = 1.2
B = 0.75
_WORD = re.compile(r"[^\W_]+")
_LONGEST_TOKEN_BYTES = 39


def tokenize(text: str) -> list[str]:
    """The tokens of a text, as Tantivy's default tokenizer makes them."""
    words = (w.lower() for w in _WORD.findall(text))
    return [w for w in words if len(w.encode()) <= _LONGEST_TOKEN_BYTES]


def bm25_scores(terms: list[str], documents: Sequence[Sequence[str]]) -> list[float]:
    """Each document's BM25 score for the query ``terms`` (documents as token lists).

    >>> [round(s, 4) for s in bm25_scores(["a"], [["a", "b"], ["b"]])]  # ln(2) * 2.2 * 1 / (1 + 1.5)
    [0.61, 0.0]
    >>> bm25_scores(["a"], [])
    []
    """
    if not documents:
        return []
    lengths = [len(d) for d in documents]
    average = sum(lengths) / len(documents) or 1.0
    wanted = set(terms)
    counts = [Counter(t for t in d if t in wanted) for d in documents]
    scores = [0.0] * len(documents)
    for term in terms:
        having = sum(1 for c in counts if c[term])
        if having == 0:
            continue
        idf = math.log(1 + (len(documents) - having + 0.5) / (having + 0.5))
        for i, c in enumerate(counts):
            tf = c[term]
            if tf:
                scores[i] += idf * (K1 + 1) * tf / (tf + K1 * (1 - B + B * lengths[i] / average))
    return scores


def bm25_search(query: str, k: int, expression: str | None, entries: Sequence[tuple[int, Any, Any]] | None) -> list:
    """A ``scan_replies`` search: the ``k`` best-scoring documents passing the filter; the
    statistics (N, lengths, document frequencies) are over all indexed documents."""
    if not entries or k <= 0:
        return []
    terms = tokenize(query)
    scores = bm25_scores(terms, [e[1] for e in entries])
    found = [
        (-score, e[0]) for e, score in zip(entries, scores) if score > 0 and passes(expression, e[2])
    ]
    return [(key, -negated) for negated, key in sorted(found)[:k]]


@dataclass(frozen=True, eq=False)
class TantivyBM25(InnerIndex):
    """A full-text index of a string column, answering queries (strings) with the
    documents of highest BM25 score (see the module's docstring); answers as of now only,
    as in Pathway. ``ram_budget`` and ``in_memory_index`` are Tantivy's settings,
    accepted and not needed here.

    >>> import sparkway as pw
    >>> from sparkway.stdlib.indexing import DataIndex, TantivyBM25
    >>> docs = pw.debug.table_from_markdown('''
    ... text
    ... red apples
    ... green apples and pears
    ... plums
    ... ''', split_on_whitespace=False)
    >>> queries = pw.debug.table_from_markdown("q\\napples", split_on_whitespace=False)
    >>> found = DataIndex(docs, TantivyBM25(docs.text, None)).query_as_of_now(queries.q)
    >>> pw.debug.compute_and_print(found.select(pw.right.text), include_id=False)
    text
    ('red apples', 'green apples and pears')
    """

    ram_budget: int = 50 * 1024 * 1024
    in_memory_index: bool = True

    _carries_rows: ClassVar[bool] = True

    def _answer(
        self, query_column: ColumnRef, number_of_matches: Any, metadata_filter: Any, as_of_now: bool,
        rows: _replies.Rows | None,
    ) -> Table:
        if not as_of_now:
            raise NotImplementedError("Currently, tantivy bm25 index is supported only in the as-of-now variant")
        _replies.check_types(_replies.index_checks(
            self.data_column, query_column, number_of_matches, self.metadata_column, metadata_filter,
            "STR", _replies.accepts_str,
        ))
        queries = _replies.query_rows(query_column, number_of_matches, metadata_filter)
        tokens = apply_with_type(tokenize, list[str], self.data_column)
        data = _replies.data_rows(self.data_column, self.metadata_column, rows).with_columns(_pw_d=tokens)
        return _replies.scan_replies(queries, data, bm25_search, rows)

    def query(
        self, query_column: ColumnRef, number_of_matches: Expr | int = 3, metadata_filter: Expr | None = None,
    ) -> Table:
        """Not available: as in Pathway, this index answers as of now only."""
        return self._answer(query_column, number_of_matches, metadata_filter, False, None)

    def query_as_of_now(
        self, query_column: ColumnRef, number_of_matches: Expr | int = 3, metadata_filter: Expr | None = None,
    ) -> Table:
        """The ``number_of_matches`` best documents of each query among those at its time."""
        return self._answer(query_column, number_of_matches, metadata_filter, True, None)


@dataclass
class TantivyBM25Factory(InnerIndexFactory):
    """Builds ``TantivyBM25`` indexes.

    >>> from sparkway.stdlib.indexing import TantivyBM25Factory
    >>> TantivyBM25Factory().in_memory_index
    True
    """

    ram_budget: int = 50 * 1024 * 1024
    in_memory_index: bool = True

    def build_inner_index(self, data_column: ColumnRef, metadata_column: Expr | None = None) -> InnerIndex:
        return TantivyBM25(data_column, metadata_column, ram_budget=self.ram_budget, in_memory_index=self.in_memory_index)
