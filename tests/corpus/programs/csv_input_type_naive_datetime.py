"""CSV input of naive datetimes in several spellings; rows that do not parse are left out."""
import pathway as pw


class Row(pw.Schema):
    key: int
    value: pw.DateTimeNaive


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "values.csv").write_text('key,value\n0,2024-01-02T03:04:05\n1,2024-01-02 03:04:05\n2,2024-01-02T03:04:05.123456\n3,2024-01-02\n4,2024-01-02T03:04:05+00:00\n')
    t = pw.io.csv.read(source, schema=Row, mode="static")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
