"""concat_reindex of two tables, and update_rows of a table by another with the same keys."""
import pathway as pw


def run(workdir, step):
    a = pw.debug.table_from_markdown(
        """
        k | v
        1 | x
        2 | y
        """
    ).with_id_from(pw.this.k)
    b = pw.debug.table_from_markdown(
        """
        k | v
        2 | Y
        3 | Z
        """
    ).with_id_from(pw.this.k)
    pw.io.csv.write(a.concat_reindex(b), workdir / "out" / "both.csv")
    pw.io.csv.write(a.update_rows(b), workdir / "out" / "updated.csv")
    pw.run()
