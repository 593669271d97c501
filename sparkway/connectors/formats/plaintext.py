"""Plain-text input: each line is a row of one str column."""

from __future__ import annotations

from sparkway.connectors.formats.values import ParsedRows, decode


def parse_plaintext(data: bytes, *, path: str, first_line: int, column: str) -> ParsedRows:
    """One row per line (without its line ending) in a single str column.

    >>> rows = parse_plaintext(b"a\\r\\nb\\n", path="a.txt", first_line=3, column="data")
    >>> rows.ordinals, rows.columns
    ([3, 4], {'data': ['a', 'b']})
    """
    lines = decode(data, path, first_line).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    values = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    return ParsedRows(list(range(first_line, first_line + len(values))), {column: values})
