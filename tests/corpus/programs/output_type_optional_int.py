"""CSV and JSON lines output of an optional int column with None."""

import pathway as pw


class Row(pw.Schema):
    key: int
    value: int | None


VALUES = [1, None, -3]


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, list(enumerate(VALUES)))
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
