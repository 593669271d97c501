"""CSV and JSON lines output of durations: zero, negative, a microsecond, weeks."""
import datetime

import pathway as pw


class Row(pw.Schema):
    key: int
    value: pw.Duration


VALUES = [datetime.timedelta(0), datetime.timedelta(days=-1, seconds=5), datetime.timedelta(microseconds=1), datetime.timedelta(weeks=3)]


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, list(enumerate(VALUES)))
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
