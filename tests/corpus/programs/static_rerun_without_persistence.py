"""Without persistence a rerun recomputes everything: the second run outputs all rows again."""
import pathway as pw

STEPS = 2


class Word(pw.Schema):
    word: str


def run(workdir, step):
    source = workdir / "in"
    source.mkdir(exist_ok=True)
    # one input file: without persistence, Pathway commits a first file apart from the rest
    # after a clock tick, so that the times of several files' rows depend on timing
    (source / "words.csv").write_text("word\n" + ("x\ny\n" if step == 0 else "x\ny\nx\n"))
    table = pw.io.csv.read(source, schema=Word, mode="static")
    counts = table.groupby(pw.this.word).reduce(pw.this.word, n=pw.reducers.count())
    pw.io.csv.write(counts, workdir / "out" / f"counts{step}.csv")
    pw.run()
