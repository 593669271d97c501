"""if_else, coalesce, require, is_none and unwrap over optional columns."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        a | b
        1 |
          | 2
        3 | 4
        """
    )
    r = t.select(
        first=pw.coalesce(pw.this.a, pw.this.b),
        both=pw.require(pw.this.a + pw.this.b, pw.this.a, pw.this.b),
        missing=pw.this.a.is_none(),
        choice=pw.if_else(pw.this.a.is_not_none(), pw.this.a, -1),
        filled=pw.unwrap(pw.coalesce(pw.this.b, 0)),
    )
    pw.io.csv.write(r, workdir / "out" / "optional.csv")
    pw.run()
