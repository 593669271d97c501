"""Date-time expressions: timestamps in several units and back."""

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
    r = t.select(pw.this.d, s=pw.this.d.dt.timestamp(unit='s'), ms=pw.this.d.dt.timestamp(unit='ms'), back=pw.cast(int, pw.this.d.dt.timestamp(unit='s')).dt.from_timestamp(unit='s'))
    pw.io.csv.write(r, workdir / "out" / "dates.csv")
    pw.run()
