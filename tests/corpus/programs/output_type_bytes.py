"""CSV and JSON lines output of bytes (base64 text)."""

import pathway as pw


class Row(pw.Schema):
    key: int
    value: bytes


VALUES = [b'', b'abc', bytes([0, 255, 10])]


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, list(enumerate(VALUES)))
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
