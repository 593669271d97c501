"""Events with JSON payloads and date-times: fields, parsing, rounding."""
import pathway as pw

events = pw.debug.table_from_rows(
    pw.schema_from_types(raw=str, at=str),
    [(f'{{"user": "u{i % 6}", "score": {i % 11}}}', f"2026-03-{1 + i % 28:02d} {i % 24:02d}:15:00") for i in range(120)],
)
parsed = events.select(
    payload=pw.apply_with_type(lambda s: __import__("json").loads(s), pw.Json, events.raw),
    at=events.at.dt.strptime("%Y-%m-%d %H:%M:%S"),
)
fields = parsed.select(
    user=parsed.payload["user"].as_str(),
    score=pw.unwrap(parsed.payload["score"].as_int()),
    day=parsed.at.dt.floor(pw.Duration(days=1)),
    hour=parsed.at.dt.hour(),
    label=parsed.at.dt.strftime("%d %b"),
)
per_user = fields.groupby(fields.user).reduce(
    fields.user, total=pw.reducers.sum(fields.score), first=pw.reducers.min(fields.day)
)
pw.debug.compute_and_print(per_user, include_id=False)
pw.debug.compute_and_print(fields.filter(fields.hour == 5).select(pw.this.user, pw.this.label), include_id=False)
