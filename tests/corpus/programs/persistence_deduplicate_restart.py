"""A persistent deduplicate (keep the largest value per key) across runs."""
import pathway as pw

STEPS = 3


class Bid(pw.Schema):
    item: str
    price: int


def run(workdir, step):
    source = workdir / "in"
    source.mkdir(exist_ok=True)
    lines = {0: "lamp,5\nvase,7\n", 1: "lamp,4\nlamp,9\n", 2: "vase,8\n"}
    (source / f"b{step}.csv").write_text("item,price\n" + lines[step])
    bids = pw.io.csv.read(source, schema=Bid, mode="static")
    best = bids.deduplicate(value=pw.this.price, instance=pw.this.item, acceptor=lambda new, old: new > old)
    pw.io.csv.write(best, workdir / "out" / f"best{step}.csv")
    pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(workdir / "state")))
