"""CSV input of ints: the largest, one too large, a float, hex, a word; rows that do not parse are left out."""
import pathway as pw


class Row(pw.Schema):
    key: int
    value: int


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "values.csv").write_text('key,value\n0,0\n1,-12\n2,9223372036854775807\n3,9223372036854775808\n4,1.0\n5,0x10\n6,abc\n')
    t = pw.io.csv.read(source, schema=Row, mode="static")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
