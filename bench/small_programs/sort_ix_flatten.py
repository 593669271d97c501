"""Sorting (prev/next), lookups by id, and flattening lists."""
import pathway as pw

scores = pw.debug.table_from_rows(
    pw.schema_from_types(player=str, points=int),
    [(f"p{i}", (i * 29) % 101) for i in range(80)],
)
order = scores.sort(key=scores.points)
ranked = scores.with_columns(prev=order.prev, next=order.next)
with_prev = ranked.select(
    ranked.player, ranked.points,
    before=pw.if_else(ranked.prev.is_none(), 0, scores.ix(ranked.prev, optional=True).points),
)
tags = pw.debug.table_from_rows(
    pw.schema_from_types(player=str, tags=str),
    [(f"p{i}", ",".join(f"t{j}" for j in range(i % 4 + 1))) for i in range(40)],
)
split = tags.select(tags.player, tag=pw.apply_with_type(lambda s: s.split(","), list[str], tags.tags))
flat = split.flatten(split.tag)
per_tag = flat.groupby(flat.tag).reduce(flat.tag, n=pw.reducers.count())
pw.debug.compute_and_print(with_prev.filter(with_prev.points > 90), include_id=False)
pw.debug.compute_and_print(per_tag, include_id=False)
