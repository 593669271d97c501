"""Row ids made from values: one function for all of them, so that
``t.pointer_from(<key>) == t.id`` wherever ``t``'s ids come from ``<key>``, as in Pathway."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from tables import frame_rows

import sparkway as pw

pytestmark = pytest.mark.usefixtures("spark")


def keyed_ids_match(table: pw.Table, *key: str) -> list[bool]:
    """Per row, whether its id is ``pointer_from`` of its key columns."""
    check = table.select(same=table.pointer_from(*(table[k] for k in key)) == table.id)
    return [row[0] for row in frame_rows(pw.debug.table_to_pandas(check)).values()]


class Keyed(pw.Schema):
    user: str = pw.column_definition(primary_key=True)
    n: int


class KeyedTwice(pw.Schema):
    user: str = pw.column_definition(primary_key=True)
    day: int = pw.column_definition(primary_key=True)
    n: int


def test_csv_rows_with_a_primary_key(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("user,n\nann,1\nbob,2\n")
    (tmp_path / "b.csv").write_text("n,user\n9,cid\n")
    assert keyed_ids_match(pw.io.csv.read(tmp_path, schema=Keyed, mode="static"), "user") == [True] * 3


def test_json_lines_rows_with_a_two_column_primary_key(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"user": "ann", "day": 1, "n": 5}\n{"user": "ann", "day": 2, "n": 6}\n')
    table = pw.io.jsonlines.read(tmp_path, schema=KeyedTwice, mode="static")
    assert keyed_ids_match(table, "user", "day") == [True, True]


def test_the_same_key_in_two_files_is_one_row_id(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.csv").write_text("user,n\nann,1\n")
    (tmp_path / "b" / "y.csv").write_text("user,n\nann,7\n")
    a = pw.io.csv.read(tmp_path / "a", schema=Keyed, mode="static")
    b = pw.io.csv.read(tmp_path / "b", schema=Keyed, mode="static")
    joined = a.join(b, a.id == b.id).select(a.user, left=a.n, right=b.n)
    assert list(frame_rows(pw.debug.table_to_pandas(joined)).values()) == [("ann", 1, 7)]


def test_python_subject_rows_with_a_primary_key() -> None:
    class Users(pw.io.python.ConnectorSubject):
        def run(self) -> None:
            self.next(user="ann", n=1)
            self.next(user="bob", n=2)

    assert keyed_ids_match(pw.io.python.read(Users(), schema=Keyed), "user") == [True, True]


def test_markdown_rows_get_the_ids_of_their_labels_positions_or_id_from_columns() -> None:
    labelled = pw.debug.table_from_markdown("""
        | k | v
      7 | 1 | a
      x | 2 | b
    """)
    # labels of mixed kinds are all text, as in Pathway: the first row's id is pointer_from("7")
    by_label = labelled.select(
        pw.this.k, is_7=labelled.id == labelled.pointer_from("7"), is_x=labelled.id == labelled.pointer_from("x")
    )
    assert sorted(frame_rows(pw.debug.table_to_pandas(by_label)).values()) == [(1, True, False), (2, False, True)]
    numbered = pw.debug.table_from_markdown("   | k\n 7 | 1\n 8 | 2")
    by_number = numbered.select(pw.this.k, is_7=numbered.id == numbered.pointer_from(7))
    assert sorted(frame_rows(pw.debug.table_to_pandas(by_number)).values()) == [(1, True), (2, False)]

    unlabelled = pw.debug.table_from_markdown("k\n5\n6")
    by_position = unlabelled.select(pw.this.k, first=unlabelled.id == unlabelled.pointer_from(0))
    assert sorted(frame_rows(pw.debug.table_to_pandas(by_position)).values()) == [(5, True), (6, False)]

    keyed = pw.debug.table_from_markdown("k | v\n1 | a\n2 | b", id_from=["k"])
    assert keyed_ids_match(keyed, "k") == [True, True]


def test_pandas_rows_get_the_ids_of_their_index_or_id_from_columns() -> None:
    frame = pd.DataFrame({"k": [1, 2]}, index=[10, 20])
    by_index = pw.debug.table_from_pandas(frame)
    check = by_index.select(pw.this.k, ten=by_index.id == by_index.pointer_from(10))
    assert sorted(frame_rows(pw.debug.table_to_pandas(check)).values()) == [(1, True), (2, False)]
    assert keyed_ids_match(pw.debug.table_from_pandas(frame, id_from=["k"]), "k") == [True, True]


def test_groupby_results_and_with_id_from_get_the_ids_of_their_keys() -> None:
    t = pw.debug.table_from_markdown("w | n\na | 1\na | 2\nb | 3")
    assert keyed_ids_match(t.groupby(t.w).reduce(t.w, total=pw.reducers.sum(t.n)), "w") == [True, True]
    assert keyed_ids_match(t.with_id_from(t.n), "n") == [True] * 3


def test_ix_by_pointer_from_finds_rows_of_a_primary_keyed_table(tmp_path: Path) -> None:
    (tmp_path / "users.csv").write_text("user,n\nann,1\nbob,2\n")
    users = pw.io.csv.read(tmp_path, schema=Keyed, mode="static")
    visits = pw.debug.table_from_markdown("who\nbob\nann\nbob")
    found = visits.select(visits.who, n=users.ix(users.pointer_from(visits.who)).n)
    assert sorted(frame_rows(pw.debug.table_to_pandas(found)).values()) == [("ann", 1), ("bob", 2), ("bob", 2)]


def test_ids_have_the_types_of_the_values_they_are_made_from():
    # as in Pathway 0.33 (types and messages recorded from it)
    words = pw.Table.empty(w=str, n=int)
    by_word = words.groupby(words.w).reduce(words.w, total=pw.reducers.sum(words.n))
    assert str(by_word.schema).splitlines()[1].startswith("Pointer(STR) |")
    assert str(words.with_id_from(words.n, words.w).schema).startswith("id                | w")
    assert "id_type=<class 'pathway.engine.Pointer'>" in repr(pw.debug.table_from_markdown("a\n1").schema)
    with pytest.raises(TypeError, match=r"Indexing a table with a Pointer type .* Type used was Pointer\(INT\)"):
        by_word.ix_ref(words.n)
    a, b = pw.Table.empty(p=pw.Pointer[int]), pw.Table.empty(p=pw.Pointer[str])
    with pytest.raises(TypeError, match=r"Incompatible types in a join condition.\nThe types are: Pointer\(INT\) and Pointer\(STR\)"):
        a.join(b, a.p == b.p)
    with pytest.raises(TypeError, match=r"The types are: \(Pointer\(INT\), Pointer\(STR\)\)"):
        words.update_id_type(pw.Pointer[int]).concat(words.update_id_type(pw.Pointer[str]))
    # ids of any origin meet typed ones
    assert a.join(pw.Table.empty(p=pw.Pointer), pw.left.p == pw.right.p).select(pw.left.p).column_names() == ["p"]


def test_concat_of_empty_tables_needs_no_promise_and_a_table_disjoint_from_itself_is_warned_about():
    assert pw.Table.empty(a=int).concat(pw.Table.empty(a=int)).column_names() == ["a"]
    t = pw.debug.table_from_markdown("a\n1")
    with pytest.warns(UserWarning, match="always empty"):
        t.promise_universes_are_disjoint(t)
