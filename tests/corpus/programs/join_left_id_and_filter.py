"""A left join keeping the left ids, then a filter and a select of both sides' columns."""
import pathway as pw


def run(workdir, step):
    orders = pw.debug.table_from_markdown(
        """
        id | customer | amount
        1  | ann      | 10
        2  | bob      | 25
        3  | cid      | 7
        """
    )
    customers = pw.debug.table_from_markdown(
        """
        name | city
        ann  | Oslo
        bob  | Rome
        """
    )
    joined = orders.join_left(customers, pw.left.customer == pw.right.name, id=pw.left.id).select(
        pw.left.customer, pw.left.amount, city=pw.right.city
    )
    big = joined.filter(pw.this.amount > 8)
    pw.io.csv.write(big, workdir / "out" / "big.csv")
    pw.run()
