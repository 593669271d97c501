"""Parsing input bytes into rows, one module per format: ``csv``, ``jsonlines`` and
``plaintext``; ``values`` holds what they share (the stored value of each column type,
the errors, the warnings about skipped rows).

The parsers are pure: they take the bytes of one chunk of one file, plus where the chunk
starts in the file, and return the rows it holds.
"""

from __future__ import annotations

from sparkway.connectors.formats.csv import CsvParserSettings, csv_complete_end


def complete_end(
    data: bytes, start: int, *, fmt: str, final: bool,
    settings: CsvParserSettings | None = None,
) -> int:
    """Where the complete records of ``data[start:]`` end: after the last "\\n" (and,
    for CSV, not inside a quoted field), or the end of the data when ``final``.

    >>> complete_end(b"a\\nb", 0, fmt="json", final=False)
    2
    """
    if final:
        return len(data)
    end = data.rfind(b"\n", start) + 1
    if end <= start or fmt != "csv":
        return max(end, start)
    return csv_complete_end(data, start, end, settings)
