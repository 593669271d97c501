"""Error values: with ``terminate_on_error=False`` a value that breaks an operation becomes
an Error value in its cell (the row stays), ``pw.fill_error`` replaces it,
``remove_errors`` drops its row, and the error logs list what failed.

Every expected output here was recorded by running the same program with Pathway 0.33
(the oracle), unless a comment says otherwise.
"""

from __future__ import annotations

import pytest

import sparkway as pw
from sparkway.api import graph

pytestmark = pytest.mark.usefixtures("spark")


def printed(table: pw.Table, capsys: pytest.CaptureFixture) -> list[str]:
    """The lines ``compute_and_print`` prints for ``table`` (no ids), keeping Errors."""
    capsys.readouterr()
    pw.debug.compute_and_print(table, include_id=False, terminate_on_error=False)
    return capsys.readouterr().out.splitlines()


def logged(log: pw.Table) -> list[tuple[str, str]]:
    """Subscribes to an error log: its (message, source line) rows, filled by ``pw.run``."""
    rows: list[tuple[str, str]] = []

    def on_change(key, row, time, is_addition) -> None:
        line = row["trace"].splitlines()[1].strip()
        rows.append((row["message"], line.removeprefix("Line: ")))

    pw.io.subscribe(log, on_change=on_change)
    return rows


def numbers() -> pw.Table:
    return pw.debug.table_from_markdown(
        """
        a | b | c
        3 | 3 | 1
        4 | 0 | 2
        5 | 5 | 0
        6 | 2 | 3
        """
    )


def test_a_division_by_zero_is_an_error_value_in_its_cell_only(capsys: pytest.CaptureFixture) -> None:
    t = numbers().select(pw.this.a, x=pw.this.a // pw.this.b, y=pw.this.a / pw.this.c, s=pw.this.a % pw.this.b)
    assert printed(t, capsys) == [
        "a | x     | y     | s",
        "3 | 1     | 3.0   | 0",
        "4 | Error | 2.0   | Error",
        "5 | 1     | Error | 0",
        "6 | 3     | 2.0   | 0",
    ]


def test_errors_propagate_through_expressions_except_untaken_branches_and_fill_error(
    capsys: pytest.CaptureFixture,
) -> None:
    t = numbers().select(pw.this.a, x=pw.this.a // pw.this.b)
    t = t.select(
        pw.this.a,
        x2=pw.this.x + 1,
        cmp=pw.this.x > 0,
        eq=pw.this.x == 1,
        isn=pw.this.x.is_none(),
        coal=pw.coalesce(pw.this.x, 7),
        ife=pw.if_else(pw.this.a > 4, pw.this.x, 0),
        fe=pw.fill_error(pw.this.x, -1),
    )
    assert printed(t, capsys) == [
        "a | x2    | cmp   | eq    | isn   | coal  | ife | fe",
        "3 | 2     | True  | True  | False | 1     | 0   | 1",
        "4 | Error | Error | Error | Error | Error | 0   | -1",
        "5 | 2     | True  | True  | False | 1     | 1   | 1",
        "6 | 4     | True  | False | False | 3     | 3   | 3",
    ]


def test_fill_error_takes_the_common_type_of_its_arguments(capsys: pytest.CaptureFixture) -> None:
    t = pw.debug.table_from_markdown("a | b\n3 | 3\n4 | 0")
    t = t.select(fe=pw.fill_error(pw.this.a // pw.this.b, 1.5), kept=pw.fill_error(pw.this.a, pw.this.a // pw.this.b))
    assert str(t.schema._dtypes()["fe"]) == "float" and str(t.schema._dtypes()["kept"]) == "int"
    assert printed(t, capsys) == ["fe  | kept", "1.0 | 3", "1.5 | 4"]


def test_remove_errors_drops_the_rows_with_an_error_in_any_column(capsys: pytest.CaptureFixture) -> None:
    t1 = numbers()
    t2 = t1.select(x=pw.this.a // pw.this.b)
    t3 = t1.select(y=pw.this.a // pw.this.c)
    result = t1.select(pw.this.a, x=t2.x, y=t3.y).remove_errors()
    assert printed(result, capsys) == ["a | x | y", "3 | 1 | 3", "6 | 3 | 2"]


def test_the_global_error_log_names_the_message_and_the_line_that_built_the_operator() -> None:
    t1 = numbers()
    t2 = t1.select(x=pw.this.a // pw.this.b)
    t3 = t1.select(y=pw.this.a // pw.this.c)
    result = t1.select(pw.this.a, x=pw.fill_error(t2.x, -1), y=pw.fill_error(t3.y, -1))
    rows: list[dict] = []
    pw.io.subscribe(result, on_change=lambda key, row, time, is_addition: rows.append(row))
    errors = logged(pw.global_error_log())
    pw.run(terminate_on_error=False)
    assert sorted((r["a"], r["x"], r["y"]) for r in rows) == [(3, 1, 3), (4, -1, 2), (5, 1, -1), (6, 3, 2)]
    assert sorted(errors) == [
        ("division by zero", "t2 = t1.select(x=pw.this.a // pw.this.b)"),
        ("division by zero", "t3 = t1.select(y=pw.this.a // pw.this.c)"),
    ]


def test_a_filter_skips_a_row_whose_condition_is_an_error_and_logs_it() -> None:
    t1 = numbers()
    t2 = t1.with_columns(x=pw.this.a // pw.this.b)
    res = t2.filter(pw.this.x > 0)
    rows: list[int] = []
    pw.io.subscribe(res, on_change=lambda key, row, time, is_addition: rows.append(row["a"]))
    errors = logged(pw.global_error_log())
    pw.run(terminate_on_error=False)
    assert sorted(rows) == [3, 5, 6]
    assert sorted(errors) == [
        ("Error value encountered in filter condition, skipping the row", "res = t2.filter(pw.this.x > 0)"),
        ("division by zero", "t2 = t1.with_columns(x=pw.this.a // pw.this.b)"),
    ]


def test_outputs_skip_the_rows_with_errors_and_log_them() -> None:
    t = numbers().with_columns(x=pw.this.a // pw.this.b)
    rows: list[int] = []
    pw.io.subscribe(t, on_change=lambda key, row, time, is_addition: rows.append(row["a"]))
    errors = logged(pw.global_error_log())
    pw.run(terminate_on_error=False)
    assert sorted(rows) == [3, 5, 6]
    assert [m for m, _ in errors if "output" in m] == ["Error value encountered in output, skipping the row"]


def test_a_user_function_raising_a_parse_and_an_unwrap_are_errors_and_a_local_log_keeps_its_own(
    capsys: pytest.CaptureFixture,
) -> None:
    t = pw.debug.table_from_markdown("a | s | n\n3 | 1 | 1\n4 | x |")

    @pw.udf
    def boom(a: int) -> int:
        if a == 4:
            raise ValueError("bad four")
        return a

    with pw.local_error_log() as local:
        p = t.select(pi=pw.this.s.str.parse_int())
    r = t.select(pw.this.a, u=boom(pw.this.a), w=pw.unwrap(pw.this.n), pi=p.pi)
    out = r.select(pw.this.a, u=pw.fill_error(pw.this.u, -1), w=pw.fill_error(pw.this.w, -2), pi=pw.fill_error(pw.this.pi, -3))
    assert printed(out, capsys) == ["a | u  | w  | pi", "3 | 3  | 1  | 1", "4 | -1 | -2 | -3"]
    assert printed(r.remove_errors(), capsys) == ["a | u | w | pi", "3 | 3 | 1 | 1"]

    pw.io.subscribe(out, on_change=lambda **kwargs: None)
    global_errors = logged(pw.global_error_log())
    local_errors = logged(local)
    pw.run(terminate_on_error=False)
    line = "r = t.select(pw.this.a, u=boom(pw.this.a), w=pw.unwrap(pw.this.n), pi=p.pi)"
    assert sorted(global_errors) == [
        ("ValueError: bad four", line),
        ("value error: cannot unwrap a None value: pw.unwrap() requires a non-None value. Use pw.coalesce() "
         "to supply a default, or filter out the rows with None before unwrapping.", line),
    ]
    assert [m for m, _ in local_errors] == ['parse error: cannot parse "x" to int: invalid digit found in string']


def test_by_default_an_error_still_stops_the_run() -> None:
    # not from the oracle: the default is terminate_on_error=True, as documented by Pathway
    t = numbers().select(x=pw.fill_error(pw.this.a // pw.this.b, -1))
    with pytest.raises(ZeroDivisionError):
        pw.debug.compute_and_print(t)


def test_a_join_skips_a_row_whose_key_is_an_error_but_an_outer_side_keeps_it_unmatched(
    capsys: pytest.CaptureFixture,
) -> None:
    t1 = pw.debug.table_from_markdown("a | c\n1 | 1\n2 | 0\n3 | 1").with_columns(a=pw.this.a // pw.this.c)
    t2 = pw.debug.table_from_markdown("b\n1\n1\n1\n2")
    left = t1.join_left(t2, pw.left.a == pw.right.b)
    left = left.select(a=pw.fill_error(pw.left.a, -1), c=pw.left.c, b=pw.right.b)
    inner = t1.join(t2, pw.left.a == pw.right.b).select(pw.left.a, pw.left.c, pw.right.b)
    matched = ["1  | 1 | 1"] * 3
    assert printed(left, capsys) == ["a  | c | b", "-1 | 0 |", *matched, "3  | 1 |"]
    assert printed(inner, capsys) == ["a | c | b", *["1 | 1 | 1"] * 3]


def test_a_reducer_failing_for_a_group_makes_its_aggregate_an_error() -> None:
    @pw.reducers.stateful_single
    def stateful_sum(state: int | None, val: int) -> int:
        if val == 2:
            raise ValueError("Value 2 encountered")
        return val if state is None else state + val

    t = pw.debug.table_from_markdown("a | b\n1 | 1\n2 | 2\n1 | 3\n2 | 4\n1 | 5")
    res = t.groupby(pw.this.a).reduce(
        pw.this.a,
        b=pw.fill_error(stateful_sum(pw.this.b), -1),
        u=pw.fill_error(pw.reducers.unique(pw.this.a), -1),
        u2=pw.fill_error(pw.reducers.unique(pw.this.b), -1),
    )
    rows: list[tuple] = []
    pw.io.subscribe(res, on_change=lambda key, row, time, is_addition: rows.append(tuple(row.values())))
    errors = logged(pw.global_error_log())
    pw.run(terminate_on_error=False)
    assert sorted(rows) == [(1, 9, 1, -1), (2, -1, 2, -1)]
    assert sorted(m for m, _ in errors) == [
        "More than one distinct value passed to the unique reducer: Int(1), Int(3)",
        "More than one distinct value passed to the unique reducer: Int(2), Int(4)",
        "ValueError: Value 2 encountered",
    ]


def test_reducers_skip_error_arguments_unless_skip_errors_is_false() -> None:
    # Pathway's rule (its test_groupby_propagate_errors): with _skip_errors=False, an
    # aggregate over an Error argument is an Error, here filled with -1; count is not one.
    # x is an Error where b is 0 (a=4), y where c is 0 (a=5); min reads x as sum does.
    t = numbers().select(g=pw.this.a % 2, x=pw.this.a // pw.this.b, y=pw.this.a / pw.this.c)

    def reduced(**skip: bool) -> list[tuple]:
        res = t.groupby(pw.this.g, **skip).reduce(
            pw.this.g,
            sx=pw.fill_error(pw.reducers.sum(pw.this.x), -1),
            mx=pw.fill_error(pw.reducers.min(pw.this.x), -1),
            sy=pw.fill_error(pw.reducers.sum(pw.this.y), -1),
            n=pw.reducers.count(),
        )
        rows: list[tuple] = []
        pw.io.subscribe(res, on_change=lambda key, row, time, is_addition: rows.append(tuple(row.values())))
        pw.run(terminate_on_error=False)
        return sorted(rows)

    assert reduced(_skip_errors=False) == [(0, -1, -1, 4.0, 2), (1, 2, 1, -1.0, 2)]
    assert reduced() == [(0, 3, 3, 4.0, 2), (1, 2, 1, 3.0, 2)]


# -- input connectors: a value that does not fit its column ------------------------------
# (messages and rows recorded with Pathway 0.33.0, from its own tests' programs)

def _messages(log: pw.Table) -> list[str]:
    rows: list[str] = []
    pw.io.subscribe(log, on_change=lambda key, row, time, is_addition: rows.append(row["message"]))
    return rows


def _final(table: pw.Table) -> list[tuple]:
    rows: dict = {}

    def on_change(key, row, time, is_addition) -> None:
        if is_addition:
            rows[key] = tuple(row.values())
        else:
            rows.pop(key, None)

    pw.io.subscribe(table, on_change=on_change)
    return rows  # type: ignore[return-value]


def test_a_csv_field_that_does_not_parse_is_an_error_value_and_a_bad_key_skips_its_row(tmp_path) -> None:
    path = tmp_path / "in.csv"
    path.write_text("a,b,c\n1,2,3\n2,x,3\n1,3,y\n6,z,t\n")

    def read(key: bool) -> pw.Table:
        class S(pw.Schema):
            a: int = pw.column_definition(primary_key=key)
            b: int = pw.column_definition(primary_key=key)
            c: int

        t = pw.io.csv.read(path, schema=S, mode="static")
        return t.with_columns(b=pw.fill_error(pw.this.b, 0), c=pw.fill_error(pw.this.c, 0))

    def bad(text: str, field: str) -> str:
        return (f'failed to parse value "{text}" at field "{field}" according to the type int in schema: '
                "invalid digit found in string")

    rows, messages = _final(read(False)), _messages(pw.global_error_log())
    pw.run(terminate_on_error=False)
    assert sorted(rows.values()) == [(1, 2, 3), (1, 3, 0), (2, 0, 3), (6, 0, 0)]
    assert sorted(messages) == sorted([bad("x", "b"), bad("y", "c"), bad("z", "b"), bad("t", "c")])

    graph.clear()
    rows, messages = _final(read(True)), _messages(pw.global_error_log())
    pw.run(terminate_on_error=False)
    assert sorted(rows.values()) == [(1, 2, 3), (1, 3, 0)]
    skipped = "error in primary key, skipping the row: "
    assert sorted(messages) == sorted([skipped + bad("x", "b"), bad("y", "c"), skipped + bad("z", "b")])


def test_a_json_value_of_another_type_is_an_error_value(tmp_path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text('{"a": 1, "b": 2, "c": 3}\n{"a": 2, "b": "x", "c": 3}\n{"a": 6, "b": "1", "c": "t"}\n'
                    '{"a": 7, "b": 1, "c": null}\n')

    class S(pw.Schema):
        a: int
        b: int
        c: int | None

    t = pw.io.jsonlines.read(path, schema=S, mode="static")
    rows = _final(t.with_columns(b=pw.fill_error(pw.this.b, 0), c=pw.fill_error(pw.this.c, 0)))
    messages = _messages(pw.global_error_log())
    pw.run(terminate_on_error=False)
    assert sorted(rows.values(), key=repr) == sorted([(1, 2, 3), (2, 0, 3), (6, 0, 0), (7, 1, None)], key=repr)
    assert sorted(messages) == sorted([
        'failed to create a field "b" with type int from json payload: "x"',
        'failed to create a field "b" with type int from json payload: "1"',
        'failed to create a field "c" with type int | None from json payload: "t"',
    ])


def test_a_python_subjects_value_of_another_type_is_an_error_value() -> None:
    import datetime

    class S(pw.Schema):
        a: int
        b: str
        when: pw.DateTimeNaive | None

    class Subject(pw.io.python.ConnectorSubject):
        def run(self) -> None:
            self.next(a=10, b="a")
            self.next(a=2.3, b="cdef")
            self.next(a=3, b=11, when=datetime.datetime(2025, 5, 1, tzinfo=datetime.timezone.utc))
            self.next(a=2)

    t = pw.io.python.read(Subject(), schema=S).select(
        a=pw.fill_error(pw.this.a, -1), b=pw.fill_error(pw.this.b, "e"), late=pw.this.when.is_none()
    )
    rows, messages = _final(t.select(pw.this.a, pw.this.b)), _messages(pw.global_error_log())
    pw.run(terminate_on_error=False)
    assert sorted(rows.values()) == [(-1, "cdef"), (2, "e"), (3, "e"), (10, "a")]
    assert sorted(messages) == sorted([
        'cannot create a field "a" with type int from value 2.3. Original error: TypeError: cannot create an '
        "object of type Int from value 2.3",
        'cannot create a field "b" with type str from value 11. Original error: TypeError: cannot create an '
        "object of type String from value 11",
        'cannot create a field "when" with type DateTimeNaive | None from value 2025-05-01 00:00:00+00:00. '
        "Original error: ValueError: cannot create DateTimeNaive from a datetime with timezone information. "
        "Pass a datetime without timezone information or change the type to DateTimeUtc",
        'no value for "b" field and no default specified',
    ])


def test_ix_of_a_missing_row_is_an_error_value_and_logged() -> None:
    # as Pathway 0.33.0's test_errors.py::test_ix: the row whose pointer names no row of
    # t2 gets an Error, the others their values
    t1 = pw.debug.table_from_markdown("  | a\n1 | 1\n2 | 3\n3 | 2").with_columns(ap=pw.this.pointer_from(pw.this.a))
    t2 = pw.debug.table_from_markdown("  | c\n1 | 10\n2 | 13")
    res = t1.select(pw.this.a, c=t2.ix(pw.this.ap).c)
    rows = _final(res.select(pw.this.a, c=pw.fill_error(res.c, -1)))
    messages = _messages(pw.global_error_log())
    pw.run(terminate_on_error=False)
    assert sorted(rows.values()) == [(1, 10), (2, 13), (3, -1)]
    assert len(messages) == 1 and "exists in the universe (the table providing the ids) but not in" in messages[0]
