"""CSV and JSON lines output of floats: zero signs, tiny, huge, infinities (Pathway's table_from_rows refuses NaN)."""

import pathway as pw


class Row(pw.Schema):
    key: int
    value: float


VALUES = [0.0, -0.0, 1.5, 1e-7, 123456789.125, 2.5e300, float('inf'), float('-inf')]


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, list(enumerate(VALUES)))
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
