"""CSV input of every simple type, with quoting, empty cells and defaults, written as JSON lines."""
import pathway as pw


class Row(pw.Schema):
    n: int
    x: float
    s: str
    b: bool
    maybe: int | None
    d: str = pw.column_definition(default_value="none")


def run(workdir, step):
    source = workdir / "in"
    source.mkdir()
    (source / "rows.csv").write_text(
        "n,x,s,b,maybe,d\n"
        '1,1.5,plain,true,7,given\n'
        '-2,-3,"quoted, with comma",False,,\n'
        '3,2e3,"say ""hi""",TRUE,-1,\n'
        '4,0.1, spaced ,false,0,x\n'
    )
    t = pw.io.csv.read(source, schema=Row, mode="static")
    pw.io.jsonlines.write(t, workdir / "out" / "rows.jsonl")
    pw.run()
