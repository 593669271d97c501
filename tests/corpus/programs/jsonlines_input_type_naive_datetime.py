"""JSON lines input of naive datetimes as text, a number, bad text; lines that do not fit are left out."""
import pathway as pw


class Row(pw.Schema):
    key: int
    value: pw.DateTimeNaive


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "values.jsonl").write_text('{"key": 0, "value": "2024-01-02T03:04:05"}\n{"key": 1, "value": "2024-01-02T03:04:05.5"}\n{"key": 2, "value": 1700000000}\n{"key": 3, "value": "bad"}\n')
    t = pw.io.jsonlines.read(source, schema=Row, mode="static")
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.run()
