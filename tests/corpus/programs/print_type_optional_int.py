"""compute_and_print of an optional int column with None."""

import pathway as pw


class Row(pw.Schema):
    key: int
    value: int | None


VALUES = [1, None, -3]


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, list(enumerate(VALUES)))
    pw.debug.compute_and_print(t, include_id=False)
