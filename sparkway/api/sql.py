"""``pw.sql``: a SQL query over tables, run as ordinary table operations.

The query is parsed with the optional sqlglot package, imported only when ``pw.sql`` is
called (``sparkway/api/sql_translation.py`` holds the translation).
"""

from __future__ import annotations

from sparkway.api.table import Table


def sql(query: str, **tables: Table) -> Table:
    '''The result of a SQL ``query`` over the given tables, named by the keyword arguments.

    The query becomes ordinary table operations (``select``, ``filter``, ``join``,
    ``groupby``/``reduce``, ``concat_reindex``), so its result updates with its inputs.
    Needs the sqlglot package (``pip install 'sparkway[sql]'``).

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("""
    ...   A  | B
    ...   1  | 2
    ...   4  | 3
    ...   4  | 7
    ... """)
    >>> ret = pw.sql("SELECT * FROM tab WHERE A<B", tab=t)
    >>> pw.debug.compute_and_print(ret, include_id=False)
    A | B
    1 | 2
    4 | 7
    >>> totals = pw.sql("SELECT A, SUM(B) AS total FROM tab GROUP BY A", tab=t)
    >>> pw.debug.compute_and_print(totals, include_id=False)
    A | total
    1 | 2
    4 | 10

    Supported: SELECT with expressions (arithmetic, ``DIV``, comparisons, ``AND``/``OR``/``NOT``,
    ``BETWEEN``, ``IS [NOT] NULL``, ``CASE``, ``COALESCE``), ``*`` and ``t.*``, ``AS`` aliases of
    columns and tables, WHERE, GROUP BY and HAVING with ``COUNT``, ``SUM``, ``AVG``, ``MIN``,
    ``MAX``, ``SELECT DISTINCT``, joins (``JOIN ... ON``/``USING``, ``LEFT``/``RIGHT``/``FULL``
    joins on equalities, and ``FROM a, b``), subqueries in FROM, scalar subqueries
    (``WHERE x > (SELECT AVG(x) FROM t)``), ``WITH``, ``UNION [ALL]`` and ``INTERSECT``.

    As in Pathway: column and table names are case-sensitive; an unnamed output column is
    named ``_col_<position>``; the rows keep their ids through SELECT and WHERE, a grouped
    query's rows have the ids of ``groupby(...).reduce(...)``; reducers count and sum None
    values too; UNION and INTERSECT match columns by name. Not supported (NotImplementedError):
    ORDER BY, LIMIT and other ordering, statements other than queries, ``IN``, ``LIKE``,
    ``EXISTS``, ``ANY``/``ALL``, correlated subqueries, ``EXCEPT``, ``INTERSECT ALL``, natural
    joins, window functions, CAST and other functions.
    '''
    for name, table in tables.items():
        if not isinstance(table, Table):
            raise TypeError(f"pw.sql: {name}= must be a table, got {type(table).__name__}")
    try:
        import sqlglot
    except ImportError:
        raise ImportError(
            "pw.sql parses queries with the sqlglot package: install it with pip install 'sparkway[sql]'"
        ) from None
    from sparkway.api.sql_translation import translate

    return translate(sqlglot.parse_one(query), tables)
