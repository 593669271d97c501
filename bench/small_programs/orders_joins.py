"""Orders joined with their customers and products; revenue per country."""
import pathway as pw

customers = pw.debug.table_from_markdown("""
cid | name  | country
1   | Ann   | NO
2   | Bob   | IT
3   | Cid   | NO
4   | Dan   | FR
""")
products = pw.debug.table_from_markdown("""
pid | title  | price
10  | pen    | 2.5
11  | book   | 12.0
12  | lamp   | 30.0
""")
orders = pw.debug.table_from_markdown("""
oid | cid | pid | qty
100 | 1   | 10  | 4
101 | 2   | 11  | 1
102 | 1   | 12  | 2
103 | 3   | 10  | 10
104 | 5   | 11  | 3
105 | 4   | 12  | 1
""")
lines = orders.join(products, orders.pid == products.pid).select(
    orders.oid, orders.cid, products.title, amount=orders.qty * products.price
)
known = lines.join_left(customers, lines.cid == customers.cid).select(
    lines.oid, lines.title, lines.amount, country=pw.coalesce(customers.country, "??")
)
per_country = known.groupby(known.country).reduce(
    known.country, revenue=pw.reducers.sum(known.amount), orders=pw.reducers.count()
)
big = known.filter(known.amount > 20)
pw.debug.compute_and_print(per_country, include_id=False)
pw.debug.compute_and_print(big, include_id=False)
