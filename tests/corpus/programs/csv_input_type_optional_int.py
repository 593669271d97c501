"""CSV input of an optional int: empty cell, None, null; rows that do not parse are left out."""
import pathway as pw


class Row(pw.Schema):
    key: int
    value: int | None


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "values.csv").write_text('key,value\n0,\n1,7\n2,None\n3,null\n')
    t = pw.io.csv.read(source, schema=Row, mode="static")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
