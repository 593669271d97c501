"""Trades joined with the quotes around them (interval join) and the last quote (asof join)."""
import pathway as pw

quotes = pw.debug.table_from_rows(
    pw.schema_from_types(symbol=str, t=int, price=float),
    [(["AB", "CD"][i % 2], i * 5, 100 + (i * 7) % 13) for i in range(120)],
)
trades = pw.debug.table_from_rows(
    pw.schema_from_types(symbol=str, t=int, qty=int),
    [(["AB", "CD"][i % 2], i * 11 + 3, 1 + i % 9) for i in range(50)],
)
near = trades.interval_join(quotes, trades.t, quotes.t, pw.temporal.interval(-5, 5), trades.symbol == quotes.symbol)
near = near.select(trades.symbol, quotes.price, trade_t=trades.t, quote_t=quotes.t)
per_trade = near.groupby(near.symbol, near.trade_t).reduce(near.symbol, near.trade_t, quotes=pw.reducers.count())
last = trades.asof_join(quotes, trades.t, quotes.t, trades.symbol == quotes.symbol, how=pw.JoinMode.LEFT).select(
    trades.symbol, trades.t, trades.qty, price=quotes.price
)
pw.debug.compute_and_print(per_trade, include_id=False)
pw.debug.compute_and_print(last, include_id=False)
