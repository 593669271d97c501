"""Tumbling windows over integer times: count and sum per window and key, as a CSV stream."""
import pathway as pw


def run(workdir, step):
    events = pw.debug.table_from_markdown(
        """
        k | t  | v | __time__
        a | 1  | 1 | 2
        a | 4  | 2 | 2
        b | 6  | 3 | 4
        a | 12 | 4 | 4
        a | 7  | 5 | 6
        """
    )
    result = events.windowby(pw.this.t, window=pw.temporal.tumbling(duration=5), instance=pw.this.k).reduce(
        k=pw.this._pw_instance,
        start=pw.this._pw_window_start,
        end=pw.this._pw_window_end,
        n=pw.reducers.count(),
        total=pw.reducers.sum(pw.this.v),
    )
    pw.io.csv.write(result, workdir / "out" / "windows.csv")
    pw.run()
