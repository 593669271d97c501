"""compute_and_print of ints, floats, strings, bools, None, tuples and datetimes, without ids."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        a | b    | c     | d
        1 | 2.5  | hello | True
        2 | -1.0 | x     | False
        """
    )
    t = t.select(
        *pw.this,
        e=pw.make_tuple(pw.this.a, pw.this.c),
        f=pw.if_else(pw.this.d, None, pw.this.a),
        g=pw.this.a / 3,
        h=pw.this.c.str.upper(),
    )
    pw.debug.compute_and_print(t, include_id=False)
