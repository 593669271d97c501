"""JSON lines input of ints: a float, a string, a bool, null; lines that do not fit are left out."""
import pathway as pw


class Row(pw.Schema):
    key: int
    value: int


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "values.jsonl").write_text('{"key": 0, "value": 1}\n{"key": 1, "value": -7}\n{"key": 2, "value": 2.0}\n{"key": 3, "value": "3"}\n{"key": 4, "value": true}\n{"key": 5, "value": null}\n{"key": 6, "value": 9223372036854775807}\n')
    t = pw.io.jsonlines.read(source, schema=Row, mode="static")
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.run()
