"""compute_and_print of an optional str column with None and the empty string."""

import pathway as pw


class Row(pw.Schema):
    key: int
    value: str | None


VALUES = ['x', None, '']


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, list(enumerate(VALUES)))
    pw.debug.compute_and_print(t, include_id=False)
