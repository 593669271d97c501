"""CSV input of durations (integer nanoseconds; sparkway keeps microseconds, so whole microseconds here); rows that do not parse are left out."""
import pathway as pw


class Row(pw.Schema):
    key: int
    value: pw.Duration


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "values.csv").write_text('key,value\n0,0\n1,1000\n2,-5000\n3,1.5\n4,90000000000\n')
    t = pw.io.csv.read(source, schema=Row, mode="static")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
