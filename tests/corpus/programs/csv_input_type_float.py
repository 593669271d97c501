"""CSV input of floats in several spellings; rows that do not parse are left out."""
import pathway as pw


class Row(pw.Schema):
    key: int
    value: float


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "values.csv").write_text('key,value\n0,1\n1,-2.5\n2,1e-3\n3,1E3\n4,+0.5\n5,5.\n6,Infinity\n7,-nan\n8,1,5\n')
    t = pw.io.csv.read(source, schema=Row, mode="static")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
