"""The one pass over a file's bytes that discover() makes (``connectors/file_scan.py``),
against the same facts computed from the bytes held whole: the records' end, the lines,
the digest, and pieces that each parse to a whole number of records."""

from __future__ import annotations

import csv
import hashlib
import io
import random
import zlib
from pathlib import Path

import pytest

from sparkway.connectors import file_scan
from sparkway.connectors.file_scan import hash_prefix, scan_records
from sparkway.connectors.files import FileSource
from sparkway.core.columns import Column
from sparkway.core.dtypes import INT, STR


def _csv_text(rng: random.Random, rows: int) -> bytes:
    """CSV records, some with quoted fields holding commas, quotes and newlines."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for n in range(rows):
        note = rng.choice(["plain", "a, comma", 'a "quote"', "two\nlines", "three\nshort\nlines", ""])
        writer.writerow([n, note * rng.randint(1, 3)])
    return out.getvalue().encode()


def _records(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode())))


def _reader(data: bytes):
    return lambda start, end: data[start:end]


@pytest.mark.parametrize("seed", range(6))
def test_blocks_and_pieces_give_the_facts_of_the_whole_bytes(seed: int, monkeypatch) -> None:
    rng = random.Random(seed)
    monkeypatch.setattr(file_scan, "BLOCK_BYTES", rng.choice([7, 64, 1000]))
    data = _csv_text(rng, 300) + rng.choice([b"", b'9,"open', b"10,unfinished"])
    whole_end = data.rfind(b"\n") + 1  # every record before it is complete: quotes pair up
    read = _reader(data)
    scan = scan_records(read, hash_prefix(read, 0), 0, quote=b'"', final=False, piece_bytes=rng.choice([50, 400]))
    assert scan.end == whole_end
    assert scan.size == len(data)
    assert scan.lines == data.count(b"\n", 0, whole_end)
    assert scan.digest == hashlib.blake2b(data[:whole_end], digest_size=16).hexdigest()
    assert [p[0] for p in scan.pieces[1:]] == [p[1] for p in scan.pieces[:-1]]  # no gap, no overlap
    assert (scan.pieces[0][0], scan.pieces[-1][1]) == (0, whole_end)
    parsed = []
    for start, end, line, crc in scan.pieces:
        assert line == 1 + data.count(b"\n", 0, start)
        assert crc == zlib.crc32(data[start:end])
        parsed += _records(data[start:end])  # a piece cut inside a quoted field would not parse the same
    assert len(scan.pieces) > 2
    assert parsed == _records(data[:whole_end])


def test_a_final_scan_takes_the_unfinished_last_record() -> None:
    data = b"a,b\n1,2\n3,4"
    read = _reader(data)
    scan = scan_records(read, hash_prefix(read, 4), 4, line=2, quote=b'"', final=True, piece_bytes=None)
    assert (scan.end, scan.complete, scan.lines) == (len(data), False, 1)
    assert scan.digest == hashlib.blake2b(data, digest_size=16).hexdigest()
    assert scan.pieces == [[4, len(data), 2, zlib.crc32(data[4:])]]


def test_an_open_quoted_field_at_the_end_waits_for_the_rest_of_its_record() -> None:
    data = b'1,"two\nlines"\n2,"still\nopen\n'
    read = _reader(data)
    scan = scan_records(read, hash_prefix(read, 0), 0, quote=b'"', final=False, piece_bytes=None,
                        settle=lambda chunk: _complete_records_end(chunk))
    assert scan.end == data.index(b"2,")
    assert scan.digest == hashlib.blake2b(data[:scan.end], digest_size=16).hexdigest()
    assert scan.lines == 2


def _complete_records_end(data: bytes) -> int:
    """The end of the last record the csv module closes within ``data`` (a reference
    written here, line by line)."""
    end, at, open_quote = 0, 0, False
    for line in data.splitlines(keepends=True):
        at += len(line)
        open_quote ^= line.count(b'"') % 2 == 1
        if not open_quote:
            end = at
    return end


def test_discover_never_holds_a_whole_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(file_scan, "BLOCK_BYTES", 4096)
    lines = [f"u{n},{n}\n" for n in range(20_000)]
    (tmp_path / "big.csv").write_text("user_id,access_time\n" + "".join(lines))
    size = (tmp_path / "big.csv").stat().st_size
    source = FileSource(str(tmp_path), format="csv", mode="static", name="logs",
                        columns={"user_id": Column("user_id", STR), "access_time": Column("access_time", INT)})
    asked = []
    real_read = source.files.read

    def read(path: str, start: int = 0, end: int | None = None) -> bytes:
        asked.append((end if end is not None else size) - start)
        return real_read(path, start, end)

    monkeypatch.setattr(source.files, "read", read)
    [segment] = source.discover()
    assert segment["end"] == size and segment["lines_end"] == 20_001
    assert max(asked) <= 64 << 10  # blocks, and the first bytes for the header
    assert sum(asked) < 3 * size  # the header's bytes, then one pass


def test_only_a_read_whose_digest_may_be_compared_hashes_the_file(tmp_path: Path) -> None:
    from sparkway.persistence.storage import BlobStorage

    text = b"user_id,access_time\nbob,1\n"
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.csv").write_bytes(text)
    columns = {"user_id": Column("user_id", STR), "access_time": Column("access_time", INT)}

    def segment(mode: str, storage: BlobStorage | None) -> dict:
        source = FileSource(str(tmp_path / "logs"), format="csv", mode=mode, name="logs", columns=columns)
        source.open(storage)
        [found] = source.discover()
        return found

    assert segment("static", None)["digest"] is None  # read once, never looked at again
    expected = hashlib.blake2b(text, digest_size=16).hexdigest()
    assert segment("streaming", None)["digest"] == expected
    assert segment("static", BlobStorage(str(tmp_path / "store")))["digest"] == expected
