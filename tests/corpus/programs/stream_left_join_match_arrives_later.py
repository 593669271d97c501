"""A left join: the unmatched row (None on the right) is retracted when its match arrives, and comes back when the match goes."""
import pathway as pw


def run(workdir, step):
    left = pw.debug.table_from_markdown(
        """
        id | k | a  | __time__ | __diff__
        1  | x | 10 | 2        | 1
        2  | y | 20 | 2        | 1
        """
    )
    right = pw.debug.table_from_markdown(
        """
        id | k | b   | __time__ | __diff__
        7  | x | 100 | 4        | 1
        7  | x | 100 | 6        | -1
        """
    )
    joined = left.join_left(right, pw.left.k == pw.right.k).select(pw.left.k, pw.left.a, b=pw.right.b)
    pw.io.jsonlines.write(joined, workdir / "out" / "joined.jsonl")
    pw.run()
