"""CSV input of strings: empty, quoted, inner quotes, spaces; rows that do not parse are left out."""
import pathway as pw


class Row(pw.Schema):
    key: int
    value: str


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "values.csv").write_text('key,value\n0,\n1,plain\n2,"quoted, comma"\n3,"with ""quotes"""\n4, spaced \n')
    t = pw.io.csv.read(source, schema=Row, mode="static")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
