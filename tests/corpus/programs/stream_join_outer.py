"""An outer join of two streams on a key, both sides changing over time, as a JSON lines stream."""
import pathway as pw


def run(workdir, step):
    left = pw.debug.table_from_markdown(
        """
        id | k | a | __time__ | __diff__
        1  | x | 1 | 2        | 1
        2  | y | 2 | 2        | 1
        2  | y | 2 | 6        | -1
        3  | z | 3 | 6        | 1
        """
    )
    right = pw.debug.table_from_markdown(
        """
        id | k | b  | __time__ | __diff__
        7  | x | 10 | 4        | 1
        8  | y | 20 | 4        | 1
        9  | w | 40 | 4        | 1
        7  | x | 10 | 8        | -1
        """
    )
    joined = left.join_outer(right, pw.left.k == pw.right.k).select(lk=pw.left.k, a=pw.left.a, rk=pw.right.k, b=pw.right.b)
    pw.io.jsonlines.write(joined, workdir / "out" / "joined.jsonl")
    pw.run()
