"""CSV output of int, float, str (with quotes, commas, spaces), bool and None."""
import pathway as pw


class Row(pw.Schema):
    n: int
    x: float
    s: str
    b: bool
    maybe: int | None


def run(workdir, step):
    t = pw.debug.table_from_rows(
        Row,
        [
            (1, 1.5, "plain", True, 7),
            (-2, -0.25, 'say "hi"', False, None),
            (3, 1e20, "a,b", True, None),
            (0, 3.0, " padded ", False, 0),
            (9007199254740993, 1 / 3, "", True, -1),
        ],
    )
    pw.io.csv.write(t, workdir / "out" / "scalars.csv")
    pw.run()
