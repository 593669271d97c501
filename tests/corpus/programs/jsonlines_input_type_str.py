"""JSON lines input of strings: empty, escaped unicode, a number, null, a list; lines that do not fit are left out."""
import pathway as pw


class Row(pw.Schema):
    key: int
    value: str


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "values.jsonl").write_text('{"key": 0, "value": "a"}\n{"key": 1, "value": ""}\n{"key": 2, "value": "\\u00e9"}\n{"key": 3, "value": 5}\n{"key": 4, "value": null}\n{"key": 5, "value": ["x"]}\n')
    t = pw.io.jsonlines.read(source, schema=Row, mode="static")
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.run()
