"""Which operators, reducers and methods take which column types, and the type of the
result, or the error when the program is built: every binary operator over every pair of
scalar types, the unary ones, sum/avg/ndarray (also over an optional int), .str/.num
methods, if_else's and filter's conditions.  (Columns that may be None:
type_rules_of_optional_operands.py.)"""

import datetime
import operator
import re

import pathway as pw

BINARY = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "//": operator.floordiv,
    "%": operator.mod, "**": operator.pow, "&": operator.and_, "|": operator.or_, "^": operator.xor,
    "<<": operator.lshift, ">>": operator.rshift, "==": operator.eq, "!=": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}
UNARY = {"-": operator.neg, "~": operator.invert, "abs": abs}
METHODS = {
    "str.lower": lambda c: c.str.lower(), "str.len": lambda c: c.str.len(), "num.abs": lambda c: c.num.abs(),
    "num.round": lambda c: c.num.round(), "if_else": lambda c: pw.if_else(c, 1, 2),
}


def _typed(value, kind, column):
    return pw.apply_with_type(lambda _: value, kind, column)


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
    t = pw.debug.table_from_markdown("i | f   | s | b\n1 | 1.5 | x | True")
    t = t.select(
        i=pw.this.i, f=pw.this.f, s=pw.this.s, b=pw.this.b,
        y=_typed(b"x", bytes, pw.this.i),
        dn=_typed(datetime.datetime(2020, 1, 1), pw.DateTimeNaive, pw.this.i),
        du=_typed(datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc), pw.DateTimeUtc, pw.this.i),
        d=_typed(datetime.timedelta(seconds=1), pw.Duration, pw.this.i),
        oi=_typed(1, int | None, pw.this.i),
        ob=_typed(True, bool | None, pw.this.i),
    )
    columns = ["i", "f", "s", "b", "y", "dn", "du", "d"]
    for name, op in BINARY.items():
        for a in columns:
            for b in columns:
                print(f"{a} {name} {b}: {_try(lambda: t.select(r=op(t[a], t[b])).typehints()['r'])}")
    for name, op in {**UNARY, **METHODS}.items():
        for a in columns:
            print(f"{name} {a}: {_try(lambda: t.select(r=op(t[a])).typehints()['r'])}")
    for name in ("sum", "avg", "ndarray", "min", "count_distinct"):
        for a in [*columns, "oi"]:
            said = _try(lambda: t.reduce(r=getattr(pw.reducers, name)(t[a])).typehints()["r"])
            print(f"reducers.{name} {a}: {'an array' if said.startswith(('numpy.ndarray', 'ndarray')) else said}")
    for a in columns:
        print(f"filter {a}: {_try(lambda: t.filter(t[a]).typehints()['i'])}")
