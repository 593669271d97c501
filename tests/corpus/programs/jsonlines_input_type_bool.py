"""JSON lines input of bools: the words, 1, a string, null; lines that do not fit are left out."""
import pathway as pw


class Row(pw.Schema):
    key: int
    value: bool


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "values.jsonl").write_text('{"key": 0, "value": true}\n{"key": 1, "value": false}\n{"key": 2, "value": 1}\n{"key": 3, "value": "true"}\n{"key": 4, "value": null}\n')
    t = pw.io.jsonlines.read(source, schema=Row, mode="static")
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.run()
