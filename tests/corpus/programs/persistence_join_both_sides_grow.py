"""A persistent inner join whose two inputs get new rows in later runs; each run outputs the new pairs."""
import pathway as pw

STEPS = 3


class Order(pw.Schema):
    order: int
    customer: str


class Customer(pw.Schema):
    customer: str
    city: str


def run(workdir, step):
    orders_dir, customers_dir = workdir / "orders", workdir / "customers"
    orders_dir.mkdir(exist_ok=True)
    customers_dir.mkdir(exist_ok=True)
    new_orders = {0: "1,ann\n2,bob\n", 1: "3,ann\n4,cid\n", 2: ""}
    new_customers = {0: "ann,Oslo\n", 1: "bob,Rome\n", 2: "cid,Lima\n"}
    (orders_dir / f"o{step}.csv").write_text("order,customer\n" + new_orders[step])
    (customers_dir / f"c{step}.csv").write_text("customer,city\n" + new_customers[step])
    orders = pw.io.csv.read(orders_dir, schema=Order, mode="static")
    customers = pw.io.csv.read(customers_dir, schema=Customer, mode="static")
    pairs = orders.join(customers, orders.customer == customers.customer).select(orders.order, customers.city)
    pw.io.csv.write(pairs, workdir / "out" / f"pairs{step}.csv")
    pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem(workdir / "state")))
