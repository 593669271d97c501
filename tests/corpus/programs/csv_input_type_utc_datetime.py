"""CSV input of UTC datetimes with offsets, Z, and none; rows that do not parse are left out."""
import pathway as pw


class Row(pw.Schema):
    key: int
    value: pw.DateTimeUtc


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "values.csv").write_text('key,value\n0,2024-01-02T03:04:05+00:00\n1,2024-01-02T03:04:05+02:00\n2,2024-01-02T03:04:05Z\n3,2024-01-02T03:04:05\n')
    t = pw.io.csv.read(source, schema=Row, mode="static")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
