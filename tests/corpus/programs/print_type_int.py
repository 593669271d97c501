"""compute_and_print of ints, including the 64-bit extremes."""

import pathway as pw


class Row(pw.Schema):
    key: int
    value: int


VALUES = [0, -1, 2**63 - 1, -(2**63), 42]


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, list(enumerate(VALUES)))
    pw.debug.compute_and_print(t, include_id=False)
