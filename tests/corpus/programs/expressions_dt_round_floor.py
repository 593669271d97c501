"""Date-time expressions: round and floor of date-times to durations."""
import datetime

import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        s
        2024-02-29T13:07:59.123456
        1999-12-31T23:59:59.999999
        """
    ).select(s=pw.this.s.str.replace("T", " "))
    t = t.select(d=pw.this.s.dt.strptime('%Y-%m-%d %H:%M:%S.%f'))
    r = t.select(pw.this.d, r=pw.this.d.dt.round(datetime.timedelta(minutes=15)), f=pw.this.d.dt.floor(datetime.timedelta(hours=1)), day=pw.this.d.dt.floor(datetime.timedelta(days=1)))
    pw.io.csv.write(r, workdir / "out" / "dates.csv")
    pw.run()
