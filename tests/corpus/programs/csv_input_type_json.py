"""CSV input of Json cells: object, array, number, string, null, broken; rows that do not parse are left out."""
import pathway as pw


class Row(pw.Schema):
    key: int
    value: pw.Json


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "values.csv").write_text('key,value\n0,"{""a"": 1}"\n1,[1,2]\n2,3\n3,"""s"""\n4,null\n5,{bad\n')
    t = pw.io.csv.read(source, schema=Row, mode="static")
    pw.io.jsonlines.write(t, workdir / "out" / "values.jsonl")
    pw.run()
