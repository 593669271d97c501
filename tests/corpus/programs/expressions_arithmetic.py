"""Integer and float arithmetic: floor division and modulo of negatives, true division, powers, abs, round."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        a  | b
        7  | 2
        -7 | 2
        7  | -3
        0  | 5
        """
    )
    r = t.select(
        pw.this.a,
        pw.this.b,
        fdiv=pw.this.a // pw.this.b,
        mod=pw.this.a % pw.this.b,
        div=pw.this.a / pw.this.b,
        pow=pw.this.a ** 2,
        neg=-pw.this.a,
        absolute=abs(pw.this.a),
        fmod=(pw.this.a * 1.5) % pw.this.b,
        rounded=(pw.this.a / 3).num.round(2),
    )
    pw.io.csv.write(r, workdir / "out" / "arith.csv")
    pw.run()
