"""JSON lines chunks read column by column (pyarrow.json) give the rows the json module gives."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from sparkway.connectors.formats.jsonlines import _module_rows, _plain_rows, parse_json_lines
from sparkway.core.columns import Column
from sparkway.core.dtypes import BOOL, FLOAT, INT, JSON, STR

COLUMNS = {
    "s": Column("s", STR),
    "i": Column("i", INT),
    "f": Column("f", FLOAT),
    "b": Column("b", BOOL),
    "o": Column("o", INT.with_optional(True)),
}

# values that fit each column, and (less often) any JSON value
anything = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.text(max_size=3),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
fitting = {
    "s": st.text(max_size=5),
    "i": st.integers(-(2**63), 2**63 - 1),
    "f": st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-(2**53), 2**53)),
    "b": st.booleans(),
    "o": st.integers(-(2**63), 2**63 - 1),
}
extra = {"extra": anything, "i ": anything}  # keys of no column are ignored
plain_lines = st.lists(st.fixed_dictionaries(fitting, optional=extra).map(json.dumps), min_size=1, max_size=5)
any_lines = st.lists(
    st.fixed_dictionaries({name: st.one_of(fit, anything) for name, fit in fitting.items()}, optional=extra).map(json.dumps),
    min_size=1, max_size=4,
)


def as_lists(parsed) -> tuple:
    columns = {n: (v.to_pylist() if hasattr(v, "to_pylist") else list(v)) for n, v in parsed.columns.items()}
    return parsed.ordinals, repr(columns)


@settings(max_examples=300, deadline=None)
@given(plain_lines, st.booleans(), st.sampled_from(["\n", "\n\n", "\n \t\n"]))
def test_a_chunk_of_fitting_values_is_read_as_the_json_module_reads_it(texts, final_newline, separator) -> None:
    data = (separator.join(texts) + ("\n" if final_newline else "")).encode()
    read = parse_json_lines(data, path="a.jsonl", first_line=3, columns=COLUMNS)
    assert as_lists(read) == as_lists(_module_rows(data, "a.jsonl", 3, COLUMNS, keep_errors=False))
    if separator == "\n":  # without blank lines, column by column
        assert _plain_rows(data, 3, COLUMNS) is not None


@settings(max_examples=300, deadline=None)
@given(any_lines, st.sampled_from(["\n", "\n  ", "\n\n", "\n \t\n", "\r\n"]))
def test_any_chunk_read_column_by_column_gives_the_rows_the_json_module_gives(texts, separator) -> None:
    data = (separator.join(texts) + "\n").encode()
    plain = _plain_rows(data, 3, COLUMNS)
    read = _module_rows(data, "a.jsonl", 3, COLUMNS, keep_errors=False)
    if plain is not None:
        assert as_lists(plain) == as_lists(read)
        assert read.skipped == 0


def test_every_value_of_a_plain_chunk_is_read_without_the_json_module() -> None:
    data = b'{"s": "ann", "i": 1, "f": 2, "b": true, "o": 7, "x": [1]}\n{"s": "", "i": -2, "f": 0.5, "b": false, "o": 0}\n'
    plain = _plain_rows(data, 5, COLUMNS)
    assert plain is not None and plain.ordinals == [5, 6]
    assert {n: v.to_pylist() for n, v in plain.columns.items()} == {
        "s": ["ann", ""], "i": [1, -2], "f": [2.0, 0.5], "b": [True, False], "o": [7, 0],
    }


def test_a_chunk_with_a_missing_value_is_left_to_the_json_module_which_names_it(caplog) -> None:
    data = b'{"s": "a", "i": 1, "f": 2, "b": true, "o": null}\n{"s": "b", "f": 2, "b": true, "o": 1}\n'
    assert _plain_rows(data, 1, COLUMNS) is None
    parsed = parse_json_lines(data, path="a.jsonl", first_line=1, columns=COLUMNS)
    assert parsed.ordinals == [1] and parsed.columns["o"] == [None] and parsed.skipped == 1
    assert "a.jsonl:2" in caplog.text


def test_a_column_of_another_type_is_read_by_the_json_module() -> None:
    assert _plain_rows(b'{"j": {"a": 1}}\n', 1, {"j": Column("j", JSON)}) is None
