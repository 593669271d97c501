"""CSV and JSON lines output of tuples of an int and a str."""

import pathway as pw


class Row(pw.Schema):
    key: int
    value: tuple[int, str]


VALUES = [(1, 'a'), (-2, 'b,c'), (0, '')]


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, list(enumerate(VALUES)))
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
