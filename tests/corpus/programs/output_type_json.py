"""CSV and JSON lines output of Json values: objects, strings, numbers, null, arrays."""

import pathway as pw


class Row(pw.Schema):
    key: int
    value: pw.Json


VALUES = [pw.Json({'a': [1, 2.5, None]}), pw.Json('text'), pw.Json(3), pw.Json(None), pw.Json([True, {'b': 'c'}])]


def run(workdir, step):
    t = pw.debug.table_from_rows(Row, list(enumerate(VALUES)))
    pw.io.csv.write(t, workdir / "out" / "values.csv")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
