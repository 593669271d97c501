"""JSON lines input of floats from ints, strings, null; lines that do not fit are left out."""
import pathway as pw


class Row(pw.Schema):
    key: int
    value: float


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "values.jsonl").write_text('{"key": 0, "value": 1}\n{"key": 1, "value": 2.5}\n{"key": 2, "value": -1e10}\n{"key": 3, "value": "3.5"}\n{"key": 4, "value": null}\n{"key": 5, "value": false}\n')
    t = pw.io.jsonlines.read(source, schema=Row, mode="static")
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.run()
