"""sort gives each row the ids of its neighbours; read back the neighbours' values through ix."""
import pathway as pw


def run(workdir, step):
    t = pw.debug.table_from_markdown(
        """
        name | score
        ann  | 5
        bob  | 9
        cid  | 7
        """
    )
    order = t.sort(key=pw.this.score)
    r = t.select(
        pw.this.name,
        prev=t.ix(order.prev, optional=True).name,
        next=t.ix(order.next, optional=True).name,
    )
    pw.io.csv.write(r, workdir / "out" / "neighbours.csv")
    pw.run()
