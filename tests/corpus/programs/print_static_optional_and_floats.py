"""compute_and_print of optional ints, floats of many sizes, and negative numbers."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        a  | f
        1  | 0.1
        -2 | 1e20
           | -3.25
        """
    )
    pw.debug.compute_and_print(t.select(pw.this.a, pw.this.f, g=pw.this.f * 3, h=pw.coalesce(pw.this.a, 0) * 2), include_id=False)
