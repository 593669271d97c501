"""A persistent program over one JSON lines file that grows between runs: only the new lines are read."""
import pathway as pw

STEPS = 3


class Reading(pw.Schema):
    sensor: str
    value: float


def run(workdir, step):
    source = workdir / "in"
    source.mkdir(exist_ok=True)
    lines = {0: ['{"sensor": "s1", "value": 1.5}', '{"sensor": "s2", "value": 2.0}'],
             1: ['{"sensor": "s1", "value": 3.5}'], 2: []}
    with open(source / "readings.jsonl", "a") as f:
        f.write("".join(line + "\n" for line in lines[step]))
    readings = pw.io.jsonlines.read(source, schema=Reading, mode="static")
    latest = readings.groupby(pw.this.sensor).reduce(pw.this.sensor, top=pw.reducers.max(pw.this.value), n=pw.reducers.count())
    pw.io.csv.write(latest, workdir / "out" / f"latest{step}.csv")
    pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(workdir / "state")))
