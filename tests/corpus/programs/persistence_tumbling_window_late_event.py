"""Persistent tumbling-window counts: a later run brings events for a new window and one for an old window."""
import pathway as pw

STEPS = 2


class Event(pw.Schema):
    t: int
    user: str


def run(workdir, step):
    source = workdir / "in"
    source.mkdir(exist_ok=True)
    lines = {0: "1,a\n3,b\n7,a\n", 1: "12,a\n2,c\n"}
    (source / f"e{step}.csv").write_text("t,user\n" + lines[step])
    events = pw.io.csv.read(source, schema=Event, mode="static")
    counts = events.windowby(pw.this.t, window=pw.temporal.tumbling(duration=5)).reduce(
        start=pw.this._pw_window_start, n=pw.reducers.count(), users=pw.reducers.sorted_tuple(pw.this.user)
    )
    pw.io.jsonlines.write(counts, workdir / "out" / f"windows{step}.jsonl")
    pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(workdir / "state")))
