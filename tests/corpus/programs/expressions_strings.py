"""String methods: upper, lower, len, replace, slice, strip, startswith, count, find, reversed, title."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        s
        Hello_World
        abcabc
        """
    )
    r = t.select(
        up=pw.this.s.str.upper(),
        low=pw.this.s.str.lower(),
        n=pw.this.s.str.len(),
        rep=pw.this.s.str.replace("b", "B"),
        sl=pw.this.s.str.slice(1, 4),
        starts=pw.this.s.str.startswith("ab"),
        cnt=pw.this.s.str.count("c"),
        at=pw.this.s.str.find("l"),
        rev=pw.this.s.str.reversed(),
        title=pw.this.s.str.title(),
    )
    pw.io.csv.write(r, workdir / "out" / "strings.csv")
    pw.run()
