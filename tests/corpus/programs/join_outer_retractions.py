"""An outer join of two streams where rows on both sides come and go; the joined stream as CSV."""
import pathway as pw


def run(workdir, step):
    left = pw.debug.table_from_markdown(
        """
        id | k | a  | __time__ | __diff__
        1  | x | 10 | 2        | 1
        2  | y | 20 | 2        | 1
        1  | x | 10 | 4        | -1
        3  | z | 30 | 6        | 1
        """
    )
    right = pw.debug.table_from_markdown(
        """
        id | k | b   | __time__ | __diff__
        7  | x | 100 | 2        | 1
        8  | z | 300 | 4        | 1
        8  | z | 300 | 6        | -1
        """
    )
    joined = left.join_outer(right, pw.left.k == pw.right.k).select(
        lk=pw.left.k, rk=pw.right.k, a=pw.left.a, b=pw.right.b
    )
    pw.io.csv.write(joined, workdir / "out" / "joined.csv")
    pw.run()
