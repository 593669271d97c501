"""Sliding windows (hop 2, duration 4) over integer times: sums per window."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        t | v
        1 | 1
        2 | 10
        5 | 100
        6 | 1000
        """
    )
    r = t.windowby(pw.this.t, window=pw.temporal.sliding(hop=2, duration=4)).reduce(
        start=pw.this._pw_window_start, end=pw.this._pw_window_end, total=pw.reducers.sum(pw.this.v)
    )
    pw.io.csv.write(r, workdir / "out" / "sliding.csv")
    pw.run()
