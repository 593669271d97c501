"""flatten of a list column (from pw.apply) keeping the other columns."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        word | n
        ab   | 2
        c    | 0
        xyz  | 1
        """
    )
    t = t.select(pw.this.word, letters=pw.apply_with_type(lambda w, n: list(w[:n + 1]), list[str], pw.this.word, pw.this.n))
    pw.io.csv.write(t.flatten(pw.this.letters), workdir / "out" / "letters.csv")
    pw.run()
