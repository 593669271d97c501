"""CSV and JSON lines output of tuples, lists, optional tuples and Json values."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        k | a | s
        1 | 2 | x
        2 | 5 | y,z
        """
    )
    t = t.select(
        pw.this.k,
        pair=pw.make_tuple(pw.this.a, pw.this.s),
        nested=pw.make_tuple(pw.this.k, pw.make_tuple(pw.this.s, 1.5)),
        maybe=pw.if_else(pw.this.k == 1, pw.make_tuple(pw.this.a), None),
    )
    grouped = t.reduce(ks=pw.reducers.sorted_tuple(pw.this.k), pairs=pw.reducers.tuple(pw.this.k))
    pw.io.csv.write(t, workdir / "out" / "composites.csv")
    pw.io.jsonlines.write(t, workdir / "out" / "composites.jsonl")
    pw.io.csv.write(grouped.select(pw.this.ks), workdir / "out" / "grouped.csv")
    pw.run()
