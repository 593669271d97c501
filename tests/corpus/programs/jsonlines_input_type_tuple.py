"""JSON lines input of tuples of the right and wrong lengths and types; lines that do not fit are left out."""
import pathway as pw


class Row(pw.Schema):
    key: int
    value: tuple[int, str]


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "values.jsonl").write_text('{"key": 0, "value": [1, "a"]}\n{"key": 1, "value": [1]}\n{"key": 2, "value": [1, "a", 2]}\n{"key": 3, "value": ["a", 1]}\n')
    t = pw.io.jsonlines.read(source, schema=Row, mode="static")
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.run()
