"""An interval join of two streams: pairs whose times are within [-1, 2] of each other, per key."""
import pathway as pw


def run(workdir, step):
    clicks = pw.debug.table_from_markdown(
        """
        user | t | __time__
        u    | 1 | 2
        u    | 5 | 4
        v    | 3 | 4
        """
    )
    buys = pw.debug.table_from_markdown(
        """
        user | t | item | __time__
        u    | 2 | pen  | 2
        u    | 9 | ink  | 6
        v    | 2 | cup  | 6
        """
    )
    pairs = clicks.interval_join(buys, clicks.t, buys.t, pw.temporal.interval(-1, 2), clicks.user == buys.user).select(
        clicks.user, click=clicks.t, buy=buys.t, item=buys.item
    )
    pw.io.csv.write(pairs, workdir / "out" / "pairs.csv")
    pw.run()
