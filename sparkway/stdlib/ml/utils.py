"""Helpers of ``pw.ml``: the accuracy of a classifier."""

from __future__ import annotations

from sparkway.api import reducers
from sparkway.api.table import Table


def classifier_accuracy(predicted_labels: Table, exact_labels: Table) -> Table:
    """How many predictions (column ``predicted_label``) agree with the exact labels
    (column ``label`` of a table with the same ids, or more): one row per outcome,
    ``value`` True or False, with its count ``cnt``.

    >>> import sparkway as pw
    >>> exact = pw.debug.table_from_markdown("  | label\\n1 | 1\\n2 | 0\\n3 | 1")
    >>> predicted = pw.debug.table_from_markdown("  | predicted_label\\n1 | 1\\n2 | 1\\n3 | 1")
    >>> pw.universes.promise_is_subset_of(predicted, exact)
    >>> pw.debug.compute_and_print(classifier_accuracy(predicted, exact), include_id=False)
    cnt | value
    1   | False
    2   | True
    """
    compared = predicted_labels.select(
        match=predicted_labels.predicted_label == exact_labels.restrict(predicted_labels).label
    )
    return compared.groupby(compared.match).reduce(cnt=reducers.count(), value=compared.match)
