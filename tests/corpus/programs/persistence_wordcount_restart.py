"""A persistent word count run three times: new files arrive between the runs; each run outputs only what changed."""
import pathway as pw

STEPS = 3


class Word(pw.Schema):
    word: str


def run(workdir, step):
    source = workdir / "in"
    source.mkdir(exist_ok=True)
    files = {0: "apple\npear\napple\n", 1: "pear\nplum\n", 2: ""}
    (source / f"part{step}.csv").write_text("word\n" + files[step])
    words = pw.io.csv.read(source, schema=Word, mode="static")
    counts = words.groupby(pw.this.word).reduce(pw.this.word, count=pw.reducers.count())
    pw.io.csv.write(counts, workdir / "out" / f"counts{step}.csv")
    backend = pw.persistence.Backend.filesystem(workdir / "state")
    pw.run(persistence_config=pw.persistence.Config(backend))
