"""JSON lines input of lists of ints, mixed lists, non-lists; lines that do not fit are left out."""
import pathway as pw


class Row(pw.Schema):
    key: int
    value: list[int]


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "values.jsonl").write_text('{"key": 0, "value": [1, 2]}\n{"key": 1, "value": []}\n{"key": 2, "value": [1, "x"]}\n{"key": 3, "value": 5}\n{"key": 4, "value": null}\n')
    t = pw.io.jsonlines.read(source, schema=Row, mode="static")
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.run()
