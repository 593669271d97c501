"""CSV input: the header, the records of a chunk, and where complete records end.

A chunk whose records are plain (no quotes, escapes, comments, carriage returns or blank
lines, every record as wide as the header, every value fitting its column) is split and
converted column by column by ``pyarrow.csv``, without Python per row.  Any other chunk
is split by the standard library's ``csv`` module, and this module finds where its
records are in the file, to name the line and column of a bad field.  Both give the same
rows.
"""

from __future__ import annotations

import csv
import io
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from sparkway.connectors.formats.values import (
    CONVERSION_ERRORS, ErrorCells, ParsedRows, RowError, SchemaMismatchError, SkippedRows, decode, parse_failure,
    pathway_type_name, position, split_lines, stored_default, text_parser, type_name,
)
from sparkway.core.columns import Column
from sparkway.core.dtypes import DType

log = logging.getLogger("sparkway")

# The csv module refuses fields over 128 KiB by default; a long text field in a log line
# is legitimate input, so lift the limit (it is process-wide, and only ever raised).
if csv.field_size_limit() < 2**31 - 1:
    csv.field_size_limit(2**31 - 1)


@dataclass(frozen=True)
class CsvParserSettings:
    """How CSV input is split into fields (``pw.io.csv.CsvParserSettings``).

    >>> settings = CsvParserSettings(delimiter=";", comment_character="#")
    >>> settings.dialect()["delimiter"]
    ';'
    """

    delimiter: str = ","
    quote: str = '"'
    escape: str | None = None
    enable_double_quote_escapes: bool = True
    enable_quoting: bool = True
    comment_character: str | None = None

    def dialect(self) -> dict[str, Any]:
        """Keyword arguments of ``csv.reader`` for these settings."""
        return {
            "delimiter": self.delimiter,
            "quotechar": self.quote if self.enable_quoting else None,
            "escapechar": self.escape,
            "doublequote": self.enable_double_quote_escapes,
            "quoting": csv.QUOTE_MINIMAL if self.enable_quoting else csv.QUOTE_NONE,
            "strict": False,
            "skipinitialspace": False,
        }


def _field_starts(record: str, settings: CsvParserSettings) -> list[int]:
    """Character offsets where the fields of one CSV record start.  Only used to point at
    a bad field; the rows themselves are split by the csv module."""
    starts = [0]
    quoting = settings.enable_quoting
    in_quotes = False
    i, n = 0, len(record)
    while i < n:
        c = record[i]
        if settings.escape is not None and c == settings.escape:
            i += 2
            continue
        if in_quotes:
            if c == settings.quote:
                doubled = i + 1 < n and record[i + 1] == settings.quote
                if settings.enable_double_quote_escapes and doubled:
                    i += 1
                else:
                    in_quotes = False
        elif c == settings.delimiter:
            starts.append(i + 1)
        elif quoting and c == settings.quote and i == starts[-1]:
            in_quotes = True
        i += 1
    return starts


@dataclass
class _Lines:
    """The lines fed to the csv reader, with the file line number of each."""

    text: list[str]
    numbers: list[int] | None  # None: consecutive from first_line
    first_line: int

    def number(self, index: int) -> int:
        if self.numbers is None:
            return self.first_line + index
        return self.numbers[index] if index < len(self.numbers) else self.first_line

    @classmethod
    def of(cls, text: str, first_line: int, settings: CsvParserSettings) -> "_Lines":
        lines = split_lines(text)
        comment = settings.comment_character
        if not comment:
            return cls(lines, None, first_line)
        kept = [(i, ln) for i, ln in enumerate(lines) if not ln.startswith(comment)]
        return cls([ln for _, ln in kept], [first_line + i for i, _ in kept], first_line)


def _csv_rows(
    lines: _Lines, settings: CsvParserSettings, width: int, skips: SkippedRows
) -> tuple[list[list[str]], list[int], list[int]]:
    """The records, cut to ``width`` fields, and the index of the first line of each and
    of the line after it; blank lines are skipped, records with fewer fields reported.

    Fields beyond the header's are ignored, as Pathway reads them (with a warning, once
    per chunk, so that they are not lost unnoticed)."""
    reader = csv.reader(lines.text, **settings.dialect())
    rows: list[list[str]] = []
    begins: list[int] = []
    ends: list[int] = []
    add_row, add_begin, add_end = rows.append, begins.append, ends.append  # hot loop
    prev = 0
    extra_reported = False
    while True:
        try:
            for fields in reader:
                begin, prev = prev, reader.line_num
                if len(fields) == width:
                    add_row(fields)
                    add_begin(begin)
                    add_end(prev)
                elif len(fields) > width:
                    if not extra_reported:
                        extra_reported = True
                        log.warning("%s:%d: %d fields where the header has %d: the fields after the %dth are "
                                    "ignored (also on later lines)", skips.path, lines.number(begin), len(fields),
                                    width, width)
                    add_row(fields[:width])
                    add_begin(begin)
                    add_end(prev)
                elif fields:
                    _report_width(lines, begin, prev, fields, width, skips)
            return rows, begins, ends
        except csv.Error as exc:
            begin, prev = prev, reader.line_num
            skips.row(lines.number(begin), 1, f"malformed CSV: {exc}")


def parse_csv_header(
    data: bytes, settings: CsvParserSettings | None = None, *, final: bool
) -> tuple[list[str], int, int] | None:
    """The header of a CSV file: (field names, byte offset after it, lines it took).
    None when the file holds no complete record yet (``final``: a last line without
    "\\n" counts as complete).  Blank and comment lines before the header are skipped.

    >>> parse_csv_header(b"user,t\\nbob,1\\n", final=False)
    (['user', 't'], 7, 1)
    """
    settings = settings or CsvParserSettings()
    ends: list[int] = []  # byte offset after each line fed to the reader
    reader = csv.reader(_header_lines(data, settings, final, ends), **settings.dialect())
    for fields in _safe_records(reader):
        if not fields:
            continue
        if ends[-1] == len(data) and not final and fields[-1].endswith("\n"):
            # the csv module ends an open quoted field at the end of the input, keeping
            # its newline: the header goes on in bytes not written yet
            return None
        end = ends[-1]
        return fields, end, data.count(b"\n", 0, end)
    return None


def _header_lines(
    data: bytes, settings: CsvParserSettings, final: bool, ends: list[int]
) -> Iterator[str]:
    """The complete lines at the start of ``data``, read lazily (the header is usually
    the first one), without comment lines; ``ends`` receives where each one ends."""
    comment = settings.comment_character
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl < 0 and not final:
            return
        end = len(data) if nl < 0 else nl + 1
        text = data[pos:end].decode("utf-8", errors="replace")
        if pos == 0:  # a byte-order mark (Excel's "CSV UTF-8") is no part of the header: it hid a quote
            text = text.removeprefix("\ufeff")
        pos = end
        if comment and text.startswith(comment):
            continue
        ends.append(end)
        yield text if text.endswith("\n") else text + "\n"


def _safe_records(reader: Any) -> Iterator[list[str]]:
    """The records of a csv reader, leaving out the malformed ones."""
    while True:
        try:
            yield from reader
            return
        except csv.Error:
            continue


def check_csv_header(path: str, header: list[str], columns: dict[str, Column]) -> dict[str, int]:
    """The field index of each schema column found in the header.  Raises
    ``SchemaMismatchError`` when a column with no default and not Optional is missing,
    or when the header names a schema column twice (which field is its value?)."""
    index: dict[str, int] = {}
    for i, name in enumerate(header):
        index.setdefault(name, i)
    twice = [c.input_name for c in columns.values() if header.count(c.input_name) > 1]
    if twice:
        raise SchemaMismatchError(
            f"{path}: the CSV header names column(s) {_quoted(twice)} more than once, so which field holds "
            f"the value is ambiguous; rename the extra one(s); header found: {_join_header(header)}"
        )
    found: dict[str, int] = {}
    missing: list[str] = []
    for name, column in columns.items():
        source = column.input_name
        if source in index:
            found[name] = index[source]
        elif not (column.has_default or column.dtype.optional):
            missing.append(source)
    if missing:
        raise SchemaMismatchError(
            f"{path}: the CSV header lacks column(s) {_quoted(missing)} required by the schema; "
            f"header found: {_join_header(header)}"
        )
    return found


def _quoted(names: list[str]) -> str:
    return ", ".join(f'"{name}"' for name in names)


def _join_header(header: list[str]) -> str:
    return ",".join(header) if header else "(empty)"


def parse_csv(
    data: bytes,
    *,
    path: str,
    first_line: int,
    header: list[str],
    columns: dict[str, Column],
    settings: CsvParserSettings | None = None,
    keep_errors: bool = False,
) -> ParsedRows:
    """Rows of a chunk of CSV data that follows the header (``first_line`` is the file
    line number of the chunk's first byte).  ``keep_errors``: a field that does not fit
    its column is an Error value (see ``ParsedRows``), not a skipped row.

    >>> from sparkway.core.dtypes import INT, STR
    >>> cols = {"user": Column("user", STR), "t": Column("t", INT)}
    >>> rows = parse_csv(b"bob,12\\n", path="a.csv", first_line=2, header=["user", "t"], columns=cols)
    >>> rows.ordinals, pa.table(rows.columns).to_pylist()
    ([2], [{'user': 'bob', 't': 12}])
    >>> rows = parse_csv(b"ann,x\\n", path="a.csv", first_line=2, header=["user", "t"], columns=cols,
    ...                  keep_errors=True)
    >>> rows.columns, rows.errors, rows.messages[2]
    ({'user': ['ann'], 't': [None]}, [['t']], ['failed to parse value "x" at field "t" according to the type int in schema: invalid digit found in string'])
    """
    settings = settings or CsvParserSettings()
    found = check_csv_header(path, header, columns)
    plain = None if keep_errors else _plain_rows(data, first_line, len(header), found, columns, settings)
    if plain is not None:
        return plain
    return _module_rows(data, path, first_line, len(header), found, columns, settings, keep_errors)


def _module_rows(
    data: bytes, path: str, first_line: int, width: int, found: dict[str, int], columns: dict[str, Column],
    settings: CsvParserSettings, keep_errors: bool,
) -> ParsedRows:
    """``parse_csv`` of any chunk, split by the ``csv`` module."""
    _warn_of_open_quote(data, path, first_line, settings)
    skips = SkippedRows(path)
    lines = _Lines.of(decode(data, path, first_line), first_line, settings)
    rows, begins, ends = _csv_rows(lines, settings, width, skips)
    values, bad = _convert_csv_columns(rows, found, columns)
    if lines.numbers is None:
        ordinals = [first_line + b for b in begins]
    else:
        ordinals = [lines.numbers[b] for b in begins]
    if keep_errors:
        skips.finish()
        cells = ErrorCells([name for name, c in columns.items() if c.primary_key])
        for i, failures in sorted(bad.items()):
            for _, name, text in failures:
                cells.add(i, name, f'failed to parse value "{text}" at field "{name}" according to the type '
                                   f"{pathway_type_name(columns[name].dtype)} in schema: "
                                   f"{parse_failure(text, columns[name].dtype)}")
        parsed = cells.apply(ordinals, values)
        parsed.skipped += skips.count
        return parsed
    for i, failures in sorted(bad.items()):
        field_index, name, text = min(failures)
        record = "".join(lines.text[begins[i] : ends[i]])
        offset = _field_starts(record, settings)[field_index]
        line, col = position(record, offset, lines.number(begins[i]))
        skips.row(line, col, _reason(text, columns[name].dtype), name)
    skips.finish()
    if bad:
        keep = [i for i in range(len(rows)) if i not in bad]
        ordinals = [ordinals[i] for i in keep]
        values = {n: [v[i] for i in keep] for n, v in values.items()}
    return ParsedRows(ordinals, values, skips.count)


def _warn_of_open_quote(data: bytes, path: str, first_line: int, settings: CsvParserSettings) -> None:
    """A warning when a quoted field of ``data`` is still open at its end.  Chunks end
    with complete records, so that is the end of the file: the field holds the rest of
    the file, and its row stands for all the lines after it, as Pathway reads it (without
    a word); the warning names the line where that record starts."""
    text = data if data.endswith(b"\n") else data + b"\n"
    complete = csv_complete_end(text, 0, len(text), settings)
    if complete < len(text):
        opened = first_line + text.count(b"\n", 0, complete)
        log.warning("%s:%d: a quoted field is not closed before the end of the file: its row holds the %d line(s) "
                    "from there on (a missing closing quote?)", path, opened, text.count(b"\n", complete))


# ------------------------------------------------------------------ plain chunks


def _plain_rows(
    data: bytes, first_line: int, width: int, found: dict[str, int], columns: dict[str, Column],
    settings: CsvParserSettings,
) -> ParsedRows | None:
    """The rows of a plain chunk (see the module's docstring) as Arrow arrays, one record
    per line; None for any other chunk, which the ``csv`` module then reads."""
    if not _looks_plain(data, settings, width):
        return None
    options = pa_csv.ParseOptions(delimiter=settings.delimiter, quote_char=False, escape_char=False,
                                  ignore_empty_lines=False)
    names = [f"f{i}" for i in range(width)]
    try:
        table = pa_csv.read_csv(
            io.BytesIO(data),
            read_options=pa_csv.ReadOptions(column_names=names, use_threads=False),
            parse_options=options,
            convert_options=pa_csv.ConvertOptions(column_types={n: pa.string() for n in names},
                                                  strings_can_be_null=False, quoted_strings_can_be_null=False),
        )
    except (pa.ArrowInvalid, UnicodeDecodeError):  # a record of another width, invalid UTF-8
        return None
    if not _every_line_a_record(table, data, settings):
        return None
    values: dict[str, Any] = {}
    for name, column in columns.items():
        index = found.get(name)
        if index is None:
            default = stored_default(column) if column.has_default else None
            values[name] = [default] * table.num_rows
            continue
        converted = _plain_values(table.column(index).combine_chunks(), column.dtype)
        if converted is None:
            return None
        values[name] = converted
    return ParsedRows(list(range(first_line, first_line + table.num_rows)), values)


def _looks_plain(data: bytes, settings: CsvParserSettings, width: int) -> bool:
    """No byte that would make a record span lines or be read differently by the ``csv``
    module (quotes, escapes, comments, carriage returns, NULs, a byte-order mark, which
    pyarrow would drop; blank lines, which the ``csv`` module skips, are looked for here
    in a file of one column only: two bytes are searched for ten times slower than one,
    and with more columns ``_every_line_a_record`` finds them)."""
    special = [b"\r", b"\0", *([b"\n\n"] if width == 1 else [])]
    special += [settings.quote.encode()] if settings.enable_quoting else []
    special += [settings.escape.encode()] if settings.escape else []
    special += [settings.comment_character.encode()] if settings.comment_character else []
    starts_oddly = data.startswith((b"\n", b"\xef\xbb\xbf"))
    return bool(data) and not starts_oddly and not any(s in data for s in special)


def _every_line_a_record(table: pa.Table, data: bytes, settings: CsvParserSettings) -> bool:
    """Whether the rows that pyarrow read account for every byte of ``data``: it reads
    a blank line as a row of empty fields, which the ``csv`` module skips; such a line
    takes one byte where a row of empty fields takes its delimiters too."""
    separators = (table.num_columns - 1) * len(settings.delimiter.encode()) + 1
    fields = sum(pc.sum(pc.binary_length(column)).as_py() or 0 for column in table.columns)
    return fields + table.num_rows * separators - (not data.endswith(b"\n")) == len(data)


def _plain_values(texts: pa.Array, dtype: DType) -> pa.Array | list[Any] | None:
    """The stored values of a column's texts; None when one does not fit (the ``csv``
    path then reports it as Pathway does)."""
    if dtype.name == "str":
        return texts
    if dtype.name == "int" and not dtype.optional and pc.all(pc.ascii_is_decimal(pc.ascii_ltrim(texts, "-"))).as_py():
        # digits after minus signs: what Arrow's cast reads as Pathway does ("+5" and "0x1f"
        # are not ints to Pathway; "--5" then fails the cast)
        try:
            return pc.cast(texts, pa.int64())
        except pa.ArrowInvalid:  # out of the 64-bit range
            return None
    parse = text_parser(dtype)
    try:
        return list(map(parse, texts.to_pylist()))
    except CONVERSION_ERRORS:
        return None


def _reason(text: str, dtype: DType) -> str:
    """Why a field is skipped, as the warning says it."""
    reason = f'cannot parse "{text}" as {type_name(dtype)}'
    try:
        text_parser(dtype)(text)
    except RowError as exc:
        return f"{reason}: {exc}"
    except CONVERSION_ERRORS:
        pass
    return reason


def _report_width(lines: _Lines, begin: int, end: int, fields: list[str], width: int, skips: SkippedRows) -> None:
    record = "".join(lines.text[begin:end])
    line, col = position(record, len(record.rstrip("\r\n")), lines.number(begin))
    skips.row(line, col, f"expected {width} fields as in the header, found {len(fields)}")


def _convert_csv_columns(
    rows: list[list[str]], found: dict[str, int], columns: dict[str, Column]
) -> tuple[dict[str, list[Any]], dict[int, list[tuple[int, str, str]]]]:
    """Column-wise conversion (fast when every value parses); returns the values (None
    where a field does not fit) and, per bad row, its bad fields: (field index, column
    name, text)."""
    values: dict[str, list[Any]] = {}
    bad: dict[int, list[tuple[int, str, str]]] = {}
    for name, column in columns.items():
        index = found.get(name)
        if index is None:
            default = stored_default(column) if column.has_default else None
            values[name] = [default] * len(rows)
            continue
        parse = text_parser(column.dtype)
        raw = [r[index] for r in rows]
        if parse is str:
            values[name] = raw  # text as is: nothing to convert
            continue
        try:
            values[name] = list(map(parse, raw))
        except CONVERSION_ERRORS:
            values[name] = _convert_slowly(raw, parse, index, name, bad)
    return values, bad


def _convert_slowly(
    raw: list[str], parse: Callable[[str], Any], index: int, name: str, bad: dict[int, list[tuple[int, str, str]]],
) -> list[Any]:
    out: list[Any] = []
    for i, text in enumerate(raw):
        try:
            out.append(parse(text))
        except CONVERSION_ERRORS:
            out.append(None)
            bad.setdefault(i, []).append((index, name, text))
    return out


# -------------------------------------------------------------- complete records end


_SENTINEL = "sparkwayrecordsentinel"


def csv_complete_end(data: bytes, start: int, end: int, settings: CsvParserSettings | None) -> int:
    """Where the complete CSV records of ``data[start:end]`` end, ``end`` being just
    after a "\\n": at ``end`` unless a quoted field is still open there.

    >>> csv_complete_end(b'a,"b\\nc",d\\ne,"f\\n', 0, 15, None)
    10
    """
    settings = settings or CsvParserSettings()
    if not settings.enable_quoting:
        return end
    quote = settings.quote.encode()
    if settings.escape is None and data.count(quote, start, end) % 2 == 0:
        return end  # balanced quotes: the common case needs no parsing
    return start + _csv_complete_prefix(data[start:end], settings)


def _csv_complete_prefix(chunk: bytes, settings: CsvParserSettings) -> int:
    """Bytes of ``chunk`` (which ends with "\\n") made of complete CSV records.  A sentinel
    line is appended: it forms its own record unless the last record is still open."""
    raw_lines = chunk.split(b"\n")[:-1]
    texts = [ln.decode("utf-8", errors="replace") + "\n" for ln in raw_lines]
    texts.append(_SENTINEL + "\n")
    reader = csv.reader(iter(texts), **settings.dialect())
    prev = last_begin = 0
    last: list[str] = []
    while True:
        try:
            for fields in reader:
                last_begin, prev, last = prev, reader.line_num, fields
            break
        except csv.Error:
            last_begin, prev, last = prev, reader.line_num, []
    if last == [_SENTINEL]:
        return len(chunk)
    return sum(len(ln) + 1 for ln in raw_lines[:last_begin])
