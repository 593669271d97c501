"""``FileSource``: rows from the files of a directory (or from one file).

How changes are found
---------------------
For every file it has read, the source keeps (in its position) how many bytes it has
consumed, the file's size and mtime when it did, a blake2b digest of the consumed bytes,
a generation counter and the number of lines consumed.  Each ``discover()`` compares the
files with that:

* a file not seen before gives a ``new`` segment (all its complete records);
* a file that grew and whose consumed prefix still has the same digest gives an
  ``append`` segment (only the new complete records);
* any other change gives a ``modify`` segment: retract every row the file produced, then
  read it again as the next generation;
* a file that is gone gives a ``delete`` segment: retract every row the file produced.

A record is complete when its line ends with "\\n" (for CSV: outside a quoted field).
An unfinished last record is read in static mode, and in streaming mode once the file
has not changed between two discovers; if the file then grows, that record has changed,
so the file is read again (a modify).  Unchanged lines keep their ids, so downstream
this is an update of the changed rows only.

Segment format (one file, one input transaction; JSON-able)::

    {"kind": "new" | "append" | "modify" | "delete",
     "file": "sub/a.csv",          # key of the file: its path relative to the source path
     "path": "logs/sub/a.csv",     # path to open and to show in messages
     "metadata": {"path": "/.../a.csv", ...},   # the _metadata column's value
     "generation": 0,              # incremented by every modify
     "start": 7, "end": 120,       # bytes [start, end) to parse (a CSV header is before start)
     "line": 2,                    # file line number of byte ``start``
     "lines_end": 9,               # lines consumed up to ``end``
     "size": 130, "mtime_ns": ..., "seen_at": 1701270092,   # as seen by discover()
     "version": "9b2c...",         # an object's ETag (FileEntry.version), where it has one
     "digest": "...",              # blake2b of bytes [0, end); None where nothing compares
                                   # it (a static run without persistence)
     "pieces": [[7, 120, 2, 3735928559]],   # [start, end) cut at records' ends into
                                   # parts of about PIECE_BYTES: [start, end, line, crc32]
     "complete": True,             # False: an unfinished last record was read
     "header": ["user", "t"],      # csv only
     "retract": {"generation": 0, "offset": 120}}   # modify and delete only

A delete segment has only kind, file, path, generation and retract.

Position format::

    {"version": 1, "files": {"sub/a.csv": {"path", "offset", "size", "mtime_ns", "digest",
                                          "generation", "lines", "header", "complete"}}}

(and an object's "version", where it has one).

``files`` grows with every file read: a commit stores only the files its step changed
(``committed_position``, an index: ``persistence/index.py``).

Rows to retract later are kept as Arrow under the ``BlobStorage`` given to ``open()`` as
``files/<blake2b of the file key>/<generation>-<start>.arrow`` (in memory without one).
"""

from __future__ import annotations

import collections
import fnmatch
import functools
import hashlib
import json
import logging
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from sparkway.connectors.base import ExecutorRead, Segment, Source, record_ids
from sparkway.connectors.file_scan import RangeFile, RangeReader, Scan, hash_prefix, piece_matches, scan_records
from sparkway.connectors.formats.csv import (
    CsvParserSettings, check_csv_header, csv_complete_end, parse_csv, parse_csv_header,
)
from sparkway.connectors.formats.jsonlines import parse_json_lines
from sparkway.connectors.formats.parquet import check_parquet_schema, is_complete, parse_parquet
from sparkway.connectors.formats.plaintext import parse_plaintext
from sparkway.connectors.formats.values import ParsedRows, SchemaMismatchError, decode, gc_paused
from sparkway.core import changes
from sparkway.core.changes import DIFF, ID
from sparkway.core.columns import Column
from sparkway.core.dtypes import BYTES, JSON, STR, DType
from sparkway.errors import PlanError
from sparkway.persistence.index import IndexedPosition
from sparkway.persistence.storage import BlobStorage

log = logging.getLogger("sparkway")

FORMATS = ("csv", "json", "plaintext", "plaintext_by_file", "binary", "parquet")
_LINE_FORMATS = ("csv", "json", "plaintext")
METADATA_COLUMN = "_metadata"


# ------------------------------------------------------------------------ filesystem


@dataclass(frozen=True)
class FileEntry:
    path: str  # to open and to show
    size: int
    mtime_ns: int
    version: str = ""  # an object's ETag, where the store gives one

    @property
    def stats(self) -> tuple[int, int, str]:
        """What changes when the file does (its bytes are compared only then)."""
        return self.size, self.mtime_ns, self.version


#: a streaming file's last line without a newline is read once the file has not changed
#: for this long (the writer may be in the middle of the line)
STABLE_AFTER_S = 0.5


class LocalFiles:
    """The files under a path on the local filesystem: where the source lists and opens
    files.  Another filesystem is a class with the same methods (``list``, ``exists``,
    ``read``, ``metadata`` and a ``root``), e.g. ``connectors.object_store.ObjectStoreFiles``;
    with ``read_by_tasks`` true, Spark's tasks may read its files themselves."""

    read_by_tasks = True

    def __init__(self, root: str, pattern: str = "*") -> None:
        self.root = root
        self.pattern = pattern

    def list(self) -> dict[str, FileEntry]:
        """Files by key (path relative to the root, "/"-separated), sorted by key."""
        if not os.path.exists(self.root):
            return {}
        if os.path.isfile(self.root):
            entry = self._entry(self.root)
            return {os.path.basename(self.root): entry} if entry else {}
        found: dict[str, FileEntry] = {}
        for folder, dirs, names in os.walk(self.root, onerror=_log_walk_error):
            dirs.sort()
            for name in sorted(names):
                path = os.path.join(folder, name)
                key = os.path.relpath(path, self.root).replace(os.sep, "/")
                if not self._matches(name, key):
                    continue
                entry = self._entry(path)
                if entry is not None:
                    found[key] = entry
        return dict(sorted(found.items()))

    def _matches(self, name: str, key: str) -> bool:
        target = key if "/" in self.pattern else name
        return fnmatch.fnmatchcase(target, self.pattern)

    @staticmethod
    def _entry(path: str) -> FileEntry | None:
        try:
            st = os.stat(path)
        except OSError:  # vanished between listing and stat
            return None
        return FileEntry(path, st.st_size, st.st_mtime_ns)

    def exists(self) -> bool:
        return os.path.exists(self.root)

    @staticmethod
    def read(path: str, start: int = 0, end: int | None = None) -> bytes:
        with open(path, "rb") as f:
            if start:
                f.seek(start)
            return f.read() if end is None else f.read(max(end - start, 0))

    @staticmethod
    def metadata(entry: FileEntry, size: int, seen_at: int) -> dict[str, Any]:
        """The ``_metadata`` value of a file read at ``size`` bytes."""
        return {"path": os.path.abspath(entry.path), "size": size, "modified_at": entry.mtime_ns // 10**9, "seen_at": seen_at}


def _log_walk_error(error: OSError) -> None:
    log.warning("cannot list %s: %s", error.filename, error.strerror or error)


# ------------------------------------------------------------------------ row store


class RowStore:
    """The rows each file produced, by (generation, start of chunk), kept so they can
    be retracted exactly: in a ``BlobStorage`` when one is given, else in memory."""

    def __init__(self, storage: BlobStorage | None) -> None:
        self.storage = storage
        self._memory: dict[str, dict[tuple[int, int], pa.Table]] = {}

    @staticmethod
    def _folder(file: str) -> str:
        return "files/" + hashlib.blake2b(file.encode(), digest_size=16).hexdigest()

    def put(self, file: str, generation: int, start: int, table: pa.Table) -> None:
        """Store one chunk's rows; storing the same chunk again overwrites it."""
        if self.storage is None:
            chunks = self._memory.setdefault(file, {})
            if table.num_rows:
                chunks[(generation, start)] = table
            else:
                chunks.pop((generation, start), None)
            return
        blob = f"{self._folder(file)}/{generation}-{start}.arrow"
        if table.num_rows:
            self.storage.write_arrow(blob, table, compression="zstd")
        else:
            self.storage.delete(blob)

    def _keys(self, file: str) -> list[tuple[int, int]]:
        if self.storage is None:
            return sorted(self._memory.get(file, {}))
        keys = []
        for name in self.storage.list(self._folder(file)):
            gen, _, start = name.removesuffix(".arrow").partition("-")
            if gen.isdigit() and start.isdigit():
                keys.append((int(gen), int(start)))
        return sorted(keys)

    def committed(self, file: str, generation: int, offset: int) -> list[int]:
        """The starts of a generation's chunks before ``offset``.  Chunks at or after it
        were read in steps that were never committed, so they are left out."""
        return [start for gen, start in self._keys(file) if gen == generation and start < offset]

    def chunk(self, file: str, generation: int, start: int) -> pa.Table:
        """The rows one chunk produced."""
        if self.storage is None:
            return self._memory[file][(generation, start)]
        return self.storage.read_arrow(f"{self._folder(file)}/{generation}-{start}.arrow")

    def drop(self, file: str, keep: tuple[int, int, int] | None = None) -> None:
        """Forget a file's rows, except the chunks of one read: ``keep`` = (generation,
        start, end) keeps that generation's chunks starting in [start, end)."""
        def kept(gen: int, start: int) -> bool:
            return keep is not None and gen == keep[0] and keep[1] <= start < max(keep[2], keep[1] + 1)

        if self.storage is None:
            chunks = self._memory.pop(file, {})
            chunks = {key: table for key, table in chunks.items() if kept(*key)}
            if chunks:
                self._memory[file] = chunks
            return
        folder = self._folder(file)
        if keep is None:
            self.storage.delete(folder)
            return
        for gen, start in self._keys(file):
            if not kept(gen, start):
                self.storage.delete(f"{folder}/{gen}-{start}.arrow")


# --------------------------------------------------------------------------- source


class FileSource(Source):
    """Rows from the files under ``path`` (a file, or a directory read recursively).

    ``format`` is "csv", "json" (JSON lines), "plaintext" (a row per line),
    "plaintext_by_file" (a row per file, str), "binary" (a row per file, bytes) or
    "parquet" (a whole file at a time: a changed file is read again, see
    ``formats.parquet``); "plaintext", "plaintext_by_file" and "binary" have a single
    column, ``data`` unless ``columns`` names another one.

    >>> from sparkway.core.dtypes import INT, STR
    >>> src = FileSource("logs/", format="csv", mode="static", name="logs",
    ...                  columns={"user_id": Column("user_id", STR),
    ...                           "access_time": Column("access_time", INT)})
    >>> src.open(None)
    >>> segments = src.discover()        # doctest: +SKIP
    >>> table = src.read(segments)       # doctest: +SKIP
    >>> src.advance(segments)            # doctest: +SKIP
    """

    def __init__(
        self,
        path: str,
        *,
        format: str,
        columns: dict[str, Column],
        mode: str = "streaming",
        name: str | None = None,
        with_metadata: bool = False,
        csv_settings: CsvParserSettings | None = None,
        object_pattern: str = "*",
        connector_label: str = "FileReader",
        files: Any = None,
        retract_when_emptied: bool = False,
        on_bad_file: str = "skip",
    ) -> None:
        if format not in FORMATS:
            raise PlanError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
        if mode not in ("static", "streaming"):
            raise PlanError(f"unknown mode {mode!r}; expected 'static' or 'streaming'")
        if on_bad_file not in BAD_FILE_POLICIES:
            raise PlanError(f"on_bad_file must be one of {list(BAD_FILE_POLICIES)}, not {on_bad_file!r}")
        self.format = format
        self.mode = mode
        self.name = name
        self.with_metadata = with_metadata
        self.csv_settings = csv_settings or CsvParserSettings()
        self.connector_label = connector_label
        self.schema: dict[str, Column] = _schema_for(format, columns)
        self.columns: dict[str, DType] = {n: c.dtype for n, c in self.schema.items()}
        if with_metadata:
            self.columns[METADATA_COLUMN] = JSON
        self.key_columns = [n for n, c in self.schema.items() if c.primary_key]
        self.files = files if files is not None else LocalFiles(path, object_pattern)
        self.retract_when_emptied = retract_when_emptied
        self.on_bad_file = on_bad_file
        self.open(None)

    # ------------------------------------------------------------------ life cycle

    def open(self, storage: BlobStorage | None) -> None:
        """Starts from nothing read (a run restores its position afterwards, if any)."""
        self._state: dict[str, dict[str, Any]] = {}  # committed, per file key
        self._changed: set[str] = set()  # the file keys advanced since the last commit
        self._store = RowStore(storage)
        #: per file, its stats at the previous discover and since when it has had them
        self._last_seen: dict[str, tuple[tuple[int, int, str], float]] = {}
        self._cache: dict[str, tuple[Any, Segment | None]] = {}
        self._warned: set[tuple[Any, ...]] = set()
        self._static_pending: list[Segment] | None = None
        self._finished = False
        self._skipped: collections.Counter[str] = collections.Counter()  # rows per file, this run

    def position(self) -> dict[str, Any]:
        return {"version": 1, "files": json.loads(json.dumps(self._state))}

    def committed_position(self) -> IndexedPosition:
        changes = {key: self._state.get(key) for key in sorted(self._changed)}
        self._changed.clear()
        return IndexedPosition({"version": 1}, "files", changes, lambda: self._state)

    def restore(self, position: dict[str, Any]) -> None:
        self._state = json.loads(json.dumps(position.get("files", {})))
        self._changed.clear()
        self._cache.clear()
        self._static_pending = None
        self._finished = False

    def _finish(self) -> None:
        if not self._finished:
            self._finished = True
            log.warning("%s: Closing the data source", self.label)

    def planned_bytes(self) -> int:
        """The size of the files the path lists now (those a restored position has
        read included: unknown before the restore)."""
        try:
            return sum(entry.size for entry in self.files.list().values())
        except OSError:
            return 0

    # -------------------------------------------------------------------- discover

    def discover(self) -> list[Segment]:
        if self.mode == "streaming":
            return self._scan(final=False)
        if self._static_pending is None:
            self._static_pending = self._scan(final=True)
            if not self._static_pending:
                self._finish()
        return list(self._static_pending)

    def read_to_end(self, segments: list[Segment]) -> bool:
        if self.is_finished or self._static_pending is None:
            return self.is_finished and not segments
        return {_segment_key(s) for s in self._static_pending} <= {_segment_key(s) for s in segments}

    def _scan(self, *, final: bool) -> list[Segment]:
        entries = self.files.list()
        if not entries and not self.files.exists():
            return self._missing_root(final)
        self._warned.discard(("missing",))  # said again should it go missing again
        if not entries and self._state and not self.retract_when_emptied:
            return self._emptied()
        self._warned.discard(("emptied",))
        seen_at = int(time.time())
        now = time.monotonic()
        since = {key: self._unchanged_since(key, entry, now) for key, entry in entries.items()}
        changed = [key for key, entry in entries.items() if self._may_have_changed(key, entry)]
        # a file's pass is mostly hashing and reading, which other threads may run meanwhile
        with ThreadPoolExecutor(min(len(changed), os.cpu_count() or 1) or 1) as pool:
            found = dict(zip(changed, pool.map(
                lambda key: self._scan_file(key, entries[key], final or since[key] <= now - STABLE_AFTER_S, seen_at),
                changed)))
        segments = [found.get(key) if key in entries else self._delete_segment(key)
                    for key in sorted(set(entries) | set(self._state))]
        segments = [segment for segment in segments if segment is not None]
        self._last_seen = {key: (e.stats, since[key]) for key, e in entries.items()}
        self._cache = {k: v for k, v in self._cache.items() if k in entries}
        return segments

    def _unchanged_since(self, key: str, entry: FileEntry, now: float) -> float:
        """Since when the file has had its size and modification time (``now`` if they
        are new)."""
        stats, since = self._last_seen.get(key, (None, now))
        return since if stats == entry.stats else now

    def _missing_root(self, final: bool) -> list[Segment]:
        """No change while the input path does not exist.  A static read of a path that
        does not exist is an error (a typo, a moved folder: Pathway reads nothing and
        exits as if all went well); a streaming one waits for the path to appear, or to
        come back (an unmounted disk), and retracts none of the rows read from it."""
        if final:
            raise FileNotFoundError(
                f"{self.label}: the input path {self.files.root} does not exist; check the path, "
                'or read it with mode="streaming" to wait for it to appear'
            )
        what = "its rows read so far stay" if self._state else "nothing to read until it appears"
        self._warn_once(("missing",), "%s: %s does not exist; %s", self.label, self.files.root, what)
        return []

    def _emptied(self) -> list[Segment]:
        """No change while the input path, which had files, lists none: an unmounted disk
        (its empty mount point), a folder emptied by mistake or being replaced would
        otherwise retract every row read from it, and a snapshot fed by them would be
        emptied.  ``retract_when_emptied=True`` retracts them, as deleting the files
        one by one does."""
        self._warn_once(
            ("emptied",), "%s: %s lists no file, where it had %d; their rows stay until files come back "
            "(read it with retract_when_emptied=True to retract them)", self.label, self.files.root, len(self._state))
        return []

    def _may_have_changed(self, key: str, entry: FileEntry) -> bool:
        """False for a file read whole and not changed since: no need to open it."""
        state = self._state.get(key)
        if state is None:
            return True
        listed = (state["size"], state["mtime_ns"], state.get("version", ""))
        return entry.stats != listed or state["offset"] != entry.size

    def _scan_file(self, key: str, entry: FileEntry, stable: bool, seen_at: int) -> Segment | None:
        state = self._state.get(key)
        stat = entry.stats
        committed = None if state is None else (state["offset"], state["digest"], state["generation"])
        cache_key = (stat, stable, committed)
        cached = self._cache.get(key)
        if cached is not None and cached[0] == cache_key:
            return cached[1]
        segment = self._examine(key, entry, state, stable, seen_at)
        self._cache[key] = (cache_key, segment)
        return segment

    def _examine(
        self, key: str, entry: FileEntry, state: dict[str, Any] | None, final: bool, seen_at: int
    ) -> Segment | None:
        ctx = _Ctx(key, entry, functools.partial(self.files.read, entry.path), final, seen_at)
        try:
            if not ctx.read(0, 1):
                self._warn_once((key, entry, "empty"), "%s: empty file; no rows", entry.path)
                if state is None:
                    return None
            if state is None:
                return self._segment(ctx, "new", 0, None)
            whole = None
            if self.format in _LINE_FORMATS:
                prefix = _unchanged_prefix(ctx.read, state)
                if prefix is not None:
                    return self._segment(ctx, "append", state["generation"], None, state, prefix)
            else:
                whole = self._scan_bytes(ctx, hash_prefix(ctx.read, 0), 0, 1)
                if whole.digest == state["digest"]:
                    return None  # touched, not changed
            return self._segment(ctx, "modify", state["generation"] + 1, state, whole=whole)
        except OSError as exc:
            self._warn_once((key, entry, "unreadable"), "%s: cannot read the file (%s); skipped", entry.path, exc)
            return None
        except SchemaMismatchError as error:
            if self.mode == "static" or self.on_bad_file == "stop":
                raise
            # one bad file must not stop a pipeline that runs for good: it waits for a fix
            if (key, entry, "schema") not in self._warned:
                self._warned.add((key, entry, "schema"))
                log.error("%s; the file is skipped until it changes", error)
            return None

    def _segment(
        self, ctx: "_Ctx", kind: str, generation: int,
        retract: dict[str, Any] | None, state: dict[str, Any] | None = None, prefix: Any = None,
        whole: Scan | None = None,
    ) -> Segment | None:
        """The segment reading a file's complete records after ``state`` (from the start
        without one; ``prefix``: the digest of the bytes before them; ``whole``: the scan
        of a file of a format without records, made already); None when there is nothing
        to read and nothing to retract."""
        start = state["offset"] if state else 0
        lines = state["lines"] if state else 0
        header = state.get("header") if state else None
        if self.format == "csv" and header is None:
            parsed = self._csv_header(ctx)
            if parsed is not None:
                header, start, lines = parsed
                check_csv_header(ctx.entry.path, header, self.schema)
            elif retract is None or ctx.read(0, 1):
                return None  # the header is not complete yet: wait for it
        if prefix is None and self._compares_digests:
            prefix = hash_prefix(ctx.read, start)
        scan = whole or self._scan_bytes(ctx, prefix, start, lines + 1)
        if self.format == "parquet" and scan.size:
            if not is_complete(ctx.read, scan.size):
                if ctx.final and self.mode == "static":
                    raise SchemaMismatchError(f"{ctx.entry.path}: not a Parquet file (or one cut short: it does "
                                              "not start and end with PAR1)")
                return None  # being written: its footer comes last
            check_parquet_schema(ctx.entry.path, RangeFile(ctx.read, scan.size), self.schema)
        if scan.end <= start and retract is None:
            return None
        segment = {
            "kind": kind,
            "file": ctx.key,
            "path": ctx.entry.path,
            "metadata": self.files.metadata(ctx.entry, scan.size, ctx.seen_at),
            "generation": generation,
            "start": start,
            "end": scan.end,
            "line": lines + 1,
            "lines_end": lines + scan.lines,
            # the size read and the mtime stat'ed before reading: when the file changed
            # in between, they match no later stat, so the file is looked at again
            "size": scan.size,
            "mtime_ns": ctx.entry.mtime_ns,
            **({"version": ctx.entry.version} if ctx.entry.version else {}),
            "seen_at": ctx.seen_at,
            "digest": scan.digest,
            "pieces": scan.pieces,
            "complete": scan.complete,
        }
        if self.format == "csv":
            segment["header"] = header
        if retract is not None:
            segment["retract"] = {"generation": retract["generation"], "offset": retract["offset"]}
        return segment

    @property
    def _compares_digests(self) -> bool:
        """Whether a file's digest may be compared later: a stream looks at its files
        again, a persisted run in its next run; a static run without persistence never."""
        return self.mode == "streaming" or self._store.storage is not None

    def _csv_header(self, ctx: "_Ctx") -> tuple[list[str], int, int] | None:
        """``parse_csv_header`` over the file's first bytes, more of them while the
        header goes on past them.  In streaming mode a header waits for its "\n" even
        when the file looks stable: a header cut short would fail the schema check and
        stop the run."""
        final, size = ctx.final and self.mode == "static", HEADER_BYTES
        while True:
            head = ctx.read(0, size)
            parsed = parse_csv_header(head, self.csv_settings, final=final and len(head) < size)
            if parsed is not None or len(head) < size:
                return parsed
            size *= 4

    def _scan_bytes(self, ctx: "_Ctx", prefix: Any | None, start: int, line: int) -> Scan:
        """One pass over the file's bytes after ``start`` (``file_scan``)."""
        if self.format not in _LINE_FORMATS:
            return scan_records(ctx.read, prefix, start, line=line, quote=None, final=True, piece_bytes=None)
        settings = self.csv_settings
        quoted = self.format == "csv" and settings.enable_quoting
        escaped = quoted and settings.escape is not None
        return scan_records(
            ctx.read, prefix, start, line=line, final=ctx.final,
            quote=settings.quote.encode() if quoted and not escaped else None,
            piece_bytes=None if escaped else PIECE_BYTES,  # quotes counted cannot cut escaped CSV
            settle=functools.partial(_csv_records_end, settings) if quoted else None, always_settle=escaped,
        )

    def _delete_segment(self, key: str) -> Segment:
        state = self._state[key]
        return {
            "kind": "delete",
            "file": key,
            "path": state["path"],
            "generation": state["generation"],
            "retract": {"generation": state["generation"], "offset": state["offset"]},
        }

    def _warn_once(self, key: tuple[Any, ...], message: str, *args: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message, *args)

    # ------------------------------------------------------------------------ read

    def read(self, segments: list[Segment]) -> pa.Table:
        reader = self._chunk_reader()
        parts = []
        for piece in self._pieces(segments):
            tables, skipped = reader.changes(piece, self._store)
            parts += tables
            self.count_skipped(skipped)
        if not parts:
            return reader.output_schema.empty_table()
        return pa.concat_tables(parts)

    def inserts_distinct_rows(self, segments: list[Segment]) -> bool:
        """New files and appended bytes: rows never read before, each with an id of its
        own (its file and place), unless a primary key makes the ids."""
        return not self.key_columns and all("retract" not in segment for segment in segments)

    def read_on_executors(self, segments: list[Segment]) -> ExecutorRead | None:
        """Large input (at least ``EXECUTOR_READ_BYTES`` to parse) is parsed by Spark's
        tasks, a piece of at most ``PIECE_BYTES`` each, which also keep its rows in the
        persistence storage; not when the rows must stay in this process for a later
        retraction (streaming without persistence), or when the tasks cannot open the
        files (``read_by_tasks``: a PyFilesystem object stays in this process)."""
        if not self.files.read_by_tasks or (self._store.storage is None and self.mode != "static"):
            return None
        size = sum(s.get("end", 0) - s.get("start", 0) for s in segments)
        if size < EXECUTOR_READ_BYTES:
            return None
        keep = RowStore(self._store.storage) if self._store.storage is not None else None
        reader = self._chunk_reader()
        pieces = [p if p.get("kind") == "retract" else {**p, "path": self._task_path(p["path"])}
                  for p in self._pieces(segments, split=True)]
        ends: dict[str, int] = {}
        for piece in pieces:
            if piece.get("kind") != "retract":
                ends[piece["path"]] = max(ends.get(piece["path"], 0), piece["end"])
        return ExecutorRead(pieces, functools.partial(_read_piece, reader, keep), reader.output_schema,
                            self.count_skipped, size, functools.partial(_files_seen, self.files, ends))

    def _task_path(self, path: str) -> str:
        """A path as a task opens it: a task's working folder is not this program's (a
        cluster's executor, a Connect server)."""
        return os.path.abspath(path) if isinstance(self.files, LocalFiles) else path

    def count_skipped(self, skipped: dict[str, int]) -> None:
        """Adds rows skipped (that did not parse) per file to the run's count, which
        ``close`` reports."""
        self._skipped.update(skipped)

    def close(self) -> None:
        if self._skipped:
            files = sorted(self._skipped.items(), key=lambda item: -item[1])
            listed = ", ".join(f"{path} ({count})" for path, count in files[:SKIPPED_FILES_LISTED])
            more = f" and {len(files) - SKIPPED_FILES_LISTED} more file(s)" if len(files) > SKIPPED_FILES_LISTED else ""
            log.warning("%s: %d row(s) skipped in this run, which did not parse: %s%s",
                        self.label, sum(self._skipped.values()), listed, more)
            self._skipped.clear()

    def _chunk_reader(self) -> "ChunkReader":
        return ChunkReader(
            self.name or "", self.format, self.schema, self.csv_settings, self.with_metadata, self.keep_errors,
            bool(self.key_columns), self.files,
        )

    def _pieces(self, segments: list[Segment], split: bool = False) -> list[Segment]:
        """What reading the segments takes: for each, the committed chunks it retracts
        (``{"kind": "retract", "file", "generation", "start"}``), then the bytes it reads
        (the segment itself, or with ``split`` its pieces of about ``PIECE_BYTES``)."""
        pieces: list[Segment] = []
        for segment in segments:
            retract = segment.get("retract")
            if retract is not None:
                for start in self._store.committed(segment["file"], retract["generation"], retract["offset"]):
                    pieces.append({"kind": "retract", "file": segment["file"], "generation": retract["generation"],
                                   "start": start})
            if segment["kind"] != "delete":
                pieces += self._split(segment) if split else [segment]
        return pieces

    @staticmethod
    def _split(segment: Segment) -> list[Segment]:
        """A segment as the pieces its scan cut it into (``file_scan``): each ends at a
        record's end.  A segment logged before pieces existed is one piece."""
        pieces = segment.get("pieces")
        if not pieces or len(pieces) == 1:
            return [segment]
        return [{**segment, "start": p[0], "end": p[1], "line": p[2], "pieces": [p]} for p in pieces]

    # --------------------------------------------------------------------- advance

    def advance(self, segments: list[Segment]) -> None:
        for segment in segments:
            key = segment["file"]
            self._changed.add(key)
            if segment["kind"] == "delete":
                self._state.pop(key, None)
                self._store.drop(key)
                continue
            self._state[key] = _state_after(segment)
            if segment["kind"] in ("new", "modify"):
                # older generations, and chunks of reads that were never committed
                self._store.drop(key, keep=(segment["generation"], segment["start"], segment["end"]))
        if self._static_pending is not None:
            done = {_segment_key(s) for s in segments}
            self._static_pending = [s for s in self._static_pending if _segment_key(s) not in done]
            if not self._static_pending:
                self._finish()


#: input at least this large is parsed on Spark's executors (``FileSource.read_on_executors``)
EXECUTOR_READ_BYTES = 32 << 20
#: the bytes of one task of such a read
PIECE_BYTES = 16 << 20
#: the bytes a CSV header is looked for in first (more if it is longer)
HEADER_BYTES = 64 << 10
#: files named in the end-of-run count of skipped rows (those with the most)
SKIPPED_FILES_LISTED = 10
#: what a streaming read does with a file that does not fit the schema (a bad header):
#: "skip" it, with an error, until it changes; or "stop" the run with that error (a
#: static read always stops)
BAD_FILE_POLICIES = ("skip", "stop")


@dataclass(frozen=True)
class ChunkReader:
    """How a piece of a file becomes changes; picklable, so that executors read too."""

    name: str  # the source's, in the row ids
    format: str
    schema: dict[str, Column]
    csv_settings: CsvParserSettings
    with_metadata: bool
    keep_errors: bool
    keyed: bool  # ids come from primary key columns (made by the engine)
    files: Any

    @property
    def output_schema(self) -> pa.Schema:
        """The changes, and keeping Error values their columns."""
        schema = changes.arrow_schema({**{n: c.dtype for n, c in self.schema.items()}, **self._metadata_columns()})
        return pa.schema([*schema, *changes.error_fields()]) if self.keep_errors else schema

    def _metadata_columns(self) -> dict[str, DType]:
        return {METADATA_COLUMN: JSON} if self.with_metadata else {}

    @property
    def stored_schema(self) -> pa.Schema:
        """A chunk's rows as they are kept for a later retraction (with ERRORS, keeping
        Error values)."""
        schema = self.output_schema
        schema = schema.remove(schema.get_field_index(DIFF))
        if self.keep_errors:
            schema = schema.remove(schema.get_field_index(changes.LOGGED))
        return schema

    def changes(self, piece: Segment, store: "RowStore | None") -> tuple[list[pa.Table], dict[str, int]]:
        """The changes of a piece (``FileSource._pieces``): a committed chunk's rows
        retracted, or the rows parsed from a range of bytes (kept in ``store``) and the
        changes that log their errors; and the rows skipped, by file."""
        if piece["kind"] == "retract":
            assert store is not None
            return [self._as_changes(store.chunk(piece["file"], piece["generation"], piece["start"]), -1)], {}
        chunk, logged, skipped = self._read_chunk(piece)
        if store is not None:
            store.put(piece["file"], piece["generation"], piece["start"], chunk)
        return [self._as_changes(chunk, 1), *([logged] if logged is not None else [])], skipped

    def _as_changes(self, chunk: pa.Table, diff: int) -> pa.Table:
        """A chunk's rows (stored in this run or an earlier one) as changes."""
        with_diff = chunk.append_column(DIFF, pa.array(np.full(chunk.num_rows, diff, dtype=np.int64)))
        return changes.conform(with_diff, self.output_schema)

    def _read_chunk(self, segment: Segment) -> tuple[pa.Table, pa.Table | None, dict[str, int]]:
        """The chunk's rows, the changes logging its errors (None: none), and the rows
        skipped, by file."""
        start, end, path = segment["start"], segment["end"], segment["path"]
        if end <= start:
            return self.stored_schema.empty_table(), None, {}
        try:
            data = self.files.read(path, start, end)
        except OSError as exc:
            log.warning("%s: cannot read the file (%s); its new rows are skipped", path, exc)
            return self.stored_schema.empty_table(), None, {}
        if not all(piece_matches(data, start, piece) for piece in segment.get("pieces", ())):
            log.warning("%s: changed after it was listed; it will be read again", path)
        with gc_paused():
            parsed = self._parse(segment, data)
            skipped = {path: parsed.skipped} if parsed.skipped else {}
            return self._chunk_table(segment, parsed), self._logged(segment, parsed), skipped

    def _parse(self, segment: Segment, data: bytes) -> ParsedRows:
        path, line = segment["path"], segment["line"]
        if self.format == "csv":
            return parse_csv(
                data, path=path, first_line=line, header=segment["header"],
                columns=self.schema, settings=self.csv_settings, keep_errors=self.keep_errors,
            )
        if self.format == "parquet":
            return parse_parquet(data, path=path, columns=self.schema)
        if self.format == "json":
            return parse_json_lines(data, path=path, first_line=line, columns=self.schema, keep_errors=self.keep_errors)
        column = next(iter(self.schema))
        if self.format == "plaintext":
            return parse_plaintext(data, path=path, first_line=line, column=column)
        value: Any = data if self.format == "binary" else decode(data, path, 1)
        return ParsedRows([0], {column: [value]})

    def _chunk_table(self, segment: Segment, parsed: ParsedRows) -> pa.Table:
        arrays = [pa.array(self._ids(segment, parsed), pa.int64())]
        for name, column in self.schema.items():
            values = parsed.columns[name]
            kind = column.dtype.arrow_type()
            arrays.append(values.cast(kind) if isinstance(values, pa.Array) else pa.array(values, kind))
        if self.with_metadata:
            arrays.append(pa.array([_metadata_text(segment)] * len(parsed), pa.string()))
        if self.keep_errors:
            errors = parsed.errors if parsed.errors is not None else [[]] * len(parsed)
            arrays.append(pa.array([e or None for e in errors], pa.list_(pa.string())))
        return pa.Table.from_arrays(arrays, schema=self.stored_schema)

    def _logged(self, segment: Segment, parsed: ParsedRows) -> pa.Table | None:
        """Changes (of ``_diff`` 0) that log the chunk's errors, one per row with errors."""
        if not parsed.messages:
            return None
        ordinals = list(parsed.messages)
        logged = pa.table({
            ID: pa.array(record_ids(self.name, segment["file"], ordinals), pa.int64()),
            DIFF: pa.array([0] * len(ordinals), pa.int64()),
            changes.LOGGED: pa.array([parsed.messages[o] for o in ordinals], pa.list_(pa.string())),
        })
        return changes.conform(logged, self.output_schema)

    def _ids(self, segment: Segment, parsed: ParsedRows) -> Sequence[int]:
        if self.keyed:
            return [0] * len(parsed)  # made from the key by the engine (Source.key_columns)
        return record_ids(self.name, segment["file"], parsed.ordinals)


def _read_piece(reader: ChunkReader, store: RowStore | None, piece: Segment) -> tuple[pa.Table, dict[str, int]]:
    """A piece's changes, and the rows skipped by file, read in a Spark task
    (``FileSource.read_on_executors``)."""
    parts, skipped = reader.changes(piece, store)
    return (pa.concat_tables(parts) if len(parts) > 1 else parts[0]), skipped


def _files_seen(files: Any, ends: dict[str, int]) -> bool:
    """Whether this process sees the files, each at least ``ends[path]`` bytes long (a
    Spark Connect server's task looks, ``engine.executor_reads``)."""
    try:
        return all(end == 0 or len(files.read(path, end - 1, end)) == 1 for path, end in ends.items())
    except OSError:
        return False


@dataclass(frozen=True)
class _Ctx:
    """What discover() looks at in one file."""

    key: str
    entry: FileEntry
    read: RangeReader  # the file's bytes [start, end)
    final: bool
    seen_at: int


def _csv_records_end(settings: CsvParserSettings, data: bytes) -> int:
    return csv_complete_end(data, 0, len(data), settings)


def _schema_for(format: str, columns: dict[str, Column]) -> dict[str, Column]:
    if format in ("csv", "json", "parquet"):
        if not columns:
            raise PlanError(f"format {format!r} needs a schema with at least one column")
        return dict(columns)
    if len(columns) > 1:
        raise PlanError(f"format {format!r} gives a single column, got {list(columns)}")
    if columns:
        return dict(columns)
    return {"data": Column("data", BYTES if format == "binary" else STR)}


def _unchanged_prefix(read: RangeReader, state: dict[str, Any]) -> Any | None:
    """The digest of what was consumed when the file still starts with it, and that
    ended with a complete record (after an unfinished last record was read, more bytes
    change it); else None."""
    if not state.get("complete", True):
        return None
    prefix = hash_prefix(read, state["offset"])
    return prefix if prefix is not None and prefix.hexdigest() == state["digest"] else None


def _state_after(segment: Segment) -> dict[str, Any]:
    return {
        "path": segment["path"],
        "offset": segment["end"],
        "size": segment["size"],
        "mtime_ns": segment["mtime_ns"],
        **({"version": segment["version"]} if segment.get("version") else {}),
        "digest": segment["digest"],
        "generation": segment["generation"],
        "lines": segment["lines_end"],
        "header": segment.get("header"),
        "complete": segment.get("complete", True),
    }


def _metadata_text(segment: Segment) -> str:
    return json.dumps(segment["metadata"])


def _segment_key(segment: Segment) -> str:
    return json.dumps(segment, sort_keys=True)

