"""Persistent sums over CSV files that are rewritten (a line changed, a line removed) and deleted between runs."""
import pathway as pw

STEPS = 3


class Sale(pw.Schema):
    shop: str
    amount: int


def run(workdir, step):
    source = workdir / "in"
    source.mkdir(exist_ok=True)
    if step == 0:
        (source / "a.csv").write_text("shop,amount\nx,1\ny,2\nx,3\n")
        (source / "b.csv").write_text("shop,amount\ny,10\n")
    elif step == 1:
        (source / "a.csv").write_text("shop,amount\nx,1\ny,5\n")
    else:
        (source / "b.csv").unlink()
    sales = pw.io.csv.read(source, schema=Sale, mode="static")
    sums = sales.groupby(pw.this.shop).reduce(pw.this.shop, total=pw.reducers.sum(pw.this.amount), n=pw.reducers.count())
    pw.io.csv.write(sums, workdir / "out" / f"sums{step}.csv")
    pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(workdir / "state")))
