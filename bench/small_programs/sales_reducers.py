"""Sales per shop with the usual reducers."""
import pathway as pw

sales = pw.debug.table_from_rows(
    pw.schema_from_types(shop=str, item=str, amount=float, day=int),
    [(f"shop{i % 5}", f"item{i % 7}", float((i * 37) % 100) / 4, i % 30) for i in range(300)],
)
stats = sales.groupby(sales.shop).reduce(
    sales.shop,
    total=pw.reducers.sum(sales.amount),
    n=pw.reducers.count(),
    mean=pw.reducers.avg(sales.amount),
    low=pw.reducers.min(sales.amount),
    high=pw.reducers.max(sales.amount),
    items=pw.reducers.count_distinct(sales.item),
    first_day=pw.reducers.min(sales.day),
    best=pw.reducers.argmax(sales.amount),
)
per_item = sales.groupby(sales.item).reduce(sales.item, days=pw.reducers.sorted_tuple(sales.day))
pw.debug.compute_and_print(stats.without(stats.best), include_id=False)
pw.debug.compute_and_print(per_item.select(per_item.item, n=pw.apply(len, per_item.days)), include_id=False)
