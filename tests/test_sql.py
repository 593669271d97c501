"""``pw.sql``: SQL queries translated into table operations.

Expected rows are worked out by hand from the input tables. The names of unnamed output
columns (``_col_<position>``) were recorded from the Pathway 0.33 oracle; the rows' ids are
checked, as Pathway's own tests do, against the table operations a program would write by
hand (SELECT/WHERE keep the input's ids, GROUP BY gives ``groupby().reduce()``'s).
"""

from __future__ import annotations

import pytest
from tables import assert_changes, assert_rows, ids_of

import sparkway as pw

pytestmark = pytest.mark.usefixtures("spark")

SALES = """
      | shop | item  | qty | price
    1 | A    | apple | 3   | 2
    2 | A    | pear  | 1   | 5
    3 | B    | apple | 4   | 2
    4 | B    | plum  | 2   | 7
    5 | C    | pear  | 6   | 5
    """

SHOPS = """
      | shop | city
    1 | A    | Oslo
    2 | B    | Rome
    3 | D    | Lima
    """


def sales() -> pw.Table:
    return pw.debug.table_from_markdown(SALES)


def shops() -> pw.Table:
    return pw.debug.table_from_markdown(SHOPS)


def test_select_computes_named_columns_and_keeps_ids():
    t = sales()
    result = pw.sql("SELECT item, qty * price AS total, qty + 1, qty DIV 4, price / 2 FROM t WHERE shop = 'A'", t=t)
    assert result.column_names() == ["item", "total", "_col_2", "_col_3", "_col_4"]
    assert_rows(result, [("apple", 6, 4, 0, 1.0), ("pear", 5, 2, 0, 2.5)])
    # the rows are t's rows: same ids
    assert ids_of(result) == ids_of(t.filter(t.shop == "A").select(t.item))


def test_where_conditions():
    t = sales()
    result = pw.sql(
        "SELECT item, qty FROM t WHERE (qty BETWEEN 2 AND 4 OR item = 'pear') AND NOT shop = 'C' AND price IS NOT NULL",
        t=t,
    )
    assert_rows(result, [("apple", 3), ("pear", 1), ("apple", 4), ("plum", 2)])


def test_star_case_and_coalesce():
    t = sales()
    result = pw.sql(
        "SELECT *, CASE WHEN qty > 3 THEN 'many' WHEN qty > 1 THEN 'some' ELSE 'one' END AS n, "
        "CASE shop WHEN 'A' THEN 1 END AS is_a FROM t WHERE item = 'apple'",
        t=t,
    )
    assert result.column_names() == ["shop", "item", "qty", "price", "n", "is_a"]
    assert_rows(result, [("A", "apple", 3, 2, "some", 1), ("B", "apple", 4, 2, "many", None)])


def test_group_by_having_keeps_groupby_ids():
    t = sales()
    result = pw.sql(
        "SELECT shop, SUM(qty * price) AS revenue, COUNT(*) AS n FROM t GROUP BY shop HAVING MAX(qty) >= 3",
        t=t,
    )
    assert result.column_names() == ["shop", "revenue", "n"]
    # A: 3*2 + 1*5 = 11, B: 4*2 + 2*7 = 22, C: 6*5 = 30; all have a qty >= 3
    assert_rows(result, [("A", 11, 2), ("B", 22, 2), ("C", 30, 1)])
    by_shop = t.groupby(t.shop).reduce(t.shop)
    assert ids_of(result) == ids_of(by_shop)


def test_having_reads_output_aliases_and_aggregates_without_group_by():
    t = sales()
    busy = pw.sql("SELECT shop, COUNT(*) AS n FROM t GROUP BY shop HAVING n > 1", t=t)
    assert_rows(busy, [("A", 2), ("B", 2)])
    totals = pw.sql("SELECT COUNT(*), SUM(qty) AS q, MIN(price) AS lo, MAX(price) AS hi, AVG(qty) AS m, "
                    "COUNT(DISTINCT shop) AS shops FROM t", t=t)
    assert totals.column_names() == ["_col_0", "q", "lo", "hi", "m", "shops"]
    assert_rows(totals, [(5, 16, 2, 7, 3.2, 3)])


def test_joins():
    s, sh = sales(), shops()
    on = pw.sql("SELECT item, city FROM s JOIN sh ON s.shop = sh.shop AND qty > 2", s=s, sh=sh)
    assert_rows(on, [("apple", "Oslo"), ("apple", "Rome")])
    using = pw.sql("SELECT * FROM s JOIN sh USING (shop) WHERE item = 'pear'", s=s, sh=sh)
    assert using.column_names() == ["shop", "item", "qty", "price", "city"]
    assert_rows(using, [("A", "pear", 1, 5, "Oslo")])
    comma = pw.sql("SELECT x.item, y.city FROM s x, sh y WHERE x.shop = y.shop AND y.city <> 'Oslo'", s=s, sh=sh)
    assert_rows(comma, [("apple", "Rome"), ("plum", "Rome")])


def test_outer_joins_fill_none():
    s, sh = sales(), shops()
    result = pw.sql("SELECT sh.shop, item FROM sh LEFT JOIN s ON sh.shop = s.shop WHERE sh.shop <> 'A'", s=s, sh=sh)
    assert_rows(result, [("B", "apple"), ("B", "plum"), ("D", None)])
    # USING: the shared name reads the left table's column, never None in a left join
    using = pw.sql("SELECT shop, city, item FROM sh LEFT JOIN s USING (shop)", s=s, sh=sh)
    assert_rows(using, [("A", "Oslo", "apple"), ("A", "Oslo", "pear"), ("B", "Rome", "apple"),
                        ("B", "Rome", "plum"), ("D", "Lima", None)])


def test_self_join_with_aliases_and_join_ids():
    t = pw.debug.table_from_markdown("  | k | v\n1 | 1 | a\n2 | 1 | b\n3 | 2 | c")
    result = pw.sql("SELECT t1.v AS l, t2.v AS r FROM t t1 JOIN t t2 ON t1.k = t2.k WHERE t1.v < t2.v", t=t)
    assert_rows(result, [("a", "b")])
    expected = t.join(t.copy(), pw.left.k == pw.right.k).filter(pw.left.v < pw.right.v).select(l=pw.left.v)
    assert ids_of(result) == ids_of(expected)


def test_subqueries_with_and_scalar_subqueries():
    t = sales()
    nested = pw.sql("SELECT s.item FROM (SELECT item, qty FROM t WHERE qty > 2) AS s WHERE s.qty < 6", t=t)
    assert_rows(nested, [("apple",), ("apple",)])
    with_ = pw.sql(
        "WITH big AS (SELECT shop, qty FROM t WHERE qty >= 3) SELECT shop, SUM(qty) AS q FROM big GROUP BY shop", t=t
    )
    assert_rows(with_, [("A", 3), ("B", 4), ("C", 6)])
    # the average qty is 16 / 5 = 3.2; the rows keep their ids
    above = pw.sql("SELECT item, qty FROM t WHERE qty > (SELECT AVG(qty) FROM t)", t=t)
    assert_rows(above, [("apple", 4), ("pear", 6)])
    assert ids_of(above) == ids_of(t.filter(t.qty > 3.2).select(t.item))
    in_select = pw.sql("SELECT item, (SELECT MAX(price) FROM t) AS top FROM t WHERE shop = 'C'", t=t)
    assert_rows(in_select, [("pear", 7)])
    top = pw.sql("SELECT shop FROM t GROUP BY shop HAVING SUM(qty) = (SELECT MAX(qty) FROM t)", t=t)
    assert_rows(top, [("B",), ("C",)])  # sums: A 4, B 6, C 6; the largest qty is 6


def test_set_operations_and_distinct():
    s, sh = sales(), shops()
    union = pw.sql("SELECT shop FROM s UNION SELECT shop FROM sh", s=s, sh=sh)
    assert_rows(union, [("A",), ("B",), ("C",), ("D",)])
    union_all = pw.sql("SELECT shop FROM s WHERE qty > 3 UNION ALL SELECT shop FROM sh", s=s, sh=sh)
    assert_rows(union_all, [("B",), ("C",), ("A",), ("B",), ("D",)])
    both = pw.sql("SELECT shop FROM s INTERSECT SELECT shop FROM sh", s=s, sh=sh)
    assert_rows(both, [("A",), ("B",)])
    distinct = pw.sql("SELECT DISTINCT item FROM s", s=s)
    assert_rows(distinct, [("apple",), ("pear",), ("plum",)])


def test_result_follows_updates_of_the_input():
    t = pw.debug.table_from_markdown(
        """
          | k | v | __time__ | __diff__
        1 | a | 1 |     2    |     1
        2 | b | 5 |     2    |     1
        3 | a | 2 |     4    |     1
        2 | b | 5 |     6    |    -1
        """
    )
    result = pw.sql("SELECT k, SUM(v) AS total FROM t GROUP BY k", t=t)
    assert_changes(result, [[("a", 1, 1), ("b", 5, 1)], [("a", 1, -1), ("a", 3, 1)], [("b", 5, -1)]])


def test_unsupported_sql_raises_not_implemented():
    t = sales()
    for query in (
        "SELECT item FROM t ORDER BY qty",
        "SELECT item FROM t LIMIT 2",
        "SELECT item FROM t WHERE item LIKE 'p%'",
        "SELECT item FROM t WHERE qty IN (1, 2)",
        "SELECT UPPER(item) FROM t",
        "SELECT item FROM t EXCEPT SELECT item FROM t",
        "SELECT item FROM t WHERE EXISTS (SELECT 1 FROM t)",
        "CREATE TABLE x (a int)",
        "INSERT INTO t VALUES (1)",
    ):
        with pytest.raises(NotImplementedError):
            pw.sql(query, t=t)
    with pytest.raises(NotImplementedError, match="equality"):
        pw.sql("SELECT * FROM t LEFT JOIN u ON t.shop = u.shop AND t.qty > 1", t=t, u=shops())


def test_name_errors_say_what_is_missing():
    t = sales()
    with pytest.raises(KeyError, match="table 'u' is not given"):
        pw.sql("SELECT * FROM u", t=t)
    with pytest.raises(KeyError, match="no column 'colour'"):
        pw.sql("SELECT colour FROM t", t=t)
    with pytest.raises(KeyError, match="qualify it"):
        pw.sql("SELECT shop FROM t, u", t=t, u=shops())
    with pytest.raises(KeyError, match="cannot read the outer query's tables"):  # a correlated subquery
        pw.sql("SELECT item FROM t WHERE qty < (SELECT MAX(qty) FROM u WHERE u.item = t.item)", t=t, u=sales())
    with pytest.raises(ValueError, match="neither in GROUP BY nor inside an aggregate"):
        pw.sql("SELECT item, COUNT(*) FROM t GROUP BY shop", t=t)
    with pytest.raises(ValueError, match="aggregate is not allowed in WHERE"):
        pw.sql("SELECT item FROM t WHERE SUM(qty) > 1", t=t)
