"""compute_and_print_update_stream of a filtered and mapped stream, without ids."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        id | name  | score | __time__ | __diff__
        1  | alice | 10    | 2        | 1
        2  | bob   | 3     | 2        | 1
        1  | alice | 10    | 4        | -1
        1  | alice | 12    | 4        | 1
        2  | bob   | 3     | 6        | -1
        """
    )
    passed = t.filter(pw.this.score > 5).select(pw.this.name, double=pw.this.score * 2)
    pw.debug.compute_and_print_update_stream(passed, include_id=False)
