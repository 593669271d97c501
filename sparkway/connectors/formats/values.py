"""What every input format shares: the parsed rows, the errors, and the conversion of
text and JSON values to the values stored for each column.

The parsers take the bytes of one chunk of one file (plus where the chunk starts in the
file) and return the rows it holds, as Python values in the form that Arrow stores for
each column type (see ``DType.arrow_type``):

========================  ===========================================================
column type               stored value
========================  ===========================================================
int, Pointer              ``int`` (64-bit); text: digits with a sign, nothing else
float                     ``float``; text: also ``1e3``, ``.5``, ``inf``, ``nan``
str                       ``str``
bool                      ``bool``; text: true/1/yes/on/t/y, false/0/no/off/f/n, any case
bytes                     ``bytes``
Json                      JSON text (``json.dumps`` of the parsed value)
DateTimeNaive             ``int``: nanoseconds since 1970-01-01 (from ISO text, up to 9
                          fraction digits, as Pathway reads them)
DateTimeUtc               ``int``: nanoseconds since 1970-01-01 UTC
Duration                  ``int`` nanoseconds; in text and JSON input, an integer number
                          of nanoseconds (as Pathway writes and reads them)
list[T]                   ``list``
tuple[T, ...]             ``dict`` with keys ``_0``, ``_1``, ... (an Arrow struct)
Any                       ``pickle.dumps`` of the value
========================  ===========================================================

A row that does not fit the schema is skipped, with a WARNING that names the place in
the file as ``path:line:column`` (both 1-based; the column is the character column where
the bad field starts) so that users can find it.  In a run keeping Error values
(``terminate_on_error=False``), a value that does not fit its column is an Error value
instead, and its error is logged with Pathway's message (``ParsedRows.errors``); a row
whose primary key does not fit is skipped, and logged.
"""

from __future__ import annotations

import datetime as dt
import gc
import json
import logging
import pickle
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sparkway.core.columns import Column
from sparkway.core.dtypes import DType, from_python
from sparkway.core import durations
from sparkway.errors import InputDataError, SchemaError

log = logging.getLogger("sparkway")

#: how many skipped rows of one chunk are logged one by one; the rest are summed up
MAX_ROW_WARNINGS = 100

#: what a ``text_parser`` function raises for text that is not of its type
CONVERSION_ERRORS = (ValueError, TypeError, KeyError, OverflowError)

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


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


class SchemaMismatchError(SchemaError):
    """An input file cannot give the columns that the schema requires."""


class RowError(InputDataError):
    """One value does not fit its column; the message is the reason shown to the user."""


@dataclass
class ParsedRows:
    """The valid rows of one chunk: per row an ordinal (the line number where the record
    starts), and per schema column its stored values (a list, or an Arrow array).

    Keeping Error values: ``errors`` has, per row, the names of its columns whose value
    is an Error (their stored value is None), and ``messages`` the errors to log, by the
    ordinal of their row (also of rows left out: with a primary key that does not fit)."""

    ordinals: list[int] = field(default_factory=list)
    columns: dict[str, list[Any]] = field(default_factory=dict)
    skipped: int = 0
    errors: list[list[str]] | None = None
    messages: dict[int, list[str]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ordinals)


def pathway_type_name(dtype: DType) -> str:
    """A column type as Pathway's messages name it: ``int``, ``int | None``...

    >>> from sparkway.core.dtypes import INT
    >>> pathway_type_name(INT.with_optional(True))
    'int | None'
    """
    base = str(dtype.with_optional(False))
    return f"{base} | None" if dtype.optional else base


class ErrorCells:
    """The values of a chunk that do not fit their columns, in a run keeping Error
    values: collected while parsing, then applied to the rows with ``apply``."""

    def __init__(self, key_columns: list[str]) -> None:
        self.key_columns = key_columns
        self.cells: dict[int, list[tuple[str, str]]] = {}  # row -> (column, message)

    def add(self, row: int, column: str, message: str) -> None:
        self.cells.setdefault(row, []).append((column, message))

    def apply(self, ordinals: list[int], columns: dict[str, list[Any]]) -> ParsedRows:
        """The rows with their Error values; a row whose primary key has one is left out."""
        errors: list[list[str]] = [[] for _ in ordinals]
        messages: dict[int, list[str]] = {}
        dropped = set()
        for row, cells in sorted(self.cells.items()):
            in_key = [message for column, message in cells if column in self.key_columns]
            if in_key:
                dropped.add(row)
                messages.setdefault(ordinals[row], []).append(f"error in primary key, skipping the row: {in_key[0]}")
                continue
            for column, message in cells:
                columns[column][row] = None
                errors[row].append(column)
                messages.setdefault(ordinals[row], []).append(message)
        if dropped:
            kept = [i for i in range(len(ordinals)) if i not in dropped]
            ordinals = [ordinals[i] for i in kept]
            errors = [errors[i] for i in kept]
            columns = {name: [values[i] for i in kept] for name, values in columns.items()}
        return ParsedRows(ordinals, columns, len(dropped), errors, messages)


def parse_failure(text: str, dtype: DType) -> str:
    """Why text is not a value of the type, in the words of Pathway's messages (Rust's,
    for numbers)."""
    name = dtype.with_optional(False).name
    if name in ("int", "Pointer"):
        if text == "":
            return "cannot parse integer from empty string"
        if _INT_TEXT.fullmatch(text):
            return f"number too {'small' if text.startswith('-') else 'large'} to fit in target type"
        return "invalid digit found in string"
    if name == "float":
        return "cannot parse float from empty string" if text == "" else "invalid float literal"
    return f"not a {pathway_type_name(dtype)}"


# ------------------------------------------------------------------ value conversion


def type_name(dtype: DType) -> str:
    """The column type as error messages show it (without Optional)."""
    return str(dtype.with_optional(False))


def _checked_int(value: int) -> int:
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise RowError("out of the 64-bit integer range")
    return value


_INT_TEXT = re.compile(r"[+-]?[0-9]+")


def _text_int(text: str) -> int:
    """Digits with an optional sign, as Pathway reads ints (no spaces, no ``_``)."""
    if not _INT_TEXT.fullmatch(text):
        raise ValueError(f"invalid int {text!r}")
    return _checked_int(int(text))


def _text_float(text: str) -> float:
    """A float as Pathway reads one (``1e3``, ``.5``, ``inf``, ``nan``; no spaces, no ``_``)."""
    if text != text.strip() or "_" in text:
        raise ValueError(f"invalid float {text!r}")
    return float(text)


_BOOL_TEXT = {
    **dict.fromkeys(("true", "1", "yes", "on", "t", "y"), True),
    **dict.fromkeys(("false", "0", "no", "off", "f", "n"), False),
}


def _text_bool(text: str) -> bool:
    """Pathway's words for a bool, in any case and with spaces around."""
    return _BOOL_TEXT[text.strip().lower()]  # a KeyError is reported as "cannot parse"


def _text_json(text: str) -> str:
    return json.dumps(json.loads(text))


# Pathway's date-time text: 2024-01-02T03:04:05, with a fraction of any length (kept to
# the nanosecond), unpadded fields taken, and for a DateTimeUtc an offset (+02:00 or
# +0200; not Z). Spaces before it are taken too.
_DATE_TIME = re.compile(
    r"\s*(\d{4})-(\d{1,2})-(\d{1,2})T(\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d+))?(?:([+-])(\d{2}):?(\d{2}))?"
)


def _date_time(text: str, zoned: bool) -> int:
    """Nanoseconds since the epoch of a date-time's text (a UTC one given with any offset)."""
    found = _DATE_TIME.fullmatch(text)
    if found is None or (found.group(8) is not None) != zoned:
        kind = "DateTimeUtc (2024-01-02T03:04:05+00:00)" if zoned else "DateTimeNaive (2024-01-02T03:04:05)"
        raise RowError(f"cannot parse {text!r} as {kind}")
    year, month, day, hour, minute, second = (int(found.group(i)) for i in range(1, 7))
    fraction = (found.group(7) or "0")[:9].ljust(9, "0")
    value = dt.datetime(year, month, day, hour, minute, second, int(fraction[:6]))
    if zoned:
        sign = -1 if found.group(8) == "-" else 1
        offset = dt.timedelta(hours=int(found.group(9)), minutes=int(found.group(10))) * sign
        value = value.replace(tzinfo=dt.timezone(offset))
    try:
        return durations.nanos(value) + int(fraction[6:])
    except OverflowError:
        raise RowError(f"{text!r} is out of the range of date-times (1677-09-21 to 2262-04-11)") from None


_TEXT_PARSERS: dict[str, Callable[[str], Any]] = {
    "int": _text_int,
    "Pointer": _text_int,
    "float": _text_float,
    "str": str,
    "bool": _text_bool,
    "bytes": str.encode,
    "Json": _text_json,
    "DateTimeNaive": lambda t: _date_time(t, zoned=False),
    "DateTimeUtc": lambda t: _date_time(t, zoned=True),
    "Duration": lambda t: _checked_int(int(t)),
    "Any": pickle.dumps,
}


def text_parser(dtype: DType) -> Callable[[str], Any]:
    """A function from a CSV field's text to the stored value; it raises
    ``ValueError``/``KeyError``/``TypeError`` for text that is not of the type.

    As Pathway reads text: a str column (optional too) takes the text as it is, "" too;
    another optional column reads "", "None" and "null" (in any case) as None.
    """
    if dtype.name in ("list", "tuple"):
        from_json = json_converter(dtype.with_optional(False))
        base: Callable[[str], Any] = lambda t: from_json(json.loads(t))  # noqa: E731
    else:
        base = _TEXT_PARSERS.get(dtype.name, str)
    if not dtype.optional or dtype.name == "str":
        return base
    return lambda t: None if t == "" or t.lower() in ("none", "null") else base(t)


def _expect(ok: bool, dtype: DType, value: Any) -> None:
    if not ok:
        raise RowError(f"expected {type_name(dtype)}, found {json.dumps(value)}")


def json_converter(dtype: DType) -> Callable[[Any], Any]:
    """A function from a parsed JSON value to the stored value; it raises ``RowError``
    when the value's JSON type does not match the column type."""
    name = dtype.name
    if name == "Json":
        # as in Pathway, a null value is None in an Optional[Json] column, and does not fit
        # a Json one
        def to_json(v: Any) -> str:
            _expect(v is not None, dtype, v)
            return json.dumps(v)
        return (lambda v: None if v is None else json.dumps(v)) if dtype.optional else to_json
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
                raise RowError(f"cannot parse {json.dumps(v)} as {type_name(dtype)}") from exc
        return from_string
    if name == "Duration":
        def to_duration(v: Any) -> int:
            _expect(isinstance(v, int) and not isinstance(v, bool), dtype, v)
            return _checked_int(v)
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
    if column.dtype.name in ("DateTimeNaive", "DateTimeUtc", "Duration"):
        return from_python(column.dtype)(value)
    return value


# ------------------------------------------------------------------- text and warnings


class SkippedRows:
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


def position(text: str, offset: int, first_line: int) -> tuple[int, int]:
    """(line, column), both 1-based, of a character offset in a text starting at line
    ``first_line``.

    >>> position("ab\\ncd", 4, 10)
    (11, 2)
    """
    line_start = text.rfind("\n", 0, offset) + 1
    return first_line + text.count("\n", 0, offset), offset - line_start + 1
