"""Integer division by zero stops the run with ZeroDivisionError."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        a | b
        1 | 0
        """
    )
    pw.io.csv.write(t.select(q=pw.this.a // pw.this.b), workdir / "out" / "q.csv")
    pw.run()
