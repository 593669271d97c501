"""tuple (ordered by groupby's sort_by) and sorted_tuple reducers, with None left out or kept."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        k | v | o
        a | 3 | 2
        a | 1 | 1
        a |   | 3
        b | 5 | 1
        """
    )
    r = t.groupby(pw.this.k, sort_by=pw.this.o).reduce(
        pw.this.k,
        in_order=pw.reducers.tuple(pw.this.v),
        no_none=pw.reducers.tuple(pw.this.v, skip_nones=True),
        sorted=pw.reducers.sorted_tuple(pw.this.v, skip_nones=True),
    )
    pw.io.jsonlines.write(r, workdir / "out" / "tuples.jsonl")
    pw.run()
