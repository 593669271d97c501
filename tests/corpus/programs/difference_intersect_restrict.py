"""difference, intersect and restrict of tables with shared ids."""
import pathway as pw


def run(workdir, step):
    a = pw.debug.table_from_markdown(
        """
        k | v
        1 | a
        2 | b
        3 | c
        """
    ).with_id_from(pw.this.k)
    b = pw.debug.table_from_markdown(
        """
        k | w
        2 | x
        3 | y
        """
    ).with_id_from(pw.this.k)
    pw.io.csv.write(a.difference(b), workdir / "out" / "difference.csv")
    pw.io.csv.write(a.intersect(b), workdir / "out" / "intersect.csv")
    pw.universes.promise_is_subset_of(b, a)  # restrict needs the promise that b's ids are a's
    pw.io.csv.write(a.restrict(b), workdir / "out" / "restrict.csv")
    pw.run()
