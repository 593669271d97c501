"""compute_and_print of lists of ints, empty too."""

import pathway as pw


class Row(pw.Schema):
    key: int
    value: list[int]


VALUES = [[], [1], [1, 2, 3]]


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, list(enumerate(VALUES)))
    pw.debug.compute_and_print(t, include_id=False)
