"""min, max, avg, sum and count_distinct per group over a stream with deletions.

Integer values: Pathway 0.33's sum of floats ignores a step that removes one value and adds
another (its result stays 5.5 where 3.0 is right); sparkway does not copy that bug
(docs/compatibility.md)."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        id | k | v   | __time__ | __diff__
        1  | a | 1   | 2        | 1
        2  | a | 4   | 2        | 1
        3  | b | 2   | 2        | 1
        2  | a | 4   | 4        | -1
        4  | a | 1   | 4        | 1
        5  | b | 7   | 6        | 1
        """
    )
    r = t.groupby(pw.this.k).reduce(
        pw.this.k,
        lo=pw.reducers.min(pw.this.v),
        hi=pw.reducers.max(pw.this.v),
        mean=pw.reducers.avg(pw.this.v),
        total=pw.reducers.sum(pw.this.v),
        distinct=pw.reducers.count_distinct(pw.this.v),
    )
    pw.io.csv.write(r, workdir / "out" / "stats.csv")
    pw.run()
