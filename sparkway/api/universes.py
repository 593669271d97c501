"""``pw.universes``: promises about which row ids tables share.

A promise lets the columns of one table be used in another's operations (read row by
row, by id), as in Pathway; it is not checked, so a broken promise stops the run when a
row is missing.

>>> import sparkway as pw
>>> t1 = pw.debug.table_from_markdown("  | a\\n1 | 8\\n2 | 9")
>>> t2 = pw.debug.table_from_markdown("  | b\\n1 | x\\n2 | y")
>>> pw.universes.promise_are_equal(t1, t2)
>>> t1.select(t1.a, t2.b).column_names()
['a', 'b']
"""

from __future__ import annotations

from sparkway.api.table import Table


def promise_is_subset_of(table: Table, *others: Table) -> None:
    """Every id of ``table`` is an id of each of ``others``."""
    for other in others:
        table.promise_universe_is_subset_of(other)


def promise_are_equal(table: Table, *others: Table) -> None:
    """The tables have exactly the same ids."""
    for other in others:
        table.promise_universe_is_equal_to(other)


def promise_are_pairwise_disjoint(table: Table, *others: Table) -> None:
    """No two of the tables share an id (``Table.concat`` needs this promise)."""
    tables = (table, *others)
    for i, one in enumerate(tables):
        for other in tables[i + 1:]:
            one.promise_universes_are_disjoint(other)
