"""CSV and JSON lines output of naive and UTC datetimes and durations."""
import datetime

import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        label | naive               | utc                       | seconds
        a     | 2024-01-02T03:04:05 | 2024-01-02T03:04:05+00:00 | 90
        b     | 1999-12-31T23:59:59 | 2024-06-30T12:00:00+02:00 | -5
        """
    )
    t = t.select(
        pw.this.label,
        naive=pw.this.naive.dt.strptime("%Y-%m-%dT%H:%M:%S"),
        utc=pw.this.utc.dt.strptime("%Y-%m-%dT%H:%M:%S%z"),
        wait=pw.this.seconds * datetime.timedelta(seconds=1),
    )
    t = t.select(*pw.this, later=pw.this.naive + pw.this.wait, millis=pw.this.naive + datetime.timedelta(milliseconds=1))
    pw.io.csv.write(t, workdir / "out" / "times.csv")
    pw.io.jsonlines.write(t, workdir / "out" / "times.jsonl")
    pw.run()
