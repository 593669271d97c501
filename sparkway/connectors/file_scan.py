"""One pass over a file's bytes, a block at a time: where its complete records end, how
many lines they take, the digest that later tells an append from a modification, and
the pieces that Spark's tasks parse (``FileSource.read_on_executors``).

Why blocks: ``discover()`` runs on the driver, and a file of a gigabyte read whole would
make the driver's memory grow with the largest input file and cost several passes over
its bytes.  Here each byte is read once, hashed once and counted once, and memory is a
block plus the unfinished line at its end.

A record ends at a "\\n"; for CSV with quoting, only at a "\\n" after an even number of
quote characters since the start of the bytes scanned (outside a quoted field).  What
this count cannot decide (CSV with an escape character, or quotes that do not pair up
while the file may still grow) is settled by the caller's ``settle`` over the bytes
read whole, as before this module existed.

    >>> data = b'h\\na,1\\n"b\\nc",2\\nd'
    >>> read = lambda start, end: data[start:end]
    >>> scan = scan_records(read, hash_prefix(read, 2), 2, line=2, quote=b'"', final=False, piece_bytes=4)
    >>> scan.end, scan.lines, [piece[:3] for piece in scan.pieces]
    (14, 3, [[2, 6, 2], [6, 14, 3]])
"""

from __future__ import annotations

import hashlib
import io
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: bytes read at a time
BLOCK_BYTES = 8 << 20

#: ``read(start, end)``: the file's bytes [start, end), fewer at its end
RangeReader = Callable[[int, int], bytes]

#: a piece of the bytes to parse: [start, end, line number of ``start``, crc32 of the bytes]
Piece = list[int]


def hash_prefix(read: RangeReader, end: int) -> Any | None:
    """The running digest (blake2b, 16 bytes) of the bytes [0, end); None when the file
    holds fewer.  Its hex digest is kept in the source's position: another algorithm
    would make every file look modified to a run that restores a position."""
    digest, at = hashlib.blake2b(digest_size=16), 0
    while at < end:
        block = read(at, min(end, at + BLOCK_BYTES))
        if not block:
            return None
        digest.update(block)
        at += len(block)
    return digest


def piece_matches(data: bytes, start: int, piece: Piece) -> bool:
    """Whether ``data`` (the file's bytes from ``start``) holds ``piece``'s bytes as
    they were scanned."""
    return zlib.crc32(data[piece[0] - start:piece[1] - start]) == piece[3]


@dataclass
class Scan:
    """What one pass found after ``start``."""

    size: int  # bytes read in all
    end: int  # the bytes to parse are [start, end)
    complete: bool  # False: an unfinished last record was taken too
    lines: int  # "\n" in [start, end)
    digest: str | None  # of [0, end); None when not asked for
    pieces: list[Piece]


def scan_records(
    read: RangeReader, prefix: Any | None, start: int, *, line: int = 1, quote: bytes | None, final: bool,
    piece_bytes: int | None, settle: Callable[[bytes], int] | None = None, always_settle: bool = False,
) -> Scan:
    """The complete records after ``start`` (``final``: the unfinished last one too),
    cut into pieces of at least ``piece_bytes`` (None: one piece).  ``prefix`` is
    ``hash_prefix(read, start)``, or None for no digest (nothing will compare it: a
    bytes' digest costs more than reading them); ``line`` the line number of byte
    ``start``.
    ``settle(data)``: where the complete records of ``data`` (the bytes from ``start``
    to the last "\\n") end, when quotes do not pair up there, or always."""
    scan = _Pass(start, line, quote, piece_bytes, prefix.copy() if prefix is not None else None)
    at = start
    while True:
        block = read(at, at + BLOCK_BYTES)
        scan.feed(block)
        at += len(block)
        if len(block) < BLOCK_BYTES:
            break
    data, records_end = b"", scan.taken
    if settle is not None and (always_settle or scan.quotes_odd) and scan.taken > start:
        data = read(start, scan.taken)
        records_end = start + settle(data)
    if final:
        return scan.result(size=at, take_tail=True, complete=records_end == scan.taken)
    if records_end != scan.taken:
        return _settled(prefix, data[:records_end - start], start, line, size=at)
    return scan.result(size=at, take_tail=False, complete=True)


def _settled(prefix: Any | None, data: bytes, start: int, line: int, size: int) -> Scan:
    """The scan of ``data`` from ``start``, in one piece."""
    digest = None
    if prefix is not None:
        digest = prefix.copy()
        digest.update(data)
    return Scan(size, start + len(data), True, data.count(b"\n"), digest.hexdigest() if digest else None,
                [[start, start + len(data), line, zlib.crc32(data)]])


@dataclass
class _Pass:
    """A pass under way: the bytes up to ``taken`` end with a "\\n" and are hashed,
    counted and cut into pieces; ``tail`` holds the bytes read after them."""

    start: int
    line: int
    quote: bytes | None
    piece_bytes: int | None
    digest: Any
    taken: int = -1
    lines: int = 0
    quotes_odd: bool = False  # over [start, taken)
    tail: list[bytes] = field(default_factory=list)
    pieces: list[Piece] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.taken = self.start
        self.pieces.append([self.start, self.start, self.line, 0])

    def feed(self, block: bytes) -> None:
        last = block.rfind(b"\n")
        if last < 0:
            if block:
                self.tail.append(block)
            return
        data = b"".join([*self.tail, block[:last + 1]]) if self.tail else block[:last + 1]
        self.tail = [block[last + 1:]] if last + 1 < len(block) else []
        if self.digest is not None:
            self.digest.update(data)
        at = 0
        while (cut := self._cut(data, at)) is not None:
            self._take(data[at:cut])
            self.pieces.append([self.taken, self.taken, self.line + self.lines, 0])
            at = cut
        self._take(data[at:])

    def _cut(self, data: bytes, at: int) -> int | None:
        """Where in ``data`` (whose byte ``at`` is at ``taken``) the current piece ends:
        after the first "\\n" outside quotes that makes it ``piece_bytes`` long; None
        when none does."""
        if self.piece_bytes is None:
            return None
        odd, counted = self.quotes_odd, at
        newline = data.find(b"\n", at + max(0, self.pieces[-1][0] + self.piece_bytes - 1 - self.taken))
        while newline >= 0:
            if self.quote is not None:
                odd ^= data.count(self.quote, counted, newline) % 2 == 1
                counted = newline
            if not odd:
                return newline + 1
            newline = data.find(b"\n", newline + 1)
        return None

    def _take(self, data: bytes) -> None:
        piece = self.pieces[-1]
        piece[1] += len(data)
        piece[3] = zlib.crc32(data, piece[3])
        self.lines += data.count(b"\n")
        if self.quote is not None:
            self.quotes_odd ^= data.count(self.quote) % 2 == 1
        self.taken += len(data)

    def result(self, size: int, take_tail: bool, complete: bool) -> Scan:
        if take_tail and self.tail:
            tail = b"".join(self.tail)
            if self.digest is not None:
                self.digest.update(tail)
            self._take(tail)
            complete = False
        pieces = [piece for piece in self.pieces if piece[1] > piece[0]]
        digest = self.digest.hexdigest() if self.digest is not None else None
        return Scan(size, self.taken, complete, self.lines, digest, pieces)


class RangeFile(io.RawIOBase):
    """A file's first ``size`` bytes as a read-only, seekable file object, for readers
    that look at a few parts of a file (pyarrow reading a Parquet footer).

    >>> RangeFile(lambda start, end: b"PAR1 data PAR1"[start:end], 14).read(4)
    b'PAR1'
    """

    def __init__(self, read: RangeReader, size: int) -> None:
        super().__init__()
        self._read, self._size, self._at = read, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._at, io.SEEK_END: self._size}[whence]
        self._at = max(0, base + offset)
        return self._at

    def tell(self) -> int:
        return self._at

    def readinto(self, buffer: Any) -> int:
        data = self._read(self._at, min(self._size, self._at + len(buffer)))
        buffer[:len(data)] = data
        self._at += len(data)
        return len(data)
