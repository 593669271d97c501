"""compute_and_print of one optional column without ids: a None is printed as None (in a
row of several cells it is blank), an empty string as nothing."""

import pathway as pw


class Row(pw.Schema):
    key: int
    value: int | None
    text: str | None


ROWS = [(1, 1, "x"), (2, None, ""), (3, -3, None)]


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, ROWS)
    pw.debug.compute_and_print(t.select(pw.this.value), include_id=False)
    pw.debug.compute_and_print(t.select(pw.this.text), include_id=False)
