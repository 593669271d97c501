"""Promises about ids that the data breaks: a join taking one side's ids while a row of
that side matches several rows, ``update_rows``/``update_cells`` of repeated ids or of
rows that do not exist, ``restrict`` by ids the table lacks.

By default the step fails with a ``KeyError`` naming the key; with
``terminate_on_error=False`` the rows at fault become Error values (or are dropped) and
the error log says why.  Expected rows and messages were recorded by running the same
programs with Pathway 0.33 (the oracle); only the text of the keys differs (sparkway's
ids are its own).
"""

from __future__ import annotations

import re

import pytest

import sparkway as pw
from sparkway.engine.expressions import python_pointer_of

pytestmark = pytest.mark.usefixtures("spark")

DUPLICATE = "duplicate key ^{k}: two rows with the same id reached an operation that needs unique ids"
MISSING = "exists in the universe (the table providing the ids) but not in the table restricted to it"


def key(label: int) -> str:
    """The text of the id of a markdown row labelled ``label`` (or of the row of ``a =
    label`` in ``with_id_from(pw.this.a)``), as messages write it."""
    return f"{python_pointer_of((label,)) & 0xFFFFFFFFFFFFFFFF:016X}"


def outcome(table: pw.Table) -> tuple[list[tuple], list[str]]:
    """The rows of ``table`` as text (Error values as "Error") and the messages of the
    global error log, from a run keeping Error values."""
    rows: dict[int, tuple] = {}
    messages: list[str] = []
    shown = table.select(**{c: pw.fill_error(pw.apply(str, pw.this[c]), "Error") for c in table.column_names()})

    def on_row(key, row, time, is_addition) -> None:
        if is_addition:
            rows[int(key)] = tuple(row.values())
        else:
            rows.pop(int(key), None)

    pw.io.subscribe(shown, on_change=on_row)
    pw.io.subscribe(pw.global_error_log(), on_change=lambda key, row, time, is_addition: messages.append(row["message"]))
    pw.run(terminate_on_error=False)
    return sorted(rows.values(), key=repr), messages


def sides() -> tuple[pw.Table, pw.Table]:
    left = pw.debug.table_from_markdown(
        """
          | col | on
        1 | a   | 11
        2 | b   | 12
        3 | c   | 13
        """
    )
    right = pw.debug.table_from_markdown(
        """
          | col | on
        0 | c   | 12
        1 | d   | 12
        2 | e   | 13
        3 | f   | 14
        """
    )
    return left, right


def test_a_join_taking_the_ids_of_a_side_whose_row_matches_twice_fails_naming_the_key() -> None:
    left, right = sides()
    joined = left.join(right, left.on == right.on, id=left.id).select(lcol=left.col, rcol=right.col)
    with pytest.raises(KeyError, match=re.escape(DUPLICATE.format(k=key(2)))):
        pw.debug.compute_and_print(joined)


def test_a_join_taking_unique_ids_of_a_side_runs() -> None:
    left, right = sides()
    joined = left.join(right, left.on == right.on, id=right.id).select(lcol=left.col, rcol=right.col)
    assert outcome(joined) == ([("b", "c"), ("b", "d"), ("c", "e")], [])


def test_keeping_errors_a_repeated_join_id_keeps_one_row_with_the_other_side_as_errors() -> None:
    left, right = sides()
    joined = left.join(right, left.on == right.on, id=left.id).select(lcol=left.col, rcol=right.col)
    rows, messages = outcome(joined)
    assert rows == [("b", "Error"), ("c", "e")]
    assert [m.startswith(DUPLICATE.format(k=key(2))) for m in messages] == [True]


def test_a_left_join_keeping_the_left_ids_marks_the_repeated_ones_only() -> None:
    t1 = pw.debug.table_from_markdown("a\n1\n2\n3")
    t2 = pw.debug.table_from_markdown("b\n1\n1\n1\n2")
    res = t1.join_left(t2, pw.left.a == pw.right.b, id=pw.left.id).select(pw.left.a, pw.right.b)
    rows, messages = outcome(res)
    assert rows == [("1", "Error"), ("2", "2"), ("3", "None")]
    assert len(messages) == 1 and messages[0].startswith("duplicate key ^")


def by_value(values: str) -> pw.Table:
    return pw.debug.table_from_markdown("a\n" + "\n".join(values.split())).with_id_from(pw.this.a)


def test_update_rows_with_a_repeated_id_fails_or_drops_the_id() -> None:
    with pytest.raises(KeyError, match=re.escape(DUPLICATE.format(k=key(1)))):
        pw.debug.compute_and_print(by_value("1 2 3").update_rows(by_value("1 1 2")))


def test_keeping_errors_update_rows_drops_a_repeated_id_and_logs_it() -> None:
    rows, messages = outcome(by_value("1 2 3").update_rows(by_value("1 1 2")))
    assert rows == [("2",), ("3",)]
    assert [m.startswith(DUPLICATE.format(k=key(1))) for m in messages] == [True]


def cells() -> tuple[pw.Table, pw.Table]:
    table = pw.debug.table_from_markdown(
        """
          | a | b
        1 | 1 | 1
        2 | 2 | 1
        5 | 9 | 1
        """
    )
    update = pw.debug.table_from_markdown(
        """
          | a
        1 | 10
        2 | 20
        2 | 30
        6 | 90
        """
    )
    pw.universes.promise_is_subset_of(update, table)
    return table, update


def test_update_cells_of_a_row_that_does_not_exist_fails() -> None:
    table, update = cells()
    with pytest.raises(KeyError, match=re.escape(f"updating a row that does not exist, key: ^{key(6)}")):
        pw.debug.compute_and_print(table.update_cells(update.filter(pw.this.a != 30)))


def test_keeping_errors_update_cells_ignores_a_missing_row_and_makes_a_repeated_one_errors() -> None:
    table, update = cells()
    rows, messages = outcome(table.update_cells(update))
    assert rows == [("10", "1"), ("9", "1"), ("Error", "Error")]
    assert sorted(m.split(":")[0] for m in messages) == [
        f"duplicate key ^{key(2)}", "updating a row that does not exist, key",
    ]
    assert f"updating a row that does not exist, key: ^{key(6)}" in messages


def restricted() -> tuple[pw.Table, pw.Table]:
    t1 = pw.debug.table_from_markdown(
        """
          | a
        1 | 6
        2 | 5
        """
    )
    t2 = pw.debug.table_from_markdown(
        """
          | c
        2 | 2
        3 | 3
        """
    )
    pw.universes.promise_is_subset_of(t2, t1)
    return t1, t2


def test_restrict_by_an_id_the_table_lacks_fails_naming_the_key() -> None:
    t1, t2 = restricted()
    with pytest.raises(KeyError, match=re.escape(f"key ^{key(3)} {MISSING}")):
        pw.debug.compute_and_print(t1.restrict(t2))


def test_keeping_errors_restrict_gives_error_values_for_an_id_the_table_lacks() -> None:
    t1, t2 = restricted()
    rows, messages = outcome(t1.restrict(t2))
    assert rows == [("5",), ("Error",)]
    assert [m.startswith(f"key ^{key(3)} {MISSING}") for m in messages] == [True]


def intersecting() -> pw.Table:
    t1 = pw.debug.table_from_markdown(
        """
          | lower | upper
        1 | a     | A
        2 | b     | B
        """
    )
    t2 = pw.debug.table_from_markdown(
        """
          | lower | upper
        1 | c     | C
        """
    )
    pw.universes.promise_are_pairwise_disjoint(t1, t2)
    return pw.Table.concat(t1, t2)


def test_printing_a_concat_whose_ids_meet_fails_naming_the_key() -> None:
    with pytest.raises(KeyError, match=re.escape(f"duplicated entries for key ^{key(1)}")):
        pw.debug.compute_and_print(intersecting())


def test_keeping_errors_a_repeated_id_prints_as_one_row_of_errors_with_a_warning(capsys: pytest.CaptureFixture) -> None:
    t = pw.debug.table_from_markdown("a | b\n1 | 3\n2 | 4\n3 | 5\n3 | 6").with_id_from(pw.this.a)
    capsys.readouterr()
    with pytest.warns(UserWarning, match=re.escape(f"duplicated entries for key ^{key(3)}")):
        pw.debug.compute_and_print(t, include_id=False, terminate_on_error=False)
    assert capsys.readouterr().out.splitlines() == ["a     | b", "1     | 3", "2     | 4", "Error | Error"]
