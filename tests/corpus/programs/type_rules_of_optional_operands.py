"""Operators, methods and conditions over columns that may be None: refused when the
program is built (but ``==`` and ``!=``), unless ``pw.require``, ``if_else`` on
``is_not_none()``, ``coalesce`` or ``unwrap`` takes the None out; in a left, right or
outer join's select, a side that may be missing has optional columns, which
``pw.require(..., pw.right.id)`` makes whole again."""

import operator
import re

import pathway as pw

BINARY = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "//": operator.floordiv,
    "%": operator.mod, "**": operator.pow, "&": operator.and_, "|": operator.or_, "==": operator.eq,
    "!=": operator.ne, "<": operator.lt, ">=": operator.ge,
}
UNARY = {
    "-": operator.neg, "~": operator.invert, "abs": abs, "str.upper": lambda c: c.str.upper(),
    "str.parse_int": lambda c: c.str.parse_int(), "num.round": lambda c: c.num.round(),
    "num.fill_na": lambda c: c.num.fill_na(0), "to_string": lambda c: c.to_string(),
    "is_none": lambda c: c.is_none(), "if_else": lambda c: pw.if_else(c, 1, 2),
}


def _said(outcome) -> str:
    """A type or an error, without module paths; an error's first sentence only."""
    text = str(outcome) if not isinstance(outcome, Exception) else (
        f"{type(outcome).__name__.removeprefix('Plan')}: {re.split(r'(?<=[.]) ', str(outcome).splitlines()[0])[0]}"
    )
    return re.sub(r"<class '(?:[\w.]+\.)?(\w+)'>", r"\1", text)


def _try(build) -> str:
    try:
        return _said(build())
    except (TypeError, AttributeError) as error:
        return _said(error)


def run(workdir, step):
    t = pw.debug.table_from_markdown("""
    i | f   | s | b    | oi | of  | os | ob
    1 | 1.5 | x | True | 2  | 2.5 | y  | False
    3 | 3.5 | z | True |    |     |    |
    """)
    pairs = [("oi", "i"), ("i", "oi"), ("oi", "oi"), ("of", "f"), ("os", "s"), ("ob", "b"), ("oi", "f")]
    for name, op in BINARY.items():
        for a, b in pairs:
            print(f"{a} {name} {b}: {_try(lambda: t.select(r=op(t[a], t[b])).typehints()['r'])}")
    for name, op in UNARY.items():
        for a in ("oi", "of", "os", "ob"):
            print(f"{name} {a}: {_try(lambda: t.select(r=op(t[a])).typehints()['r'])}")
    for a in ("ob", "b"):
        print(f"filter {a}: {_try(lambda: t.filter(t[a]).typehints()['i'])}")
    narrowed = {
        "require": t.select(r=pw.require(t.oi + 1, t.oi)),
        "if_else is_not_none": t.select(r=pw.if_else(t.oi.is_not_none(), t.oi + 1, 0)),
        "if_else is_none": t.select(r=pw.if_else(t.oi.is_none(), 0, t.oi * 2)),
        "coalesce": t.select(r=pw.coalesce(t.oi, 0) + 1),
        "unwrap": t.filter(t.i == 1).select(r=pw.unwrap(pw.this.oi) - 1),
    }
    for name, table in narrowed.items():
        print(f"{name}: {table.typehints()['r']}")
        pw.debug.compute_and_print(table, include_id=False)

    left = pw.debug.table_from_markdown("k | a\n1 | 10\n2 | 20")
    right = pw.debug.table_from_markdown("k | b\n1 | 5\n3 | 7")
    for how in ("join_left", "join_right", "join_outer"):
        joined = getattr(left, how)(right, pw.left.k == pw.right.k)
        for name, build in {
            "right.b + 1": lambda: joined.select(r=pw.right.b + 1),
            "left.a + 1": lambda: joined.select(r=pw.left.a + 1),
            "left.a * right.b": lambda: joined.select(r=pw.left.a * pw.right.b),
            "right.b": lambda: joined.select(r=pw.right.b),
        }.items():
            print(f"{how} {name}: {_try(lambda: build().typehints()['r'])}")
        whole = joined.select(r=pw.require(pw.left.a + pw.right.b, pw.left.id, pw.right.id))
        print(f"{how} require(left.a + right.b, left.id, right.id): {whole.typehints()['r']}")
        pw.debug.compute_and_print(whole, include_id=False)
