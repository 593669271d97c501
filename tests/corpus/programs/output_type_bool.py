"""CSV and JSON lines output of bools."""

import pathway as pw


class Row(pw.Schema):
    key: int
    value: bool


VALUES = [True, False]


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, list(enumerate(VALUES)))
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
