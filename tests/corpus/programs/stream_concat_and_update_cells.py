"""concat of two streams with disjoint ids, and update_cells overriding a column for some rows over time."""
import pathway as pw


def run(workdir, step):
    a = pw.debug.table_from_markdown(
        """
        id | v | __time__
        1  | a | 2
        2  | b | 4
        """
    )
    b = pw.debug.table_from_markdown(
        """
        id | v | __time__
        3  | c | 2
        """
    )
    patch = pw.debug.table_from_markdown(
        """
        id | v | __time__ | __diff__
        1  | A | 4        | 1
        1  | A | 6        | -1
        """
    )
    pw.universes.promise_are_pairwise_disjoint(a, b)
    pw.io.csv.write(a.concat(b), workdir / "out" / "concat.csv")
    pw.universes.promise_is_subset_of(patch, a)
    pw.io.csv.write(a.update_cells(patch), workdir / "out" / "patched.csv")
    pw.run()
