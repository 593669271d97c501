"""CSV chunks read column by column (pyarrow.csv) give the rows the csv module gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sparkway.connectors.formats.csv import CsvParserSettings, _module_rows, _plain_rows, parse_csv
from sparkway.core.columns import Column
from sparkway.core.dtypes import BOOL, FLOAT, INT, STR

COLUMNS = {
    "s": Column("s", STR),
    "i": Column("i", INT),
    "f": Column("f", FLOAT),
    "b": Column("b", BOOL),
    "o": Column("o", INT.with_optional(True)),
}
HEADER = list(COLUMNS)
FOUND = {name: i for i, name in enumerate(HEADER)}

# texts that fit each column, and (less often) any text, some of them not plain
anything = st.one_of(
    st.sampled_from(["", "0", "+5", "007", "1e3", "nan", "true", "None", "x", "é", " 1", "9223372036854775808",
                     "a,b", '"q"', "\r", "#c", "a\n\nb", "\ufeff"]),
    st.text(st.characters(codec="utf-8"), max_size=4),
)
ints = st.integers(-(2**63), 2**63 - 1).map(str)
fitting = {
    "s": st.text(st.characters(codec="utf-8", blacklist_characters=',"\r\n\0#\ufeff'), max_size=5),
    "i": ints,
    "f": st.floats(allow_nan=False).map(repr),
    "b": st.sampled_from(["true", "false", "True", "False"]),
    "o": st.one_of(st.just(""), st.just("None"), ints),
}
plain_records = st.lists(st.tuples(*fitting.values()).map(",".join), min_size=1, max_size=5)
any_records = st.lists(
    st.tuples(*[st.one_of(fit, anything) for fit in fitting.values()]).map(",".join), min_size=1, max_size=4,
)


def as_lists(parsed) -> tuple:
    columns = {n: (v.to_pylist() if hasattr(v, "to_pylist") else list(v)) for n, v in parsed.columns.items()}
    return parsed.ordinals, repr(columns)


@settings(max_examples=300, deadline=None)
@given(plain_records, st.booleans(), st.sampled_from(["\n", "\n\n"]))
def test_a_chunk_of_fitting_values_is_read_as_the_csv_module_reads_it(lines, final_newline, separator) -> None:
    data = (separator.join(lines) + ("\n" if final_newline else "")).encode()
    read = parse_csv(data, path="a.csv", first_line=2, header=HEADER, columns=COLUMNS)
    module = _module_rows(data, "a.csv", 2, len(HEADER), FOUND, COLUMNS, CsvParserSettings(), keep_errors=False)
    assert as_lists(read) == as_lists(module)
    if separator == "\n":  # without blank lines, column by column
        assert _plain_rows(data, 2, len(HEADER), FOUND, COLUMNS, CsvParserSettings()) is not None


@settings(max_examples=300, deadline=None)
@given(any_records, st.booleans(), st.sampled_from([None, "#"]))
def test_any_chunk_read_column_by_column_gives_the_rows_the_csv_module_gives(lines, final_newline, comment) -> None:
    data = ("\n".join(lines) + ("\n" if final_newline else "")).encode()
    options = CsvParserSettings(comment_character=comment)
    plain = _plain_rows(data, 2, len(HEADER), FOUND, COLUMNS, options)
    read = _module_rows(data, "a.csv", 2, len(HEADER), FOUND, COLUMNS, options, keep_errors=False)
    if plain is not None:
        assert as_lists(plain) == as_lists(read)
        assert read.skipped == 0


def test_every_value_of_a_plain_chunk_is_read_without_the_csv_module() -> None:
    data = b"ann,1,2.5,true,\nbob,-2,nan,false,7\n"
    plain = _plain_rows(data, 5, len(HEADER), FOUND, COLUMNS, CsvParserSettings())
    assert plain is not None and plain.ordinals == [5, 6]
    assert plain.columns["s"].to_pylist() == ["ann", "bob"] and plain.columns["i"].to_pylist() == [1, -2]
    assert plain.columns["o"] == [None, 7]


def test_a_chunk_with_a_bad_value_is_left_to_the_csv_module_which_names_it(caplog) -> None:
    data = b"ann,1,2.5,true,\nbob,x,1.0,false,7\n"
    assert _plain_rows(data, 2, len(HEADER), FOUND, COLUMNS, CsvParserSettings()) is None
    parsed = parse_csv(data, path="a.csv", first_line=2, header=HEADER, columns=COLUMNS)
    assert parsed.ordinals == [2] and parsed.skipped == 1
    assert "a.csv:3:5" in caplog.text
