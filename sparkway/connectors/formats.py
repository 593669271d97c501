"""Parsing input bytes into rows: CSV, JSON lines and plain text.

The functions here are pure: they take the bytes of one chunk of one file (plus where
the chunk starts in the file) and return the rows it holds, as Python values in the form
that Arrow stores for each column type (see ``DType.arrow_type``):

========================  ===========================================================
column type               stored value
========================  ===========================================================
int, Pointer              ``int`` (64-bit)
float                     ``float``
str                       ``str``
bool                      ``bool``
bytes                     ``bytes``
Json                      JSON text (``json.dumps`` of the parsed value)
DateTimeNaive             naive ``datetime``
DateTimeUtc               ``datetime`` in UTC
Duration                  ``timedelta``; in text input, an integer number of microseconds
list[T]                   ``list``
tuple[T, ...]             ``dict`` with keys ``_0``, ``_1``, ... (an Arrow struct)
Any                       ``pickle.dumps`` of the value
========================  ===========================================================

A row that does not fit the schema is skipped, with a WARNING that names the place in
the file as ``path:line:column`` (both 1-based; the column is the character column where
the bad field starts) so that users can find it.
"""

from __future__ import annotations

import csv
import datetime as dt
import gc
import hashlib
import json
import logging
import pickle
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sparkway.api.dtypes import DType
from sparkway.api.schema import Column

log = logging.getLogger("sparkway")

#: how many skipped rows of one chunk are logged one by one; the rest are summed up
MAX_ROW_WARNINGS = 100

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# The csv module refuses fields over 128 KiB by default; a long text field in a log line
# is legitimate input, so lift the limit (it is process-wide, and only ever raised).
if csv.field_size_limit() < 2**31 - 1:
    csv.field_size_limit(2**31 - 1)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector.  Parsing makes millions of small lists and
    strings that hold no cycles, yet their allocations trigger collections that took
    most of the parsing time (about 4x here)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class SchemaMismatchError(ValueError):
    """An input file cannot give the columns that the schema requires."""


class RowError(ValueError):
    """One value does not fit its column; the message is the reason shown to the user."""


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


@dataclass
class ParsedRows:
    """The valid rows of one chunk: per row an ordinal (the line number where the record
    starts), and per schema column the list of stored values."""

    ordinals: list[int] = field(default_factory=list)
    columns: dict[str, list[Any]] = field(default_factory=dict)
    skipped: int = 0

    def __len__(self) -> int:
        return len(self.ordinals)


# --------------------------------------------------------------------------- row ids


def _hash64(data: bytes) -> int:
    digest = hashlib.blake2b(data, digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def _canonical(value: Any) -> Any:
    """A JSON-able form of a composite key value that keeps types apart."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return ["f", repr(value)]  # so that 1.0 and 1 give different ids
    if isinstance(value, bytes):
        return ["b", value.hex()]
    if isinstance(value, dt.datetime):
        return ["t", value.isoformat()]
    if isinstance(value, dt.timedelta):
        return ["d", (value.days * 86400 + value.seconds) * 10**6 + value.microseconds]
    if isinstance(value, (list, tuple)):
        return ["l", [_canonical(v) for v in value]]
    if isinstance(value, dict):
        return ["s", {str(k): _canonical(v) for k, v in value.items()}]
    return ["r", repr(value)]


def _key_part(value: Any) -> bytes:
    """A self-delimiting, type-tagged encoding of one key value."""
    if isinstance(value, str):
        data = value.encode()
        return b"s%d:%s" % (len(data), data)
    if value is None:
        return b"n;"
    if isinstance(value, bool):
        return b"b1;" if value else b"b0;"
    if isinstance(value, int):
        return b"i%d;" % value
    if isinstance(value, float):
        return b"f%s;" % repr(value).encode()
    data = json.dumps(_canonical(value), separators=(",", ":"), sort_keys=True).encode()
    return b"j%d:%s" % (len(data), data)


def key_id(values: Sequence[Any]) -> int:
    """The row id of a row with these primary-key values (in their stored forms), the
    same whichever file or source the row comes from.

    >>> key_id(["alice", 1]) == key_id(("alice", 1)) != key_id(["alice", 1.0])
    True
    """
    return _hash64(b"key\0" + b"".join(map(_key_part, values)))


def record_ids(source: str, file: str, ordinals: Sequence[int]) -> list[int]:
    """The row ids of rows without primary key: their source, file and ordinal in the
    file (the line number where the record starts, for line formats)."""
    base = hashlib.blake2b(digest_size=8)
    base.update(b"row\0" + json.dumps([source, file]).encode() + b"\0")
    ids = []
    for ordinal in ordinals:
        h = base.copy()
        h.update(b"%d" % ordinal)
        ids.append(int.from_bytes(h.digest(), "little", signed=True))
    return ids


def record_id(source: str, file: str, ordinal: int) -> int:
    """``record_ids`` of one row."""
    return record_ids(source, file, [ordinal])[0]


# ------------------------------------------------------------------ value conversion


def _type_name(dtype: DType) -> str:
    return str(dtype.with_optional(False))


def _checked_int(value: int) -> int:
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise RowError("out of the 64-bit integer range")
    return value


def _text_int(text: str) -> int:
    return _checked_int(int(text))


_BOOL_TEXT = {"true": True, "True": True, "1": True, "false": False, "False": False, "0": False}


def _text_bool(text: str) -> bool:
    return _BOOL_TEXT[text]  # a KeyError is reported as "cannot parse"


def _text_json(text: str) -> str:
    return json.dumps(json.loads(text))


def _naive(value: dt.datetime) -> dt.datetime:
    if value.tzinfo is not None:
        raise RowError("a DateTimeNaive must not have a time zone")
    return value


def _utc(value: dt.datetime) -> dt.datetime:
    if value.tzinfo is None:  # a DateTimeUtc written without offset is taken as UTC
        return value.replace(tzinfo=dt.timezone.utc)
    return value.astimezone(dt.timezone.utc)


def _micros(value: int) -> dt.timedelta:
    return dt.timedelta(microseconds=_checked_int(value))


_TEXT_PARSERS: dict[str, Callable[[str], Any]] = {
    "int": _text_int,
    "Pointer": _text_int,
    "float": float,
    "str": str,
    "bool": _text_bool,
    "bytes": str.encode,
    "Json": _text_json,
    "DateTimeNaive": lambda t: _naive(dt.datetime.fromisoformat(t)),
    "DateTimeUtc": lambda t: _utc(dt.datetime.fromisoformat(t)),
    "Duration": lambda t: _micros(int(t)),
    "Any": pickle.dumps,
}


def text_parser(dtype: DType) -> Callable[[str], Any]:
    """A function from a CSV field's text to the stored value; it raises
    ``ValueError``/``KeyError``/``TypeError`` for text that is not of the type.

    An empty field is None in an Optional column, "" in a str column, else an error.
    """
    if dtype.name in ("list", "tuple"):
        from_json = json_converter(dtype.with_optional(False))
        base: Callable[[str], Any] = lambda t: from_json(json.loads(t))  # noqa: E731
    else:
        base = _TEXT_PARSERS.get(dtype.name, str)
    if not dtype.optional:
        return base
    return lambda t: None if t == "" else base(t)


def _expect(ok: bool, dtype: DType, value: Any) -> None:
    if not ok:
        raise RowError(f"expected {_type_name(dtype)}, found {json.dumps(value)}")


def json_converter(dtype: DType) -> Callable[[Any], Any]:
    """A function from a parsed JSON value to the stored value; it raises ``RowError``
    when the value's JSON type does not match the column type."""
    name = dtype.name
    if name == "Json":
        # null is a valid Json value; only an Optional[Json] column turns it into None
        conv: Callable[[Any], Any] = json.dumps
        return (lambda v: None if v is None else conv(v)) if dtype.optional else conv
    conv = _json_base_converter(dtype)
    if dtype.optional:
        return lambda v: None if v is None else conv(v)

    def required(value: Any) -> Any:
        _expect(value is not None, dtype, value)
        return conv(value)

    return required


def _json_base_converter(dtype: DType) -> Callable[[Any], Any]:
    name = dtype.name
    if name in ("int", "Pointer"):
        def to_int(v: Any) -> int:
            _expect(isinstance(v, int) and not isinstance(v, bool), dtype, v)
            return _checked_int(v)
        return to_int
    if name == "float":
        def to_float(v: Any) -> float:
            _expect(isinstance(v, (int, float)) and not isinstance(v, bool), dtype, v)
            return float(v)
        return to_float
    if name == "bool":
        def to_bool(v: Any) -> bool:
            _expect(isinstance(v, bool), dtype, v)
            return v
        return to_bool
    if name in ("str", "bytes", "DateTimeNaive", "DateTimeUtc"):
        text_conv = _TEXT_PARSERS[name]

        def from_string(v: Any) -> Any:
            _expect(isinstance(v, str), dtype, v)
            try:
                return text_conv(v)
            except (ValueError, TypeError) as exc:
                raise RowError(f"cannot parse {json.dumps(v)} as {_type_name(dtype)}") from exc
        return from_string
    if name == "Duration":
        def to_duration(v: Any) -> dt.timedelta:
            _expect(isinstance(v, int) and not isinstance(v, bool), dtype, v)
            return _micros(v)
        return to_duration
    if name == "list":
        item = json_converter(dtype.items[0])

        def to_list(v: Any) -> list[Any]:
            _expect(isinstance(v, list), dtype, v)
            return [item(x) for x in v]
        return to_list
    if name == "tuple":
        items = [json_converter(t) for t in dtype.items]

        def to_tuple(v: Any) -> dict[str, Any]:
            _expect(isinstance(v, list) and len(v) == len(items), dtype, v)
            return {f"_{i}": conv(x) for i, (conv, x) in enumerate(zip(items, v))}
        return to_tuple
    return pickle.dumps  # Any


def stored_default(column: Column) -> Any:
    """The stored form of a column's default value."""
    value = column.default_value
    if value is None:
        return None
    if column.dtype.name == "Json":
        return json.dumps(getattr(value, "value", value))
    if column.dtype.name == "Any":
        return pickle.dumps(value)
    if column.dtype.name == "tuple" and isinstance(value, (tuple, list)):
        return {f"_{i}": v for i, v in enumerate(value)}
    return value


def input_name(column: Column) -> str:
    return column.source_name or column.name


# ------------------------------------------------------------------------- warnings


class _Skips:
    """Logs skipped rows (at most MAX_ROW_WARNINGS one by one) and counts them."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.count = 0

    def row(self, line: int, col: int, reason: str, column: str | None = None) -> None:
        self.count += 1
        if self.count <= MAX_ROW_WARNINGS:
            what = f'column "{column}": {reason}' if column else reason
            log.warning("%s:%d:%d: %s; row skipped", self.path, line, col, what)

    def finish(self) -> None:
        if self.count > MAX_ROW_WARNINGS:
            log.warning(
                "%s: %d more rows skipped (only the first %d are shown)",
                self.path, self.count - MAX_ROW_WARNINGS, MAX_ROW_WARNINGS,
            )


def decode(data: bytes, path: str, first_line: int) -> str:
    """UTF-8 text of a chunk; invalid bytes become U+FFFD, with a warning naming the
    first place where that happened."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = first_line + data.count(b"\n", 0, exc.start)
        log.warning(
            "%s:%d:%d: invalid UTF-8; replaced by U+FFFD",
            path, line, exc.start - line_start + 1,
        )
        return data.decode("utf-8", errors="replace")


def split_lines(text: str) -> list[str]:
    """Lines of a text, each with its "\\n" except a final line without one.  Only "\\n"
    ends a line, so line numbers agree with byte offsets counted by ``bytes.count``."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _position(text: str, offset: int, first_line: int) -> tuple[int, int]:
    """(line, column), both 1-based, of a character offset in a text starting at line
    ``first_line``."""
    line_start = text.rfind("\n", 0, offset) + 1
    return first_line + text.count("\n", 0, offset), offset - line_start + 1


# ------------------------------------------------------------------------------ CSV


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
    lines: _Lines, settings: CsvParserSettings, width: int, skips: _Skips
) -> tuple[list[list[str]], list[int], list[int]]:
    """The records with ``width`` fields, and the index of the first line of each and of
    the line after it; blank lines are skipped, other records reported."""
    reader = csv.reader(lines.text, **settings.dialect())
    rows: list[list[str]] = []
    begins: list[int] = []
    ends: list[int] = []
    add_row, add_begin, add_end = rows.append, begins.append, ends.append  # hot loop
    prev = 0
    while True:
        try:
            for fields in reader:
                begin, prev = prev, reader.line_num
                if len(fields) == width:
                    add_row(fields)
                    add_begin(begin)
                    add_end(prev)
                elif fields:
                    _report_width(lines, begin, prev, fields, width, settings, skips)
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
        fields[0] = fields[0].lstrip("\ufeff")  # a byte-order mark is not part of a name
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
    ``SchemaMismatchError`` when a column with no default and not Optional is missing."""
    index: dict[str, int] = {}
    for i, name in enumerate(header):
        index.setdefault(name, i)
    found: dict[str, int] = {}
    missing: list[str] = []
    for name, column in columns.items():
        source = input_name(column)
        if source in index:
            found[name] = index[source]
        elif not (column.has_default or column.dtype.optional):
            missing.append(source)
    if missing:
        names = ", ".join(f'"{m}"' for m in missing)
        raise SchemaMismatchError(
            f"{path}: the CSV header lacks column(s) {names} required by the schema; "
            f"header found: {_join_header(header)}"
        )
    return found


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
) -> ParsedRows:
    """Rows of a chunk of CSV data that follows the header (``first_line`` is the file
    line number of the chunk's first byte).

    >>> from sparkway.api.dtypes import INT, STR
    >>> cols = {"user": Column("user", STR), "t": Column("t", INT)}
    >>> rows = parse_csv(b"bob,12\\n", path="a.csv", first_line=2, header=["user", "t"], columns=cols)
    >>> rows.ordinals, rows.columns
    ([2], {'user': ['bob'], 't': [12]})
    """
    settings = settings or CsvParserSettings()
    found = check_csv_header(path, header, columns)
    skips = _Skips(path)
    lines = _Lines.of(decode(data, path, first_line), first_line, settings)
    rows, begins, ends = _csv_rows(lines, settings, len(header), skips)
    values, bad = _convert_csv_columns(rows, found, columns)
    for i, (field_index, name, reason) in sorted(bad.items()):
        record = "".join(lines.text[begins[i] : ends[i]])
        offset = _field_starts(record, settings)[field_index]
        line, col = _position(record, offset, lines.number(begins[i]))
        skips.row(line, col, reason, name)
    skips.finish()
    if lines.numbers is None:
        ordinals = [first_line + b for b in begins]
    else:
        ordinals = [lines.numbers[b] for b in begins]
    if bad:
        keep = [i for i in range(len(rows)) if i not in bad]
        ordinals = [ordinals[i] for i in keep]
        values = {n: [v[i] for i in keep] for n, v in values.items()}
    return ParsedRows(ordinals, values, skips.count)


def _report_width(
    lines: _Lines, begin: int, end: int, fields: list[str], width: int,
    settings: CsvParserSettings, skips: _Skips,
) -> None:
    record = "".join(lines.text[begin:end])
    if len(fields) > width:
        offset = _field_starts(record, settings)[width]
    else:
        offset = len(record.rstrip("\r\n"))
    line, col = _position(record, offset, lines.number(begin))
    skips.row(line, col, f"expected {width} fields as in the header, found {len(fields)}")


_CONVERSION_ERRORS = (ValueError, TypeError, KeyError, OverflowError)


def _convert_csv_columns(
    rows: list[list[str]], found: dict[str, int], columns: dict[str, Column]
) -> tuple[dict[str, list[Any]], dict[int, tuple[int, str, str]]]:
    """Column-wise conversion (fast when every value parses); returns the values and,
    per bad row, its leftmost bad field: (field index, column name, reason)."""
    values: dict[str, list[Any]] = {}
    bad: dict[int, tuple[int, str, str]] = {}
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
        except _CONVERSION_ERRORS:
            values[name] = _convert_slowly(raw, parse, index, name, column.dtype, bad)
    return values, bad


def _convert_slowly(
    raw: list[str], parse: Callable[[str], Any], index: int, name: str, dtype: DType,
    bad: dict[int, tuple[int, str, str]],
) -> list[Any]:
    out: list[Any] = []
    for i, text in enumerate(raw):
        try:
            out.append(parse(text))
        except _CONVERSION_ERRORS as exc:
            out.append(None)
            reason = f'cannot parse "{text}" as {_type_name(dtype)}'
            if isinstance(exc, RowError):
                reason = f"{reason}: {exc}"
            if i not in bad or bad[i][0] > index:
                bad[i] = (index, name, reason)
    return out


# ------------------------------------------------------------------------ JSON lines


def parse_json_lines(
    data: bytes, *, path: str, first_line: int, columns: dict[str, Column]
) -> ParsedRows:
    """Rows of a chunk of JSON lines: one JSON object per line, blank lines ignored.

    >>> from sparkway.api.dtypes import INT
    >>> parse_json_lines(b'{"n": 1}\\n\\n{"n": 2}\\n', path="a.jsonl", first_line=1,
    ...                  columns={"n": Column("n", INT)}).columns
    {'n': [1, 2]}
    """
    skips = _Skips(path)
    convs = {name: (input_name(c), json_converter(c.dtype), c) for name, c in columns.items()}
    result = ParsedRows(columns={name: [] for name in columns})
    for i, line in enumerate(split_lines(decode(data, path, first_line))):
        if not line.strip():
            continue
        row = _json_row(line, first_line + i, convs, skips)
        if row is not None:
            result.ordinals.append(first_line + i)
            for name, value in zip(columns, row):
                result.columns[name].append(value)
    skips.finish()
    result.skipped = skips.count
    return result


def _json_row(
    line: str, number: int, convs: dict[str, tuple[str, Callable[[Any], Any], Column]],
    skips: _Skips,
) -> list[Any] | None:
    try:
        obj = json.loads(line.rstrip("\r\n"))  # so that an error at the end is on this line
    except json.JSONDecodeError as exc:
        skips.row(number, exc.colno, f"invalid JSON: {exc.msg}")
        return None
    if not isinstance(obj, dict):
        skips.row(number, 1, f"expected a JSON object, found {type(obj).__name__}")
        return None
    row: list[Any] = []
    for source, conv, column in convs.values():
        if source in obj:
            try:
                row.append(conv(obj[source]))
            except (RowError, *_CONVERSION_ERRORS) as exc:
                col = _json_value_columns(line).get(source, 1)
                skips.row(number, col, str(exc), column.name)
                return None
        elif column.has_default:
            row.append(stored_default(column))
        elif column.dtype.optional:
            row.append(None)
        else:
            skips.row(number, 1, "missing", column.name)
            return None
    return row


def _json_value_columns(line: str) -> dict[str, int]:
    """1-based column of the value of each top-level key of a JSON object line."""
    decoder = json.JSONDecoder()
    ws = " \t\r\n"
    out: dict[str, int] = {}
    i = len(line) - len(line.lstrip(ws)) + 1  # after "{"
    try:
        while True:
            while line[i] in ws or line[i] == ",":
                i += 1
            if line[i] == "}":
                return out
            key, i = json.decoder.scanstring(line, i + 1)
            while line[i] in ws or line[i] == ":":
                i += 1
            out.setdefault(key, i + 1)
            _, i = decoder.raw_decode(line, i)
    except (IndexError, ValueError):
        return out


# ------------------------------------------------------------------------ plain text


def parse_plaintext(data: bytes, *, path: str, first_line: int, column: str) -> ParsedRows:
    """One row per line (without its line ending) in a single str column."""
    lines = decode(data, path, first_line).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    values = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    return ParsedRows(list(range(first_line, first_line + len(values))), {column: values})


# -------------------------------------------------------------- complete records end


_SENTINEL = "sparkwayrecordsentinel"


def complete_end(
    data: bytes, start: int, *, fmt: str, final: bool,
    settings: CsvParserSettings | None = None,
) -> int:
    """Where the complete records of ``data[start:]`` end: after the last "\\n" (and,
    for CSV, not inside a quoted field), or the end of the data when ``final``."""
    if final:
        return len(data)
    end = data.rfind(b"\n", start) + 1
    if end <= start or fmt != "csv":
        return max(end, start)
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
