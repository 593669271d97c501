"""CSV input with a quote that is never closed: the field holds the rest of the file, its
row stands for all the lines after it (sparkway warns; the output is Pathway's)."""
import pathway as pw


class Row(pw.Schema):
    key: int
    value: str


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "values.csv").write_text('key,value\n0,a\n1,"b\n2,c\n3,"d""e\n')
    t = pw.io.csv.read(source, schema=Row, mode="static")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
