"""A stream with insertions and deletions over three times; groupby sums and counts as a CSV stream."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        id | k | v  | __time__ | __diff__
        1  | a | 1  | 2        | 1
        2  | a | 2  | 2        | 1
        3  | b | 5  | 2        | 1
        2  | a | 2  | 4        | -1
        4  | b | 1  | 4        | 1
        3  | b | 5  | 6        | -1
        4  | b | 1  | 6        | -1
        """
    )
    totals = t.groupby(pw.this.k).reduce(pw.this.k, n=pw.reducers.count(), total=pw.reducers.sum(pw.this.v))
    pw.io.csv.write(totals, workdir / "out" / "totals.csv")
    pw.io.jsonlines.write(totals, workdir / "out" / "totals.jsonl")
    pw.run()
