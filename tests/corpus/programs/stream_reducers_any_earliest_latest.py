"""earliest, latest (by arrival time), count and unique over a stream of appended rows."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        k | v | c | __time__
        a | 5 | x | 2
        a | 3 | x | 4
        b | 1 | y | 4
        a | 8 | x | 6
        """
    )
    r = t.groupby(pw.this.k).reduce(
        pw.this.k,
        first=pw.reducers.earliest(pw.this.v),
        last=pw.reducers.latest(pw.this.v),
        n=pw.reducers.count(),
        c=pw.reducers.unique(pw.this.c),
    )
    pw.io.csv.write(r, workdir / "out" / "arrivals.csv")
    pw.run()
