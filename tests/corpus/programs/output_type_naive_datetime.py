"""CSV and JSON lines output of naive datetimes: microseconds, before 1970, midnight."""
import datetime

import pathway as pw


class Row(pw.Schema):
    key: int
    value: pw.DateTimeNaive


VALUES = [datetime.datetime(2024, 2, 29, 23, 59, 59, 999999), datetime.datetime(1969, 12, 31, 0, 0), datetime.datetime(2000, 1, 1)]


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, list(enumerate(VALUES)))
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
