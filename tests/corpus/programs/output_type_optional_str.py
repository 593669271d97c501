"""CSV and JSON lines output of an optional str column with None and the empty string."""

import pathway as pw


class Row(pw.Schema):
    key: int
    value: str | None


VALUES = ['x', None, '']


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, list(enumerate(VALUES)))
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
