"""``pw.utils.filtering``: the rows holding a group's extreme value."""

from __future__ import annotations

from typing import Any

from sparkway.api import reducers
from sparkway.api.table import Table
from sparkway.api.thisclass import this


def _rows_picked_by(table: Table, on: tuple[Any, ...], reducer: Any) -> Table:
    """The rows of ``table`` whose ids a reducer (argmin or argmax) picks per group of ``on``."""
    picked = table.groupby(*on).reduce(_pw_picked=reducer).with_id(this._pw_picked)
    return table.restrict(picked.promise_universe_is_subset_of(table))


def argmax_rows(table: Table, *on: Any, what: Any) -> Table:
    """For each group of rows with equal ``on`` values, its row with the largest ``what``
    (the rows keep their ids and columns).

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown('''
    ... team | score
    ... a    | 3
    ... a    | 5
    ... b    | 4
    ... ''')
    >>> pw.debug.compute_and_print(pw.utils.filtering.argmax_rows(t, t.team, what=t.score), include_id=False)
    team | score
    a    | 5
    b    | 4
    """
    return _rows_picked_by(table, on, reducers.argmax(what))


def argmin_rows(table: Table, *on: Any, what: Any) -> Table:
    """For each group of rows with equal ``on`` values, its row with the smallest ``what``.

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown('''
    ... team | score
    ... a    | 3
    ... a    | 5
    ... b    | 4
    ... ''')
    >>> pw.debug.compute_and_print(pw.utils.filtering.argmin_rows(t, t.team, what=t.score), include_id=False)
    team | score
    a    | 3
    b    | 4
    """
    return _rows_picked_by(table, on, reducers.argmin(what))
