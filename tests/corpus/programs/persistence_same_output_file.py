"""A persistent program writing to the same output file in every run: each run's file holds that run's changes."""
import pathway as pw

STEPS = 3


class Word(pw.Schema):
    word: str


def run(workdir, step):
    source = workdir / "in"
    source.mkdir(exist_ok=True)
    words = {0: "a\nb\n", 1: "a\n", 2: ""}
    (source / f"w{step}.csv").write_text("word\n" + words[step])
    table = pw.io.csv.read(source, schema=Word, mode="static")
    counts = table.groupby(pw.this.word).reduce(pw.this.word, n=pw.reducers.count())
    pw.io.csv.write(counts, workdir / "out" / "counts.csv")
    pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(workdir / "state")))
