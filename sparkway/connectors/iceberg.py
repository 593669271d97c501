"""Apache Iceberg source and sink, with the ``pyiceberg`` package (no JVM).

An Iceberg table is a chain of *snapshots*, each committed through a catalog (REST, Glue,
or a SQL database such as SQLite); a snapshot's manifests list its data files (Parquet),
each entry marked as added in that snapshot, deleted in it, or existing from before.
Data files never change once written.

Source: ``IcebergSource`` reads the table as it is at one snapshot (every live data file),
then, streaming, every later snapshot of the chain as it is committed: the rows of the
data files it adds are insertions, the rows of the files it deletes (a delete or an
overwrite rewriting them) retractions.  Each snapshot is one segment (one input
transaction), so a snapshot's changes reach the engine at one time.  The position is the
last snapshot read: a restart with persistence continues with its child.  A row's id
comes from the schema's primary key, else from its data file and its place in the file.
Row-level delete files (Iceberg v2 merge-on-read) are refused, as Pathway does not read
them either.

Sink: each time is one snapshot whose summary records the sink and the time
(``sparkway.sink``, ``sparkway.time``).  When it opens, the sink finds the last time it
committed in the table's snapshots, and skips times not above it, so a step replayed
after a crash is not written twice.

* ``stream_of_changes`` (``IcebergChangesSink``): an append of the time's changes,
  ``<columns>, time, diff``; in a large step Spark's tasks write the data files, each
  its piece of the time's changes, and the driver only commits them;
* ``snapshot`` (``IcebergSink``, sparkway's addition, as ``pw.io.deltalake.write`` has
  it): the table holds the live rows, ``<columns>, _id``; the time is one overwrite
  snapshot, made on the driver, that removes the data files holding a changed id, adds
  what remains of them, and adds the time's inserted rows (copy-on-write, as
  pyiceberg's own deletes are).

pyiceberg is imported on first use only (``require_pyiceberg``).
"""

from __future__ import annotations

import logging
import os
import pickle
import time as _time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkway.connectors.base import (
    ID_COLUMN, META_COLUMNS, SNAPSHOT, STREAM_OF_CHANGES, OutputBatch, Piece, PieceSink, PieceWriter, Segment, Sink,
    Source, data_file_changes,
)
from sparkway.connectors.formats.arrow import output_column, output_type, stored_column
from sparkway.connectors.formats.values import SchemaMismatchError
from sparkway.core import changes, dtypes
from sparkway.core.columns import Column
from sparkway.core.dtypes import DType
from sparkway.errors import ConnectorError, PlanError
from sparkway.persistence.s3 import AwsS3Settings
from sparkway.persistence.storage import BlobStorage

log = logging.getLogger("sparkway")

SINK_PROPERTY = "sparkway.sink"
TIME_PROPERTY = "sparkway.time"
INSTALL_HINT = "pip install 'sparkway[iceberg]'"
#: snapshots read in one step at most (a long backlog is read over several steps)
MAX_SNAPSHOTS_PER_STEP = 100
#: how often a sink tries a commit that a concurrent writer's commit made fail
COMMIT_ATTEMPTS = 3
#: a snapshot sink looks for the files holding a time's ids with an ``_id IN (...)`` filter
#: up to this many ids; above, pyiceberg's metrics would admit every file anyway
PRUNE_MAX_IDS = 200


class IcebergError(ConnectorError):
    """The Iceberg table cannot be read or written as asked."""


def require_pyiceberg() -> Any:
    """The ``pyiceberg`` module, or an error saying how to install it."""
    try:
        import pyiceberg
        import pyiceberg.catalog  # noqa: F401
    except ImportError as error:
        raise PlanError(f"pw.io.iceberg needs the pyiceberg package: {INSTALL_HINT}") from error
    return pyiceberg


# ------------------------------------------------------------------------ catalogs


def _s3_properties(settings: AwsS3Settings | None) -> dict[str, str]:
    """pyiceberg's FileIO properties for S3 (empty: it takes them from the environment)."""
    if settings is None:
        return {}
    pairs = {"s3.access-key-id": settings.access_key, "s3.secret-access-key": settings.secret_access_key,
             "s3.session-token": settings.session_token, "s3.region": settings.region,
             "s3.endpoint": settings.endpoint}
    found = {k: v for k, v in pairs.items() if v is not None}
    if settings.with_path_style:
        found["s3.force-virtual-addressing"] = "false"
    return found


@dataclass(frozen=True)
class RestCatalog:
    """An Iceberg REST catalog, as in Pathway: its ``uri`` and optionally the
    ``warehouse``; ``properties`` are further pyiceberg catalog properties (``token``,
    ``credential``, ``s3.endpoint``...).

    >>> import sparkway as pw
    >>> pw.io.iceberg.RestCatalog(uri="http://localhost:8181").describe()
    'REST catalog http://localhost:8181'
    """

    uri: str
    warehouse: str | None = None
    properties: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        return f"REST catalog {self.uri}"

    def load(self) -> Any:
        """The pyiceberg catalog (imports pyiceberg)."""
        require_pyiceberg()
        from pyiceberg.catalog import load_catalog

        extra = {"warehouse": self.warehouse} if self.warehouse else {}
        return load_catalog("rest", **{"type": "rest", "uri": self.uri, **extra, **self.properties})


@dataclass(frozen=True)
class GlueCatalog:
    """An AWS Glue catalog, as in Pathway: the ``warehouse`` path, optionally the Glue
    endpoint ``uri``, the ``catalog_id`` and ``aws_settings`` (else the environment's
    credentials).  Needs ``boto3``; not covered by sparkway's tests.

    >>> import sparkway as pw
    >>> pw.io.iceberg.GlueCatalog(warehouse="s3://datalake/root").describe()
    'Glue catalog (warehouse s3://datalake/root)'
    """

    warehouse: str
    uri: str | None = None
    catalog_id: str | None = None
    aws_settings: AwsS3Settings | None = None

    def describe(self) -> str:
        return f"Glue catalog (warehouse {self.warehouse})"

    def load(self) -> Any:
        """The pyiceberg catalog (imports pyiceberg)."""
        require_pyiceberg()
        from pyiceberg.catalog import load_catalog

        properties = {"type": "glue", "warehouse": self.warehouse, **_s3_properties(self.aws_settings)}
        if self.uri is not None:
            properties["glue.endpoint"] = self.uri
        if self.catalog_id is not None:
            properties["glue.id"] = self.catalog_id
        if self.aws_settings is not None and self.aws_settings.region is not None:
            properties["glue.region"] = self.aws_settings.region
        return load_catalog("glue", **properties)


@dataclass(frozen=True)
class SqlCatalog:
    """sparkway's own addition: pyiceberg's SQL catalog, which keeps the tables' metadata
    pointers in a database (``uri``: a SQLAlchemy URL, ``sqlite:///catalog.db`` for a
    file next to the program) and their files under ``warehouse`` (a local folder, or
    ``s3://...`` with ``s3_settings``).  No server needed; tables are registered under
    the catalog ``name`` (pyiceberg's default, ``"default"``, so that
    ``pyiceberg.catalog.load_catalog("default", type="sql", ...)`` sees them).

    >>> import sparkway as pw
    >>> pw.io.iceberg.SqlCatalog(uri="sqlite:///catalog.db", warehouse="/data/warehouse").describe()
    'SQL catalog sqlite:///catalog.db'
    """

    uri: str
    warehouse: str
    name: str = "default"
    s3_settings: AwsS3Settings | None = None

    def describe(self) -> str:
        return f"SQL catalog {self.uri}"

    def load(self) -> Any:
        """The pyiceberg catalog (imports pyiceberg and SQLAlchemy)."""
        require_pyiceberg()
        try:
            from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSqlCatalog
        except ImportError as error:
            raise PlanError(f"pw.io.iceberg.SqlCatalog needs SQLAlchemy: {INSTALL_HINT}") from error
        warehouse = self.warehouse if "://" in self.warehouse else "file://" + os.path.abspath(self.warehouse)
        return PyIcebergSqlCatalog(self.name, uri=self.uri, warehouse=warehouse, **_s3_properties(self.s3_settings))


def catalog_description(catalog: Any) -> str:
    describe = getattr(catalog, "describe", None)
    return describe() if callable(describe) else f"catalog {getattr(catalog, 'name', catalog)!r}"


def load_catalog(catalog: Any) -> Any:
    """A pyiceberg catalog from sparkway's settings, or the pyiceberg catalog itself."""
    if isinstance(catalog, (RestCatalog, GlueCatalog, SqlCatalog)):
        return catalog.load()
    require_pyiceberg()
    return catalog


def check_catalog(catalog: Any) -> None:
    """Refuses what is neither sparkway's catalog settings nor a pyiceberg catalog."""
    if isinstance(catalog, (RestCatalog, GlueCatalog, SqlCatalog)) or hasattr(catalog, "load_table"):
        return
    raise PlanError(f"catalog must be pw.io.iceberg.RestCatalog, GlueCatalog, SqlCatalog or a pyiceberg catalog, "
                    f"not {catalog!r}")


def identifier(namespace: list[str] | str, table_name: str) -> tuple[str, ...]:
    """The table's identifier: the namespace's levels, then the table's name.

    >>> identifier(["app", "eu"], "users")
    ('app', 'eu', 'users')
    """
    levels = [namespace] if isinstance(namespace, str) else list(namespace)
    if not levels or not all(isinstance(level, str) and level for level in levels):
        raise PlanError(f"namespace must be a non-empty list of names, not {namespace!r}")
    if not isinstance(table_name, str) or not table_name:
        raise PlanError(f"table_name must be a non-empty string, not {table_name!r}")
    return (*levels, table_name)


def _load_table(catalog: Any, ident: tuple[str, ...], where: str) -> Any:
    from pyiceberg.exceptions import NoSuchTableError

    try:
        return catalog.load_table(ident)
    except NoSuchTableError:
        raise IcebergError(f"there is no Iceberg table {'.'.join(ident)!r} in the {where}") from None


def _type_text(kind: Any) -> str:
    """An Iceberg type without its field ids, to compare two schemas."""
    from pyiceberg.types import ListType, MapType, StructType

    if isinstance(kind, StructType):
        return "struct<" + ", ".join(f"{f.name}: {_type_text(f.field_type)}{'' if f.required else '?'}"
                                     for f in kind.fields) + ">"
    if isinstance(kind, ListType):
        return f"list<{_type_text(kind.element_type)}{'' if kind.element_required else '?'}>"
    if isinstance(kind, MapType):
        return f"map<{_type_text(kind.key_type)}, {_type_text(kind.value_type)}>"
    return str(kind)


# ------------------------------------------------------------------------ source


def _live_files(table: Any, snapshot: Any) -> list[Any]:
    """The data files of a snapshot (refusing row-level delete files)."""
    from pyiceberg.manifest import ManifestContent, ManifestEntryStatus

    files = []
    for manifest in snapshot.manifests(table.io):
        entries = manifest.fetch_manifest_entry(table.io, discard_deleted=True)
        if manifest.content != ManifestContent.DATA:
            if any(e.status != ManifestEntryStatus.DELETED for e in entries):
                raise _row_deletes(table, snapshot.snapshot_id)
            continue
        files += [e.data_file for e in entries]
    return sorted(files, key=lambda f: f.file_path)


def _changed_files(table: Any, snapshot: Any) -> tuple[list[Any], list[Any]]:
    """The data files a snapshot added, and those it deleted."""
    from pyiceberg.manifest import ManifestContent, ManifestEntryStatus

    added, deleted = [], []
    for manifest in snapshot.manifests(table.io):
        if manifest.added_snapshot_id != snapshot.snapshot_id:
            continue  # written by an earlier snapshot: nothing of this one in it
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=False):
            if entry.snapshot_id != snapshot.snapshot_id or entry.status == ManifestEntryStatus.EXISTING:
                continue
            if manifest.content != ManifestContent.DATA:
                if entry.status == ManifestEntryStatus.ADDED:
                    raise _row_deletes(table, snapshot.snapshot_id)
                continue
            (added if entry.status == ManifestEntryStatus.ADDED else deleted).append(entry.data_file)
    return sorted(added, key=lambda f: f.file_path), sorted(deleted, key=lambda f: f.file_path)


def _row_deletes(table: Any, snapshot_id: int) -> IcebergError:
    return IcebergError(f"snapshot {snapshot_id} of the Iceberg table {'.'.join(table.name())!r} has row-level delete "
                        "files (merge-on-read), which pw.io.iceberg does not read (nor does Pathway); rewrite the "
                        "table's data files (copy-on-write) to read it")


class IcebergSource(Source):
    """Rows of an Iceberg table: its data files at one snapshot, then each later
    snapshot's added and deleted data files.  A segment is ``{"snapshot": id,
    "whole": true}`` (every file of the snapshot) or ``{"snapshot": id}`` (its changes).

    >>> from sparkway.core import dtypes
    >>> source = IcebergSource(SqlCatalog("sqlite:///c.db", "wh"), ("app", "users"),
    ...                        {"id": Column("id", dtypes.INT, primary_key=True)}, mode="static")
    >>> source.key_columns, source.bounded
    (['id'], True)
    """

    connector_label = "IcebergReader"

    def __init__(self, catalog: Any, ident: tuple[str, ...], schema: dict[str, Column], *,
                 mode: str = "streaming", autocommit_duration_ms: int | None = 1500,
                 name: str | None = None) -> None:
        self.catalog = catalog
        self.ident = ident
        self.columns: dict[str, DType] = {c: col.dtype for c, col in schema.items()}
        self.key_columns = [c for c, col in schema.items() if col.primary_key]
        self.input_names = {c: col.input_name for c, col in schema.items()}
        self.mode = mode
        self.name = name
        self.poll_interval_s = (autocommit_duration_ms or 0) / 1000
        self.arrow_schema = changes.arrow_schema(self.columns)
        self._table: Any = None
        self._last: int | None = None  # the last snapshot read (committed)
        self._static: int | None = None  # the snapshot a static read reads up to
        self._last_poll = -float("inf")
        self._finished = False

    @property
    def table_name(self) -> str:
        return ".".join(self.ident)

    def open(self, storage: BlobStorage | None) -> None:
        catalog = load_catalog(self.catalog)
        namespace = self.ident[:-1]
        catalog.create_namespace_if_not_exists(namespace)  # as Pathway does; the table must exist
        self._table = _load_table(catalog, self.ident, catalog_description(self.catalog))
        self._check()
        current = self._table.current_snapshot()
        self._static = None if current is None else current.snapshot_id

    def _check(self) -> None:
        """Every schema column is in the table, with a type that fits."""
        arrow = self._table.schema().as_arrow()
        missing = [n for n in self.input_names.values() if n not in arrow.names]
        if missing:
            raise IcebergError(f"pw.Schema names column(s) {missing} that the Iceberg table {self.table_name!r} "
                               f"does not have; its columns are {arrow.names}")
        for column, dtype in self.columns.items():
            name = self.input_names[column]
            try:
                stored_column(pa.array([], arrow.field(name).type), dtype, where=f"Iceberg table {self.table_name}",
                              column=name)
            except SchemaMismatchError as error:
                raise IcebergError(str(error)) from None

    def position(self) -> dict[str, Any]:
        return {"table": self.table_name, "snapshot": self._last}

    def restore(self, position: dict[str, Any]) -> None:
        if position.get("table") != self.table_name:
            log.warning("%s: the stored position is for the Iceberg table %r, not %r; reading from the start",
                        self.label, position.get("table"), self.table_name)
            return
        self._last = position.get("snapshot")
        log.info("%s: continuing after snapshot %s of %r", self.label, self._last, self.table_name)

    def _newer(self, head: int | None) -> list[int]:
        """The snapshots after the last one read, up to ``head``, oldest first."""
        chain = []
        snapshot_id = head
        while snapshot_id is not None and snapshot_id != self._last:
            chain.append(snapshot_id)
            snapshot = self._table.snapshot_by_id(snapshot_id)
            snapshot_id = None if snapshot is None else snapshot.parent_snapshot_id
        if self._last is not None and snapshot_id != self._last:
            raise IcebergError(f"snapshot {self._last} of the Iceberg table {self.table_name!r}, the last one read, "
                               "is no longer an ancestor of its current snapshot (expired, or the table was rolled "
                               "back): read the table again from the start (a new persistent name, or a fresh "
                               "persistence storage)")
        return chain[::-1]

    def discover(self) -> list[Segment]:
        assert self._table is not None, "the source was not opened"
        if self._finished:
            return []
        if self.mode == "static":
            if self._last is None:
                self._finished = self._static is None  # an empty table: nothing to read
                return [] if self._static is None else [{"snapshot": self._static, "whole": True}]
            segments = [{"snapshot": s} for s in self._newer(self._static)[:MAX_SNAPSHOTS_PER_STEP]]
            self._finished = not segments
            return segments
        now = _time.monotonic()
        if now - self._last_poll < self.poll_interval_s:
            return []
        self._last_poll = now
        self._table.refresh()
        current = self._table.current_snapshot()
        if current is None:
            return []
        if self._last is None:
            return [{"snapshot": current.snapshot_id, "whole": True}]
        return [{"snapshot": s} for s in self._newer(current.snapshot_id)[:MAX_SNAPSHOTS_PER_STEP]]

    def read(self, segments: list[Segment]) -> pa.Table:
        tables = [self._read_segment(s) for s in segments]  # one transaction each (Source.read_transactions)
        return pa.concat_tables(tables) if tables else self.arrow_schema.empty_table()

    def _read_segment(self, segment: Segment) -> pa.Table:
        snapshot = self._table.snapshot_by_id(segment["snapshot"])
        if snapshot is None:
            raise IcebergError(f"snapshot {segment['snapshot']} of the Iceberg table {self.table_name!r} is gone "
                               "(expired): its changes cannot be read any more")
        if segment.get("whole"):
            parts = [self._file_rows(f, 1) for f in _live_files(self._table, snapshot)]
        else:
            added, deleted = _changed_files(self._table, snapshot)
            parts = [self._file_rows(f, -1) for f in deleted] + [self._file_rows(f, 1) for f in added]
        if parts:
            log.info("%s: read snapshot %d of %r: %d files", self.label, snapshot.snapshot_id, self.table_name,
                     len(parts))
        return pa.concat_tables(parts) if parts else self.arrow_schema.empty_table()

    def _file_rows(self, data_file: Any, diff: int) -> pa.Table:
        """The changes of one data file's rows: ids from the key, or from the file and
        the row's place in it."""
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.io.pyarrow import ArrowScan
        from pyiceberg.table import FileScanTask

        projected = self._table.schema().select(*self.input_names.values())
        data = ArrowScan(self._table.metadata, self._table.io, projected, AlwaysTrue()).to_table(
            [FileScanTask(data_file)])
        arrays = []
        for column, dtype in self.columns.items():
            name = self.input_names[column]
            try:
                arrays.append(stored_column(data.column(name), dtype, where=data_file.file_path, column=name))
            except SchemaMismatchError as error:
                raise IcebergError(f"{self.label}: {error}") from None
        return data_file_changes(self, arrays, data.num_rows, data_file.file_path, diff)

    def advance(self, segments: list[Segment]) -> None:
        for segment in segments:
            self._last = segment["snapshot"]


# ------------------------------------------------------------------------ sink


def sink_schema(columns: dict[str, DType], table_type: str = STREAM_OF_CHANGES) -> pa.Schema:
    """The Arrow schema of the table the sink writes: the columns, then ``time`` and
    ``diff`` (a stream of changes) or ``_id`` (a snapshot).

    >>> from sparkway.core import dtypes
    >>> sink_schema({"name": dtypes.STR, "at": dtypes.DATE_TIME_UTC}).types
    [DataType(string), TimestampType(timestamp[us, tz=UTC]), DataType(int64), DataType(int64)]
    >>> sink_schema({"name": dtypes.STR}, SNAPSHOT).names
    ['name', '_id']
    """
    fields = [pa.field(c, output_type(t), nullable=t.optional) for c, t in columns.items()]
    if table_type == SNAPSHOT:
        fields.append(pa.field(ID_COLUMN, pa.string(), nullable=False))
    else:
        fields += [pa.field(c, pa.int64(), nullable=False) for c in META_COLUMNS]
    return pa.schema(fields)


def committed_time(table: Any, sink: str) -> int | None:
    """The last time ``sink`` committed to the table: the ``sparkway.time`` of the newest
    snapshot of the current chain that names it."""
    snapshot = table.current_snapshot()
    while snapshot is not None:
        properties = snapshot.summary.additional_properties if snapshot.summary is not None else {}
        if properties.get(SINK_PROPERTY) == sink and TIME_PROPERTY in properties:
            return int(properties[TIME_PROPERTY])
        parent = snapshot.parent_snapshot_id
        snapshot = None if parent is None else table.snapshot_by_id(parent)
    return None


def sink_rows(table: pa.Table, columns: dict[str, DType], extra: list[pa.Array], schema: pa.Schema) -> pa.Table:
    """The table's ``columns`` as written, then the layout's own columns (``extra``), of ``schema``.

    >>> from sparkway.core import dtypes
    >>> columns = {"word": dtypes.STR}
    >>> sink_rows(pa.table({"word": ["a"]}), columns, [pa.array([7]), pa.array([1])], sink_schema(columns)).to_pylist()
    [{'word': 'a', 'time': 7, 'diff': 1}]
    """
    arrays = [output_column(table.column(i), t) for i, t in enumerate(columns.values())]
    return pa.Table.from_arrays(arrays + extra, schema=schema)


class IcebergSink(Sink):
    """Commits each time's changes to an Iceberg table as one snapshot that records the
    sink's progress, so that a replayed time is skipped.  This class applies them to the
    live rows, keyed by ``_id`` (the ``snapshot`` layout), from the driver;
    ``IcebergChangesSink`` appends them as rows with their time and diff
    (``stream_of_changes``), its data files written by Spark's tasks.

    >>> from sparkway.core import dtypes
    >>> sink = IcebergSink(SqlCatalog("sqlite:///c.db", "wh"), ("app", "counts"), {"word": dtypes.STR})
    >>> sink.table_schema().names, sink.label
    (['word', '_id'], 'iceberg table app.counts')
    """

    table_type: str = SNAPSHOT

    def __init__(self, catalog: Any, ident: tuple[str, ...], columns: dict[str, DType], *,
                 name: str | None = None) -> None:
        self.catalog = catalog
        self.ident = ident
        self.columns = dict(columns)
        self.name = name or "iceberg"
        self._table: Any = None
        self._done: int | None = None

    @property
    def label(self) -> str:
        return f"iceberg table {'.'.join(self.ident)}"

    def table_schema(self) -> pa.Schema:
        return sink_schema(self.columns, self.table_type)

    def open(self) -> None:
        from pyiceberg.catalog import Catalog as PyIcebergCatalog

        catalog = load_catalog(self.catalog)
        catalog.create_namespace_if_not_exists(self.ident[:-1])
        schema = self.table_schema()
        self._table = catalog.create_table_if_not_exists(self.ident, schema=schema)
        wanted = PyIcebergCatalog._convert_schema_if_needed(schema)  # the Iceberg schema create_table makes
        self._check(wanted)
        self._done = committed_time(self._table, self.name)
        if self._done is not None:
            log.info("IcebergWriter-%s: %r holds the times up to %d", self.name, self.label, self._done)

    def _check(self, wanted: Any) -> None:
        """The existing table must have exactly the written columns, with their types."""
        existing = {f.name: f for f in self._table.schema().fields}
        new = {f.name: f for f in wanted.fields}
        problems = []
        extra = [c for c in new if c not in existing]
        if extra:
            problems.append(f"columns written that the table does not have: {extra}")
        lacking = [c for c in existing if c not in new]
        if lacking:
            problems.append(f"columns of the table that are not written: {lacking}")
        for c in new:
            if c in existing:
                old_type, new_type = _type_text(existing[c].field_type), _type_text(new[c].field_type)
                if old_type != new_type or existing[c].required != new[c].required:
                    problems.append(f"column {c!r} is {old_type} (required={existing[c].required}) in the table, "
                                    f"{new_type} (required={new[c].required}) written")
        if problems:
            raise IcebergError(f"the Iceberg table {'.'.join(self.ident)!r} does not fit the table written "
                               f"({self.table_type}): {'; '.join(problems)}.{self._other_layout(existing)} "
                               "Write elsewhere, or drop it")

    def _other_layout(self, existing: dict[str, Any]) -> str:
        """Names the table's layout when it is the other one: the likeliest mistake."""
        stream = all(c in existing for c in META_COLUMNS) and ID_COLUMN not in existing
        if self.table_type == SNAPSHOT and stream:
            return (f" The table holds a stream of changes (its {list(META_COLUMNS)} columns), "
                    f"not a snapshot (an {ID_COLUMN!r} column).")
        if self.table_type == STREAM_OF_CHANGES and ID_COLUMN in existing:
            return (f" The table holds a snapshot (its {ID_COLUMN!r} column), not a stream of changes: "
                    "write it with output_table_type='snapshot'.")
        return ""

    def write(self, batch: OutputBatch) -> None:
        if batch.table.num_rows == 0 or self._skipped(batch.time):
            return
        ids, rows = self._snapshot_changes(batch)
        self._commit(batch.time, batch.table.num_rows,
                     lambda transaction, properties: self._stage_snapshot(transaction, ids, rows, properties))

    def _skipped(self, time: int) -> bool:
        """Whether ``time`` is in the table already (a step replayed after a crash that
        followed its commit): it is then not written again."""
        assert self._table is not None, "the sink was not opened"
        if self._done is None or time > self._done:
            return False
        log.info("IcebergWriter-%s: time %d is already in %r (written up to time %d): skipped",
                 self.name, time, self.label, self._done)
        return True

    def _commit(self, time: int, rows: int, stage: Callable[[Any, dict[str, str]], None]) -> None:
        """Commits what ``stage(transaction, snapshot_properties)`` puts in one transaction:
        one catalog commit, whose snapshot's properties record the sink and the time.  A
        commit another writer's made fail is staged again on the refreshed table, unless
        that writer was this sink (the time is then there)."""
        from pyiceberg.exceptions import CommitFailedException

        started = _time.monotonic()
        properties = {SINK_PROPERTY: self.name, TIME_PROPERTY: str(time)}
        for attempt in range(COMMIT_ATTEMPTS):
            try:
                with self._table.transaction() as transaction:
                    stage(transaction, properties)
                break
            except CommitFailedException as error:  # another writer committed meanwhile
                self._table.refresh()
                done = committed_time(self._table, self.name)
                if done is not None and time <= done:
                    break
                if attempt + 1 == COMMIT_ATTEMPTS:
                    raise IcebergError(f"committing time {time} to {self.label} failed {COMMIT_ATTEMPTS} "
                                       f"times (other writers?): {error}") from error
            except Exception as error:
                raise IcebergError(f"writing the changes of time {time} to {self.label} (sink {self.name!r}) "
                                   f"failed: {error}. Nothing of this time was committed: fix the cause and "
                                   "restart") from error
        self._done = time
        log.info("IcebergWriter-%s: Done writing %d entries, time %d, in %d ms.", self.name, rows, time,
                 (_time.monotonic() - started) * 1000)

    def _snapshot_changes(self, batch: OutputBatch) -> tuple[pa.Array, pa.Table]:
        """The ids the time changes, as ``_id`` holds them, and the rows it leaves under
        them (the last change of each id, where it is an insertion)."""
        if batch.ids is None:
            raise IcebergError("the snapshot sink needs the row ids of the changes")
        latest = batch.last_change_per_id()
        ids = output_column(latest.ids, dtypes.POINTER)
        rows = sink_rows(latest.table, self.columns, [ids], self.table_schema())
        return ids, rows.filter(pc.greater(latest.diffs, 0))

    def _stage_snapshot(self, transaction: Any, ids: pa.Array, rows: pa.Table, properties: dict[str, str]) -> None:
        """One overwrite snapshot: the data files holding one of ``ids`` are replaced by
        their other rows, and ``rows`` are added.  Not pyiceberg's ``delete`` then
        ``append``: each makes a snapshot of its own, and the one between would hold half
        the time (for time travel, and for readers taking snapshot after snapshot)."""
        # pyiceberg's own writer of data files (what its append uses); pyiceberg is pinned below 0.13
        from pyiceberg.io.pyarrow import _dataframe_to_data_files

        with transaction.update_snapshot(snapshot_properties=properties).overwrite() as overwrite:
            parts = []
            for task in self._files_with(ids):
                rest = self._rows_not_in(task, ids)
                if rest is not None:
                    overwrite.delete_data_file(task.file)
                    parts.append(rest)
            added = pa.concat_tables([*parts, rows])
            if added.num_rows:
                for data_file in _dataframe_to_data_files(table_metadata=transaction.table_metadata, df=added,
                                                          io=self._table.io, write_uuid=overwrite.commit_uuid):
                    overwrite.append_data_file(data_file)

    def _files_with(self, ids: pa.Array) -> list[Any]:
        """The live data files (scan tasks) that may hold one of ``ids``: for a few ids,
        those whose ``_id`` bounds admit one of them (ids are hashes: the bounds of a file
        of many rows admit nearly any id, so many ids would only cost the filter)."""
        from pyiceberg.expressions import AlwaysTrue, In

        wanted = In(ID_COLUMN, ids.to_pylist()) if len(ids) <= PRUNE_MAX_IDS else AlwaysTrue()
        return list(self._table.scan(row_filter=wanted).plan_files())

    def _rows_not_in(self, task: Any, ids: pa.Array) -> pa.Table | None:
        """The rows of a data file whose ``_id`` is not one of ``ids``, as written; None
        when it holds none of them (the file stays).  Its ids are read first, alone, so
        that a file the time does not touch is not read whole."""
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.io.pyarrow import ArrowScan

        def read(schema: Any) -> pa.Table:
            return ArrowScan(self._table.metadata, self._table.io, schema, AlwaysTrue()).to_table([task])

        schema = self._table.schema()
        hit = pc.is_in(read(schema.select(ID_COLUMN)).column(ID_COLUMN), value_set=ids)
        if not pc.any(hit).as_py():
            return None
        rows = read(schema).filter(pc.invert(hit))
        return rows.select(self.table_schema().names).cast(self.table_schema())

    def close(self) -> None:
        self._table = None


class IcebergDataFiles(PieceWriter):
    """Writes a piece of a time's changes, rows ``<columns>, time, diff``, as data files of
    the Iceberg table where it runs (a Spark task), with pyiceberg's own writer, as its
    ``append`` does (field ids, column statistics, the table's location, partitioning and
    file properties), and returns their manifest entries (``DataFile`` objects, pickled:
    they only go from a task to its own driver), which ``IcebergChangesSink`` commits.
    A second attempt of a task leaves data files that no snapshot names, invisible to
    readers, until an orphan-file cleanup (Spark's ``remove_orphan_files``) deletes them.

    >>> from sparkway.core import dtypes
    >>> folder = getfixture("tmp_path")
    >>> sink = IcebergChangesSink(SqlCatalog(f"sqlite:///{folder}/c.db", str(folder / "wh")), ("app", "words"),
    ...                           {"word": dtypes.STR})
    >>> sink.open()
    >>> piece = sink.piece_writer().write_piece(OutputBatch(pa.table({"word": ["a", "b"]}), 7, pa.array([1, -1])))
    >>> piece.rows, [(f.record_count, f.file_path.endswith(".parquet")) for f in pickle.loads(piece.data)]
    (2, [(2, True)])
    """

    writes_files = True

    def __init__(self, metadata: Any, io: Any, columns: dict[str, DType], schema: pa.Schema) -> None:
        # what writing needs (schema, spec, properties, location), not the snapshots and
        # logs: they grow with every commit, and the writer travels with every task
        self.metadata = metadata.model_copy(update={"snapshots": [], "snapshot_log": [], "metadata_log": [],
                                                    "refs": {}, "current_snapshot_id": None})
        self.io, self.columns, self.schema = io, columns, schema

    def write_piece(self, batch: OutputBatch) -> Piece:
        # pyiceberg's own writer of data files (what its append uses); pyiceberg is pinned below 0.13
        from pyiceberg.io.pyarrow import _dataframe_to_data_files

        n = batch.table.num_rows
        meta = [pa.array(np.full(n, batch.time, dtype=np.int64)), batch.diffs.cast(pa.int64())]
        rows = sink_rows(batch.table, self.columns, meta, self.schema)
        files = list(_dataframe_to_data_files(table_metadata=self.metadata, df=rows, io=self.io,
                                              write_uuid=uuid.uuid4()))  # a name of its own per attempt
        return Piece(n, pickle.dumps(files))


class IcebergChangesSink(PieceSink, IcebergSink):
    """Appends every change as a row, ``<columns>, time, diff``, to an Iceberg table, each
    time in one append snapshot recording this sink's progress (as ``IcebergSink``): the
    data files are written where the changes are (``IcebergDataFiles``: by Spark's tasks,
    in a large step), and the driver commits the files of a time's pieces in one snapshot.

    >>> from sparkway.core import dtypes
    >>> sink = IcebergChangesSink(SqlCatalog("sqlite:///c.db", "wh"), ("app", "counts"), {"word": dtypes.STR})
    >>> sink.table_schema().names
    ['word', 'time', 'diff']
    """

    table_type = STREAM_OF_CHANGES

    def __init__(self, catalog: Any, ident: tuple[str, ...], columns: dict[str, DType], *,
                 name: str | None = None) -> None:
        super().__init__(catalog, ident, columns, name=name)
        self._files: list[Any] = []  # of the time being written

    def piece_writer(self) -> IcebergDataFiles:
        assert self._table is not None, "the sink was not opened"
        return IcebergDataFiles(self._table.metadata, self._table.io, self.columns, self.table_schema())

    def take_piece(self, time: int, piece: Piece) -> None:
        self._files += pickle.loads(piece.data)

    def end_time(self, time: int) -> None:
        files, self._files = self._files, []
        if not files:
            return
        if self._skipped(time):  # no snapshot will ever name these files
            for data_file in files:
                self._table.io.delete(data_file.file_path)
            return
        self._commit(time, sum(f.record_count for f in files),
                     lambda transaction, properties: _append(transaction, files, properties))


def _append(transaction: Any, files: list[Any], properties: dict[str, str]) -> None:
    """One snapshot appending ``files``, made as pyiceberg's ``append`` makes it (a fast
    or a merging append, as the table's properties say; pinned below 0.13)."""
    with transaction._append_snapshot_producer(properties) as append:
        for data_file in files:
            append.append_data_file(data_file)
