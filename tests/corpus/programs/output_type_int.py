"""CSV and JSON lines output of ints, including the 64-bit extremes."""

import pathway as pw


class Row(pw.Schema):
    key: int
    value: int


VALUES = [0, -1, 2**63 - 1, -(2**63), 42]


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, list(enumerate(VALUES)))
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
