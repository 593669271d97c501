"""JSON lines input of an optional str with null; lines that do not fit are left out."""
import pathway as pw


class Row(pw.Schema):
    key: int
    value: str | None


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "values.jsonl").write_text('{"key": 0, "value": "a"}\n{"key": 1, "value": null}\n')
    t = pw.io.jsonlines.read(source, schema=Row, mode="static")
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.run()
