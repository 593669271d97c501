"""JSON lines input of scalars, optionals, lists and nested JSON, written back as CSV and JSON lines."""
import pathway as pw


class Row(pw.Schema):
    n: int
    x: float
    s: str
    b: bool
    maybe: str | None
    data: pw.Json


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "rows.jsonl").write_text(
        '{"n": 1, "x": 1.5, "s": "a", "b": true, "maybe": "m", "data": {"k": [1, 2]}}\n'
        '{"n": 2, "x": 2, "s": "b \\"q\\"", "b": false, "maybe": null, "data": 3}\n'
        '{"n": 3, "x": -0.5, "s": "", "b": true, "data": "text"}\n'
    )
    t = pw.io.jsonlines.read(source, schema=Row, mode="static")
    pw.io.csv.write(t, workdir / "out" / "rows.csv")
    pw.io.jsonlines.write(t, workdir / "out" / "rows.jsonl")
    pw.run()
