"""A fixpoint (pw.iterate: the Collatz steps of a few numbers) and updates of rows and cells."""
import pathway as pw


def collatz(numbers: pw.Table) -> pw.Table:
    return numbers.select(
        start=numbers.start,
        n=pw.if_else(numbers.n == 1, 1, pw.if_else(numbers.n % 2 == 0, numbers.n // 2, 3 * numbers.n + 1)),
        steps=pw.if_else(numbers.n == 1, numbers.steps, numbers.steps + 1),
    )


numbers = pw.debug.table_from_rows(pw.schema_from_types(start=int, n=int, steps=int), [(k, k, 0) for k in range(2, 12)])
done = pw.iterate(collatz, numbers=numbers)
prices = pw.debug.table_from_markdown("""
   | item | price
 1 | pen  | 2
 2 | book | 12
 3 | lamp | 30
""")
changed = pw.debug.table_from_markdown("""
   | item | price
 2 | book | 10
 4 | mug  | 6
""")
cells = pw.debug.table_from_markdown("""
   | price
 3 | 25
""")
pw.universes.promise_is_subset_of(cells, prices)
updated = prices.update_cells(cells).update_rows(changed)
pw.debug.compute_and_print(done.select(done.start, done.steps), include_id=False)
pw.debug.compute_and_print(updated, include_id=False)
