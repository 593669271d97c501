"""A row updated across times moves into and out of a filter's result."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        id | name | score | __time__ | __diff__
        1  | ann  | 3     | 2        | 1
        2  | bob  | 8     | 2        | 1
        1  | ann  | 3     | 4        | -1
        1  | ann  | 9     | 4        | 1
        2  | bob  | 8     | 6        | -1
        2  | bob  | 1     | 6        | 1
        """
    )
    high = t.filter(pw.this.score > 5).select(pw.this.name, pw.this.score)
    pw.io.csv.write(high, workdir / "out" / "high.csv")
    pw.run()
