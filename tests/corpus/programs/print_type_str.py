"""compute_and_print of strings with separators, quotes, control characters and unicode."""

import pathway as pw


class Row(pw.Schema):
    key: int
    value: str


VALUES = ['', ' ', 'a,b', 'quote "x"', 'tab\there', 'new\nline', 'ünïcødé ✓', 'back\\slash']


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, list(enumerate(VALUES)))
    pw.debug.compute_and_print(t, include_id=False)
