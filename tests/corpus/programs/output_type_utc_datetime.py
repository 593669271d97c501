"""CSV and JSON lines output of UTC datetimes, one given with another offset."""
import datetime

import pathway as pw


class Row(pw.Schema):
    key: int
    value: pw.DateTimeUtc


VALUES = [datetime.datetime(2024, 2, 29, 23, 59, 59, 500000, tzinfo=datetime.timezone.utc), datetime.datetime(1999, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=5)))]


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, list(enumerate(VALUES)))
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
