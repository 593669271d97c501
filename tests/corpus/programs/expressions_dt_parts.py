"""Date-time expressions: strptime then year, month, day, hour, minute, second, weekday and microsecond."""

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
    r = t.select(pw.this.d, y=pw.this.d.dt.year(), mo=pw.this.d.dt.month(), day=pw.this.d.dt.day(), h=pw.this.d.dt.hour(), mi=pw.this.d.dt.minute(), sec=pw.this.d.dt.second(), wd=pw.this.d.dt.weekday(), us=pw.this.d.dt.microsecond())
    pw.io.csv.write(r, workdir / "out" / "dates.csv")
    pw.run()
