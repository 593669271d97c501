"""compute_and_print of bools."""

import pathway as pw


class Row(pw.Schema):
    key: int
    value: bool


VALUES = [True, False]


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, list(enumerate(VALUES)))
    pw.debug.compute_and_print(t, include_id=False)
