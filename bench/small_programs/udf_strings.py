"""User-defined functions and string methods over names."""
import pathway as pw


@pw.udf
def initials(name: str) -> str:
    return "".join(part[0] for part in name.split())


people = pw.debug.table_from_rows(
    pw.schema_from_types(name=str, city=str),
    [(f"person {i} of house {i % 9}", ["Oslo", "rome", "PARIS"][i % 3]) for i in range(150)],
)
shaped = people.select(
    short=initials(people.name),
    city=people.city.str.lower(),
    length=people.name.str.len(),
    loud=people.city.str.upper(),
    swapped=people.name.str.replace("house", "home"),
    starts=people.name.str.startswith("person 1"),
)
per_city = shaped.groupby(shaped.city).reduce(shaped.city, n=pw.reducers.count(), longest=pw.reducers.max(shaped.length))
pw.debug.compute_and_print(per_city, include_id=False)
pw.debug.compute_and_print(shaped.filter(shaped.starts).select(pw.this.short, pw.this.swapped), include_id=False)
