"""CSV and JSON lines chunks read column by column (pyarrow.csv, pyarrow.json) give the
rows that the csv and json modules give, line by line."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from sparkway.connectors.formats import csv as csv_format
from sparkway.connectors.formats import jsonlines
from sparkway.core.columns import Column
from sparkway.core.dtypes import BOOL, FLOAT, INT, JSON, STR

COLUMNS = {
    "s": Column("s", STR),
    "i": Column("i", INT),
    "f": Column("f", FLOAT),
    "b": Column("b", BOOL),
    "o": Column("o", INT.with_optional(True)),
}
HEADER = list(COLUMNS)
FOUND = {name: i for i, name in enumerate(HEADER)}


def as_lists(parsed) -> tuple:
    columns = {n: (v.to_pylist() if hasattr(v, "to_pylist") else list(v)) for n, v in parsed.columns.items()}
    return parsed.ordinals, repr(columns)


# -- CSV ----------------------------------------------------------------------------------

# texts that fit each column, and (less often) any text, some of them not plain
csv_anything = st.one_of(
    st.sampled_from(["", "0", "+5", "007", "1e3", "nan", "true", "None", "x", "é", " 1", "9223372036854775808",
                     "a,b", '"q"', "\r", "#c", "a\n\nb", "\ufeff"]),
    st.text(st.characters(codec="utf-8"), max_size=4),
)
csv_ints = st.integers(-(2**63), 2**63 - 1).map(str)
csv_fitting = {
    "s": st.text(st.characters(codec="utf-8", blacklist_characters=',"\r\n\0#\ufeff'), max_size=5),
    "i": csv_ints,
    "f": st.floats(allow_nan=False).map(repr),
    "b": st.sampled_from(["true", "false", "True", "False"]),
    "o": st.one_of(st.just(""), st.just("None"), csv_ints),
}
csv_plain_records = st.lists(st.tuples(*csv_fitting.values()).map(",".join), min_size=1, max_size=5)
csv_any_records = st.lists(
    st.tuples(*[st.one_of(fit, csv_anything) for fit in csv_fitting.values()]).map(",".join), min_size=1, max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(csv_plain_records, st.booleans(), st.sampled_from(["\n", "\n\n"]))
def test_a_chunk_of_fitting_values_is_read_as_the_csv_module_reads_it(lines, final_newline, separator) -> None:
    data = (separator.join(lines) + ("\n" if final_newline else "")).encode()
    read = csv_format.parse_csv(data, path="a.csv", first_line=2, header=HEADER, columns=COLUMNS)
    options = csv_format.CsvParserSettings()
    module = csv_format._module_rows(data, "a.csv", 2, len(HEADER), FOUND, COLUMNS, options, keep_errors=False)
    assert as_lists(read) == as_lists(module)
    if separator == "\n":  # without blank lines, column by column
        assert csv_format._plain_rows(data, 2, len(HEADER), FOUND, COLUMNS, options) is not None


@settings(max_examples=300, deadline=None)
@given(csv_any_records, st.booleans(), st.sampled_from([None, "#"]))
def test_any_chunk_read_column_by_column_gives_the_rows_the_csv_module_gives(lines, final_newline, comment) -> None:
    data = ("\n".join(lines) + ("\n" if final_newline else "")).encode()
    options = csv_format.CsvParserSettings(comment_character=comment)
    plain = csv_format._plain_rows(data, 2, len(HEADER), FOUND, COLUMNS, options)
    read = csv_format._module_rows(data, "a.csv", 2, len(HEADER), FOUND, COLUMNS, options, keep_errors=False)
    if plain is not None:
        assert as_lists(plain) == as_lists(read)
        assert read.skipped == 0


def test_every_value_of_a_plain_chunk_is_read_without_the_csv_module() -> None:
    data = b"ann,1,2.5,true,\nbob,-2,nan,false,7\n"
    plain = csv_format._plain_rows(data, 5, len(HEADER), FOUND, COLUMNS, csv_format.CsvParserSettings())
    assert plain is not None and plain.ordinals == [5, 6]
    assert plain.columns["s"].to_pylist() == ["ann", "bob"] and plain.columns["i"].to_pylist() == [1, -2]
    assert plain.columns["o"] == [None, 7]


def test_a_chunk_with_a_bad_value_is_left_to_the_csv_module_which_names_it(caplog) -> None:
    data = b"ann,1,2.5,true,\nbob,x,1.0,false,7\n"
    assert csv_format._plain_rows(data, 2, len(HEADER), FOUND, COLUMNS, csv_format.CsvParserSettings()) is None
    parsed = csv_format.parse_csv(data, path="a.csv", first_line=2, header=HEADER, columns=COLUMNS)
    assert parsed.ordinals == [2] and parsed.skipped == 1
    assert "a.csv:3:5" in caplog.text


# -- JSON lines ---------------------------------------------------------------------------

# values that fit each column, and (less often) any JSON value
json_anything = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.text(max_size=3),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
json_fitting = {
    "s": st.text(max_size=5),
    "i": st.integers(-(2**63), 2**63 - 1),
    "f": st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-(2**53), 2**53)),
    "b": st.booleans(),
    "o": st.integers(-(2**63), 2**63 - 1),
}
json_extra = {"extra": json_anything, "i ": json_anything}  # keys of no column are ignored
json_plain_lines = st.lists(
    st.fixed_dictionaries(json_fitting, optional=json_extra).map(json.dumps), min_size=1, max_size=5,
)
json_any_rows = st.fixed_dictionaries(
    {name: st.one_of(fit, json_anything) for name, fit in json_fitting.items()}, optional=json_extra,
)
json_any_lines = st.lists(json_any_rows.map(json.dumps), min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(json_plain_lines, st.booleans(), st.sampled_from(["\n", "\n\n", "\n \t\n"]))
def test_a_chunk_of_fitting_values_is_read_as_the_json_module_reads_it(texts, final_newline, separator) -> None:
    data = (separator.join(texts) + ("\n" if final_newline else "")).encode()
    read = jsonlines.parse_json_lines(data, path="a.jsonl", first_line=3, columns=COLUMNS)
    assert as_lists(read) == as_lists(jsonlines._module_rows(data, "a.jsonl", 3, COLUMNS, keep_errors=False))
    if separator == "\n":  # without blank lines, column by column
        assert jsonlines._plain_rows(data, 3, COLUMNS) is not None


@settings(max_examples=300, deadline=None)
@given(json_any_lines, st.sampled_from(["\n", "\n  ", "\n\n", "\n \t\n", "\r\n"]))
def test_any_chunk_read_column_by_column_gives_the_rows_the_json_module_gives(texts, separator) -> None:
    data = (separator.join(texts) + "\n").encode()
    plain = jsonlines._plain_rows(data, 3, COLUMNS)
    read = jsonlines._module_rows(data, "a.jsonl", 3, COLUMNS, keep_errors=False)
    if plain is not None:
        assert as_lists(plain) == as_lists(read)
        assert read.skipped == 0


def test_every_value_of_a_plain_chunk_is_read_without_the_json_module() -> None:
    data = (b'{"s": "ann", "i": 1, "f": 2, "b": true, "o": 7, "x": [1]}\n'
            b'{"s": "", "i": -2, "f": 0.5, "b": false, "o": 0}\n')
    plain = jsonlines._plain_rows(data, 5, COLUMNS)
    assert plain is not None and plain.ordinals == [5, 6]
    assert {n: v.to_pylist() for n, v in plain.columns.items()} == {
        "s": ["ann", ""], "i": [1, -2], "f": [2.0, 0.5], "b": [True, False], "o": [7, 0],
    }


def test_a_chunk_with_a_missing_value_is_left_to_the_json_module_which_names_it(caplog) -> None:
    data = b'{"s": "a", "i": 1, "f": 2, "b": true, "o": null}\n{"s": "b", "f": 2, "b": true, "o": 1}\n'
    assert jsonlines._plain_rows(data, 1, COLUMNS) is None
    parsed = jsonlines.parse_json_lines(data, path="a.jsonl", first_line=1, columns=COLUMNS)
    assert parsed.ordinals == [1] and parsed.columns["o"] == [None] and parsed.skipped == 1
    assert "a.jsonl:2" in caplog.text


def test_a_column_of_another_type_is_read_by_the_json_module() -> None:
    assert jsonlines._plain_rows(b'{"j": {"a": 1}}\n', 1, {"j": Column("j", JSON)}) is None
