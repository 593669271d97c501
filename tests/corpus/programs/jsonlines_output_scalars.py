"""JSON lines output of int, float, str (with quotes and unicode), bool and None."""
import pathway as pw


class Row(pw.Schema):
    n: int
    x: float
    s: str
    b: bool
    maybe: float | None


def run(workdir, step):
    t = pw.debug.table_from_rows(
        Row,
        [
            (1, 1.5, "plain", True, 7.0),
            (-2, -0.25, 'say "hi"\tthere', False, None),
            (3, 1e20, "zażółć €", True, None),
            (0, 3.0, "back\\slash", False, 0.1),
        ],
    )
    pw.io.jsonlines.write(t, workdir / "out" / "scalars.jsonl")
    pw.run()
