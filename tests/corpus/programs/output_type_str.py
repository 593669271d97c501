"""CSV and JSON lines output of strings with separators, quotes, control characters and unicode."""

import pathway as pw


class Row(pw.Schema):
    key: int
    value: str


VALUES = ['', ' ', 'a,b', 'quote "x"', 'tab\there', 'new\nline', 'ünïcødé ✓', 'back\\slash']


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, list(enumerate(VALUES)))
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
