"""Selecting a column the table does not have is refused while building the program."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        a
        1
        """
    )
    t.select(pw.this.b)
