"""JSON lines input of durations as integer nanoseconds (whole microseconds: sparkway keeps no finer), a string, a float; lines that do not fit are left out."""
import pathway as pw


class Row(pw.Schema):
    key: int
    value: pw.Duration


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "values.jsonl").write_text('{"key": 0, "value": 0}\n{"key": 1, "value": 2000}\n{"key": 2, "value": -1000}\n{"key": 3, "value": "5"}\n{"key": 4, "value": 2.5}\n')
    t = pw.io.jsonlines.read(source, schema=Row, mode="static")
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.run()
