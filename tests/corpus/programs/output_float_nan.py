"""Not-a-number in outputs: CSV (``NaN``), JSON lines (``null``) and ``to_string``, next
to the infinities; made by an expression (Pathway's table_from_rows refuses NaN)."""

import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        key | value
        1   | 1.5
        2   | -2.0
        """
    ).select(pw.this.key, nan=float("nan"), inf=pw.this.value * float("inf"))
    shown = t.select(pw.this.key, nan=pw.this.nan.to_string(), inf=pw.this.inf.to_string())
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.io.csv.write(shown, workdir / "out" / "texts.csv")
    pw.run()
