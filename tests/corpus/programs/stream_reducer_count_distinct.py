"""The count_distinct reducer per group over a stream with insertions and deletions, as a CSV stream."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        id | k | v | __time__ | __diff__
        1  | a | 3 | 2        | 1
        2  | a | 5 | 2        | 1
        3  | b | 2 | 2        | 1
        2  | a | 5 | 4        | -1
        4  | a | 1 | 4        | 1
        5  | b | 2 | 6        | 1
        3  | b | 2 | 8        | -1
        """
    )
    r = t.groupby(pw.this.k).reduce(pw.this.k, r=pw.reducers.count_distinct(pw.this.v))
    pw.io.csv.write(r, workdir / "out" / "reduced.csv")
    pw.run()
