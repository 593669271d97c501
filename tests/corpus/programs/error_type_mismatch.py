"""Adding a string to an int is refused while building the program (a TypeError)."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        a | s
        1 | x
        """
    )
    t.select(z=pw.this.a + pw.this.s)
