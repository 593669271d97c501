"""Delta Lake source and sink, with the ``deltalake`` package (delta-rs: no JVM).

A Delta table is a folder of Parquet files and a log, ``_delta_log/<version>.json``: each
version is one commit, whose ``add`` and ``remove`` actions name the data files it put
into the table and took out of it.  The files never change once written.

Source: ``DeltaSource`` reads the table as it is at one version (every file of that
version's snapshot), then, streaming, every later version as it is committed: the rows of
its added files are insertions, the rows of its removed files retractions (files only
rewritten, ``dataChange: false``, as OPTIMIZE does, change nothing for a schema with a
primary key; rows without a key move to their new files' ids).
Each version is one segment (one input transaction), so a version's changes reach the
engine at one time.  The position is the last version read: a restart with persistence
continues with the next one.  A row's id comes from the schema's primary key, else from
its file and its place in the file, which is what makes a removed file's rows retract
exactly the rows it inserted.

Sink: each time's changes are one Delta commit, which also records the time in the
commit's ``txn`` action (Delta's own record of an application's progress, ``appId`` =
``sparkway-<name>``, ``version`` = the time) and in its ``commitInfo``
(``sparkway.time``).  A time not above the recorded one is skipped, so a step replayed
after a crash is not written twice.

* ``stream_of_changes``: every change is a row, ``<columns>, time, diff`` (a table with
  ``delta.appendOnly``).  ``DeltaChangesSink``: in a large step Spark's tasks write the
  data files, each its piece of the time's changes (into a partitioned table, a file per
  partition value in the piece, in ``column=value/`` folders), and the driver only
  commits them (with the statistics delta-rs would keep);
* ``snapshot``: the table holds the live rows, one per row id (a ``_id`` column): one
  MERGE per time upserts the inserted rows and deletes the retracted ones (``DeltaSink``,
  on the driver).

Values are stored as Pathway stores them (see ``docs/deltalake.md`` for the table).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import os
import posixpath
import time as _time
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote, unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkway.connectors.base import (
    ID_COLUMN, STREAM_OF_CHANGES, OutputBatch, Piece, PieceSink, PieceWriter, Segment, Sink, Source,
    data_file_changes,
)
from sparkway.core import changes
from sparkway.core.columns import Column
from sparkway.core.dtypes import DType
from sparkway.core.text import pointer_text
from sparkway.errors import ConnectorError, PlanError, PlanTypeError
from sparkway.persistence.s3 import AwsS3Settings
from sparkway.persistence.storage import BlobStorage

log = logging.getLogger("sparkway")

#: the field metadata key holding a column's Pathway schema entry (as Pathway names it)
SCHEMA_METADATA = "pathway.column.metadata"
APPEND_ONLY = "delta.appendOnly"
INSTALL_HINT = "pip install 'sparkway[deltalake]'"
#: versions read in one step at most (a long backlog is read over several steps)
MAX_VERSIONS_PER_STEP = 100


class DeltaLakeError(ConnectorError):
    """The Delta table cannot be read or written as asked."""


def require_deltalake() -> Any:
    """The ``deltalake`` module, or an error saying how to install it."""
    try:
        import deltalake
    except ImportError as error:
        raise PlanError(f"pw.io.deltalake needs the deltalake package (delta-rs): {INSTALL_HINT}") from error
    return deltalake


# ------------------------------------------------------------------------ where the table is


def is_s3(uri: str) -> bool:
    return uri.startswith(("s3://", "s3a://"))


def table_uri(uri: str | os.PathLike) -> str:
    """A local path made absolute; an S3 URI with ``s3a://`` read as ``s3://``."""
    text = os.fspath(uri)
    if text.startswith("s3a://"):
        return "s3://" + text[len("s3a://"):]
    if "://" in text and not text.startswith("file://"):
        if not is_s3(text):
            raise PlanError(f"{text!r}: pw.io.deltalake reads and writes local paths and s3:// URIs only")
        return text
    if text.startswith("file://"):
        text = text[len("file://"):]
    return os.path.abspath(text)


def delta_storage_options(uri: str, settings: AwsS3Settings | None) -> dict[str, str] | None:
    """The options delta-rs reaches an S3 bucket with (None for a local table; with no
    settings, delta-rs takes credentials from the environment)."""
    if not is_s3(uri):
        return None
    options: dict[str, str] = {}
    if settings is None:
        return options
    if settings.access_key is not None:
        options["AWS_ACCESS_KEY_ID"] = settings.access_key
        options["AWS_SECRET_ACCESS_KEY"] = settings.secret_access_key or ""
    if settings.session_token is not None:
        options["AWS_SESSION_TOKEN"] = settings.session_token
    if settings.region is not None:
        options["AWS_REGION"] = settings.region
    if settings.endpoint is not None:
        endpoint = settings.endpoint if "://" in settings.endpoint else f"https://{settings.endpoint}"
        options["AWS_ENDPOINT_URL"] = endpoint
        if endpoint.startswith("http://"):
            options["AWS_ALLOW_HTTP"] = "true"
    if settings.with_path_style:
        options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false"
    return options


class _Files:
    """The table's files (log and data), through fsspec: the local disk or s3fs."""

    def __init__(self, uri: str, settings: AwsS3Settings | None) -> None:
        self.uri = uri.rstrip("/")
        if is_s3(uri):
            import s3fs

            self.fs = s3fs.S3FileSystem(**(settings.storage_options() if settings is not None else {}))
            self.root = self.uri[len("s3://"):]
        else:
            from fsspec.implementations.local import LocalFileSystem

            self.fs = LocalFileSystem()
            self.root = self.uri

    def log_path(self, version: int) -> str:
        return posixpath.join(self.root, "_delta_log", f"{version:020d}.json")

    def has_version(self, version: int) -> bool:
        if is_s3(self.uri):
            self.fs.invalidate_cache(posixpath.dirname(self.log_path(version)))
        return bool(self.fs.exists(self.log_path(version)))

    def actions(self, version: int) -> list[dict[str, Any]]:
        """The actions of commit ``version`` (one JSON object a line)."""
        try:
            with self.fs.open(self.log_path(version), "rb") as f:
                text = f.read().decode("utf-8")
        except FileNotFoundError:
            raise DeltaLakeError(
                f"the log entry of version {version} of the Delta table {self.uri!r} is gone (the log was cleaned "
                "up after a checkpoint): versions this old cannot be read one by one any more; read the table "
                "again from its current version (a new persistent name, or a fresh persistence storage)"
            ) from None
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def data_path(self, path: str) -> str:
        """A data file's path as the log names it (relative to the table, URL-encoded),
        as fsspec reaches it."""
        if "://" in path:
            if path.startswith("file://"):
                return unquote(path[len("file://"):])
            return unquote(path.split("://", 1)[1])
        return posixpath.join(self.root, unquote(path))

    def read_parquet(self, path: str) -> pa.Table:
        import pyarrow.parquet as pq

        try:
            with self.fs.open(self.data_path(path), "rb") as f:
                return pq.read_table(f)
        except FileNotFoundError:
            raise DeltaLakeError(
                f"the data file {path!r} of the Delta table {self.uri!r} is gone (VACUUM removed it?): its rows "
                "cannot be read, nor retracted"
            ) from None

    def write_parquet(self, name: str, table: pa.Table) -> tuple[int, Any]:
        """Writes a data file at ``name`` (in the table's folder) and returns its size in
        bytes and its Parquet footer; on the local disk it is fsynced, since the commit
        naming it follows."""
        import pyarrow.parquet as pq

        footer: list[Any] = []
        path = posixpath.join(self.root, name)
        if not is_s3(self.uri):
            self.fs.makedirs(posixpath.dirname(path), exist_ok=True)
        with self.fs.open(path, "wb") as f:
            pq.write_table(table, f, metadata_collector=footer)
            size = f.tell()
            if not is_s3(self.uri):
                f.flush()
                os.fsync(f.fileno())
        return size, footer[0]

    def remove(self, names: list[str]) -> None:
        """Removes data files (named relative to the table's folder)."""
        self.fs.rm([posixpath.join(self.root, name) for name in names])


# ------------------------------------------------------------------------ values


def _is_simple(dtype: DType, *names: str) -> bool:
    return dtype.with_optional(False).name in names


def delta_arrow_type(dtype: DType) -> pa.DataType:
    """The Arrow type of a column's values in the Delta table (Pathway's mapping).

    >>> from sparkway.core import dtypes
    >>> delta_arrow_type(dtypes.DATE_TIME_UTC), delta_arrow_type(dtypes.dtype_of(tuple[int, str]))
    (TimestampType(timestamp[us, tz=UTC]), StructType(struct<[0]: int64 not null, [1]: string not null>))
    """
    base = dtype.with_optional(False)
    name = base.name
    simple = {"int": pa.int64(), "float": pa.float64(), "str": pa.string(), "bool": pa.bool_(),
              "bytes": pa.binary(), "Json": pa.string(), "Pointer": pa.string(), "Duration": pa.int64(),
              "DateTimeNaive": pa.timestamp("us"), "DateTimeUtc": pa.timestamp("us", tz="UTC"),
              "PyObjectWrapper": pa.binary()}
    if name in simple:
        return simple[name]
    if name == "list":
        item = base.items[0]
        return pa.list_(pa.field("element", delta_arrow_type(item), nullable=item.optional))
    if name == "tuple":
        return pa.struct([pa.field(f"[{i}]", delta_arrow_type(t), nullable=t.optional)
                          for i, t in enumerate(base.items)])
    if name == "Array":
        element = _array_element(base)
        return pa.struct([pa.field("shape", pa.list_(pa.int64()), nullable=False),
                          pa.field("elements", pa.list_(element), nullable=False)])
    raise PlanTypeError(f"a column of type {dtype} cannot be written to Delta Lake (as in Pathway): "
                        "cast it to a concrete type first")


def _array_element(base: DType) -> pa.DataType:
    element = base.items[0].with_optional(False).name if base.items else "Any"
    if element == "int":
        return pa.int64()
    if element == "float":
        return pa.float64()
    raise PlanTypeError(f"a column of type {base} cannot be written to Delta Lake: declare its arrays' element "
                        "type (np.ndarray[None, int] or np.ndarray[None, float])")


def delta_schema(columns: dict[str, DType], metadata: dict[str, str], table_type: str) -> pa.Schema:
    """The Arrow schema of the table the sink writes: the columns (with their Pathway
    schema entry as field metadata), then ``time`` and ``diff``, or ``_id``."""
    fields = [pa.field(c, delta_arrow_type(t), nullable=t.optional,
                       metadata={SCHEMA_METADATA: metadata[c]} if c in metadata else None)
              for c, t in columns.items()]
    if table_type == STREAM_OF_CHANGES:
        fields += [pa.field("time", pa.int64(), nullable=False), pa.field("diff", pa.int64(), nullable=False)]
    else:
        fields.append(pa.field(ID_COLUMN, pa.string(), nullable=False))
    return pa.schema(fields)


def _values_with_validity(array: pa.Array, values: np.ndarray, arrow_type: pa.DataType) -> pa.Array:
    mask = np.asarray(array.is_null()) if array.null_count else None
    return pa.array(values, type=arrow_type, mask=mask)


def _ints(array: pa.Array) -> np.ndarray:
    return np.asarray(array.fill_null(0), dtype=np.int64)


def to_delta(array: pa.Array, dtype: DType) -> pa.Array:
    """A column as sparkway holds it (Arrow) -> as the Delta table holds it.

    >>> from sparkway.core import dtypes
    >>> to_delta(pa.array([1_500, -1_500]), dtypes.DURATION).to_pylist()   # microseconds
    [1, -1]
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    base = dtype.with_optional(False)
    name = base.name
    target = delta_arrow_type(dtype)
    if name in ("DateTimeNaive", "DateTimeUtc"):  # nanoseconds -> microseconds (floor)
        return _values_with_validity(array, np.floor_divide(_ints(array), 1000), target)
    if name == "Duration":  # microseconds, cut toward zero
        return pc.divide(array.cast(pa.int64()), 1000)
    if name == "Pointer":
        return pa.array([None if v is None else pointer_text(v) for v in array.to_pylist()], pa.string())
    if name == "list":
        if isinstance(array, pa.ListArray):
            items = to_delta(array.flatten(), base.items[0])
            offsets = array.offsets
            mask = array.is_null() if array.null_count else None
            return pa.ListArray.from_arrays(offsets, items, type=target, mask=mask)
        return array.cast(target)
    if name == "tuple":
        children = [to_delta(array.field(i), t) for i, t in enumerate(base.items)]
        mask = array.is_null() if array.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if name == "Array":
        element = target.field("elements").type.value_type
        rows = []
        for value in array.to_pylist():
            if value is None:
                rows.append(None)
                continue
            flat = value["ints"] if value["ints"] is not None else value["floats"]
            rows.append({"shape": value["shape"], "elements": flat})
        return pa.array(rows, type=pa.struct([("shape", pa.list_(pa.int64())), ("elements", pa.list_(element))]))
    return array.cast(target)


class RowsError(ValueError):
    """A column of the Delta table does not hold the values the schema says."""


def from_delta(array: pa.Array, dtype: DType, column: str) -> pa.Array:
    """A column as the Delta table holds it -> as sparkway holds it (nulls kept: the
    caller drops rows with a null in a column that may not hold one).

    >>> from sparkway.core import dtypes
    >>> from_delta(pa.array([1], pa.timestamp("us")), dtypes.DATE_TIME_NAIVE, "t").to_pylist()
    [1000]
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    base = dtype.with_optional(False)
    name = base.name
    kind = array.type
    wrong = RowsError(f"column {column!r} of the Delta table holds values of type {kind}, which do not fit the "
                      f"schema's type {dtype}")
    if pa.types.is_null(kind):
        return pa.nulls(len(array), dtype.arrow_type())
    try:
        if name == "int":
            if not pa.types.is_integer(kind):
                raise wrong
            return array.cast(pa.int64())
        if name == "float":
            if not (pa.types.is_floating(kind) or pa.types.is_integer(kind) or pa.types.is_decimal(kind)):
                raise wrong
            return array.cast(pa.float64())
        if name in ("str", "Json"):
            if pa.types.is_decimal(kind) and name == "str":
                return array.cast(pa.string())
            if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)):
                raise wrong
            array = array.cast(pa.string())
            if name == "Json":
                return pa.array([None if v is None else json.dumps(json.loads(v)) for v in array.to_pylist()],
                                pa.string())
            return array
        if name == "bool":
            if not pa.types.is_boolean(kind):
                raise wrong
            return array
        if name in ("bytes", "Any", "PyObjectWrapper"):
            if not (pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_binary_view(kind)):
                raise wrong
            return array.cast(pa.binary())
        if name == "Pointer":
            if pa.types.is_integer(kind):
                return array.cast(pa.int64())
            return pa.array([None if v is None else _pointer(v) for v in array.cast(pa.string()).to_pylist()],
                            pa.int64())
        if name in ("DateTimeNaive", "DateTimeUtc"):
            if not pa.types.is_timestamp(kind) or (kind.tz is None) != (name == "DateTimeNaive"):
                raise wrong
            return array.cast(pa.timestamp("ns", tz=kind.tz)).cast(pa.int64())
        if name == "Duration":
            if pa.types.is_duration(kind):
                return array.cast(pa.duration("ns")).cast(pa.int64())
            if not pa.types.is_integer(kind):
                raise wrong
            return pc.multiply_checked(array.cast(pa.int64()), 1000)  # microseconds, as Pathway writes them
        if name == "list":
            if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)):
                raise wrong
            items = from_delta(array.flatten(), base.items[0], column)
            offsets = array.offsets.cast(pa.int32())
            mask = array.is_null() if array.null_count else None
            return pa.ListArray.from_arrays(offsets, items, type=dtype.arrow_type(), mask=mask)
        if name == "tuple":
            if not pa.types.is_struct(kind) or kind.num_fields != len(base.items):
                raise wrong
            children = [from_delta(array.field(i), t, column) for i, t in enumerate(base.items)]
            mask = array.is_null() if array.null_count else None
            return pa.StructArray.from_arrays(children, fields=list(dtype.arrow_type()), mask=mask)
        if name == "Array":
            if not pa.types.is_struct(kind) or {"shape", "elements"} - {f.name for f in kind}:
                raise wrong
            rows = []
            for value in array.to_pylist():
                if value is None:
                    rows.append(None)
                    continue
                floats = pa.types.is_floating(kind.field("elements").type.value_type)
                rows.append({"shape": value["shape"], "ints": None if floats else value["elements"],
                             "floats": value["elements"] if floats else None})
            return pa.array(rows, dtype.arrow_type())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise RowsError(f"column {column!r} of the Delta table: {error}") from error
    raise wrong


def _pointer(text: str) -> int:
    digits = text[1:] if text.startswith("^") else text
    value = int(digits, 16)
    return value - (1 << 64) if value >= 1 << 63 else value


def partition_text(value: Any) -> str | None:
    """A partition value as Delta's log writes it (``partitionValues``), from a value of
    a Delta column (``to_delta``); ``partition_value`` reads it back.

    >>> partition_text(dt.datetime(2024, 5, 1, 12, 30)), partition_text(True), partition_text(float("nan"))
    ('2024-05-01 12:30:00.000000', 'true', 'NaN')
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    return str(value)


def partition_value(text: str | None, dtype: DType) -> Any:
    """A partition value as the log writes it (a text) -> as sparkway holds it."""
    if text is None:
        return None
    name = dtype.with_optional(False).name
    if name in ("str", "Json"):
        return text
    if name == "int":
        return int(text)
    if name == "float":
        return float(text)
    if name == "bool":
        return text.lower() == "true"
    if name in ("DateTimeNaive", "DateTimeUtc"):
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        if moment.tzinfo is not None:
            moment = moment.astimezone(dt.timezone.utc).replace(tzinfo=None)
        delta = moment - dt.datetime(1970, 1, 1)
        return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000
    raise RowsError(f"a partition column of type {dtype} cannot be read")


# ------------------------------------------------------------------------ the table's schema


def open_table(uri: str, storage_options: dict[str, str] | None, version: int | None = None) -> Any:
    deltalake = require_deltalake()
    try:
        return deltalake.DeltaTable(uri, version=version, storage_options=storage_options)
    except deltalake.exceptions.TableNotFoundError as error:
        raise DeltaLakeError(f"there is no Delta table at {uri!r}: {error}") from None


def stored_schema(uri: str, storage_options: dict[str, str] | None) -> dict[str, dict[str, Any]]:
    """The Pathway schema entries a sparkway or Pathway writer stored in the table's
    field metadata (``time``, ``diff``, ``_id`` have none)."""
    table = open_table(uri, storage_options)
    entries = {}
    for field in table.schema().fields:
        text = (field.metadata or {}).get(SCHEMA_METADATA)
        if text is not None:
            entries[field.name] = json.loads(text)
    if not entries:
        raise PlanError(f"the Delta table {uri!r} holds no Pathway schema in its columns' metadata (it was not "
                        "written by pw.io.deltalake.write): give schema=")
    return entries


def _arrow_schema(table: Any) -> pa.Schema:
    return pa.schema(table.schema().to_arrow())


# ------------------------------------------------------------------------ source


class DeltaSource(Source):
    """Rows of a Delta table: its snapshot at one version, then each later version's
    added and removed files.  A segment is ``{"version": v, "snapshot": true}`` (every
    file of version ``v``) or ``{"version": v}`` (commit ``v``'s changes).

    >>> from sparkway.core import dtypes
    >>> source = DeltaSource("/data/lake/users", {"id": Column("id", dtypes.INT, primary_key=True),
    ...                                           "name": Column("name", dtypes.STR)}, mode="static")
    >>> source.key_columns, source.is_finished
    (['id'], False)
    """

    connector_label = "DeltaTableReader"

    def __init__(self, uri: str, schema: dict[str, Column], *, mode: str = "streaming",
                 s3_settings: AwsS3Settings | None = None, autocommit_duration_ms: int | None = 1500,
                 name: str | None = None, append_only: bool = False) -> None:
        self.uri = uri
        self.schema = schema
        self.columns: dict[str, DType] = {c: col.dtype for c, col in schema.items()}
        self.key_columns = [c for c, col in schema.items() if col.primary_key]
        self.delta_names = {c: col.input_name for c, col in schema.items()}
        self.mode = mode
        self.s3_settings = s3_settings
        self.storage_options = delta_storage_options(uri, s3_settings)
        self.name = name
        self.append_only = append_only
        self.poll_interval_s = (autocommit_duration_ms or 0) / 1000
        self.arrow_schema = changes.arrow_schema(self.columns)
        self._files: _Files | None = None
        self._last_version: int | None = None  # the last version read (committed)
        self._last_poll = -float("inf")
        self._finished = False

    # -- life cycle --------------------------------------------------------------------------
    def open(self, storage: BlobStorage | None) -> None:
        self._files = _Files(self.uri, self.s3_settings)
        table = open_table(self.uri, self.storage_options)
        self._check(table)
        self._partition_columns = list(table.metadata().partition_columns)
        self._static_version = table.version()  # what a static read reads up to

    def _check(self, table: Any) -> None:
        names = set(_arrow_schema(table).names)
        missing = [c for c in self.delta_names.values() if c not in names]
        if missing:
            raise DeltaLakeError(f"pw.Schema names column(s) {missing} that the Delta table {self.uri!r} does not "
                                 f"have; its columns are {sorted(names)}")

    def position(self) -> dict[str, Any]:
        return {"uri": self.uri, "version": self._last_version}

    def restore(self, position: dict[str, Any]) -> None:
        if position.get("uri") != self.uri:
            log.warning("%s: the stored position is for the Delta table %r, not %r; reading from the start",
                        self.label, position.get("uri"), self.uri)
            return
        self._last_version = position.get("version")
        log.info("%s: continuing after version %s of %r", self.label, self._last_version, self.uri)

    # -- discover, read ----------------------------------------------------------------------
    def discover(self) -> list[Segment]:
        assert self._files is not None, "the source was not opened"
        if self._finished:
            return []
        static = self.mode == "static"
        if self._last_version is None:  # nothing read yet: the table as it is now
            version = self._static_version if static else open_table(self.uri, self.storage_options).version()
            return [{"version": version, "snapshot": True}]
        if static:  # after a restart: the versions since the last one read, up to the one found at the start
            last = min(self._static_version, self._last_version + MAX_VERSIONS_PER_STEP)
            segments = [{"version": v} for v in range(self._last_version + 1, last + 1)]
            if not segments:
                self._finished = True
            return segments
        now = _time.monotonic()
        if now - self._last_poll < self.poll_interval_s:
            return []
        self._last_poll = now
        segments = []
        version = self._last_version + 1
        while len(segments) < MAX_VERSIONS_PER_STEP and self._files.has_version(version):
            segments.append({"version": version})
            version += 1
        return segments

    def read(self, segments: list[Segment]) -> pa.Table:
        tables = [self._read_segment(s) for s in segments]  # one transaction each (Source.read_transactions)
        return pa.concat_tables(tables) if tables else self.arrow_schema.empty_table()

    def _read_segment(self, segment: Segment) -> pa.Table:
        if segment.get("snapshot"):
            return self._snapshot(segment["version"])
        return self._commit(segment["version"])

    def _snapshot(self, version: int) -> pa.Table:
        table = open_table(self.uri, self.storage_options, version)
        actions = table.get_add_actions(flatten=True)
        actions = pa.table(actions) if not isinstance(actions, pa.Table) else actions
        names = actions.column_names
        if "deletionVector.storageType" in names and actions.column("deletionVector.storageType").null_count < len(actions):
            raise self._deletion_vectors(version)
        files = []
        for i, path in enumerate(actions.column("path").to_pylist()):
            values = {c: actions.column(f"partition.{c}")[i].as_py() for c in self._partition_columns
                      if f"partition.{c}" in names}
            files.append((path, {c: None if v is None else str(v) for c, v in values.items()}))
        files.sort()
        parts = [self._file_rows(path, partition, 1) for path, partition in files]
        log.info("%s: read version %d of %r: %d files", self.label, version, self.uri, len(files))
        return pa.concat_tables(parts) if parts else self.arrow_schema.empty_table()

    def _deletion_vectors(self, version: int) -> DeltaLakeError:
        return DeltaLakeError(f"version {version} of the Delta table {self.uri!r} uses deletion vectors, which "
                              "pw.io.deltalake does not read (nor does Pathway)")

    def _commit(self, version: int) -> pa.Table:
        assert self._files is not None
        parts = []
        actions = self._files.actions(version)
        changes_data = any(a[kind].get("dataChange", True) for a in actions for kind in ("add", "remove") if kind in a)
        if not changes_data and self.key_columns:
            # files only rewritten (OPTIMIZE): the rows and their ids (from the key) stay.  Rows
            # without a key take their ids from their files, so their files are followed: the
            # rows of the rewritten files are retracted and inserted again under new ids
            return self.arrow_schema.empty_table()
        for action in actions:  # retractions first: a rewritten row's old version goes before its new one
            if "remove" in action:
                if action["remove"].get("deletionVector"):
                    raise self._deletion_vectors(version)
                parts.append(self._file_rows(action["remove"]["path"], action["remove"].get("partitionValues") or {},
                                             -1))
        for action in actions:
            if "add" in action:
                if action["add"].get("deletionVector"):
                    raise self._deletion_vectors(version)
                parts.append(self._file_rows(action["add"]["path"], action["add"].get("partitionValues") or {}, 1))
        if parts:
            log.info("%s: read version %d of %r", self.label, version, self.uri)
        return pa.concat_tables(parts) if parts else self.arrow_schema.empty_table()

    def _file_rows(self, path: str, partition: dict[str, str | None], diff: int) -> pa.Table:
        """The changes of one data file's rows: ids from the key, or from the file and
        the row's place in it."""
        assert self._files is not None
        data = self._files.read_parquet(path)
        count = data.num_rows
        arrays: list[pa.Array] = []
        for column, dtype in self.columns.items():
            delta_name = self.delta_names[column]
            if delta_name in data.column_names:
                try:
                    array = from_delta(data.column(delta_name), dtype, delta_name)
                except RowsError as error:
                    raise DeltaLakeError(f"{self.label}: {error}") from None
            elif delta_name in partition:
                try:
                    value = partition_value(partition[delta_name], dtype)
                except (RowsError, ValueError) as error:
                    raise DeltaLakeError(f"{self.label}: partition value {partition[delta_name]!r} of column "
                                         f"{delta_name!r}: {error}") from None
                array = pa.array([value] * count, dtype.arrow_type())
            elif dtype.optional:
                array = pa.nulls(count, dtype.arrow_type())
            else:
                raise DeltaLakeError(f"{self.label}: the data file {path!r} has no column {delta_name!r}")
            arrays.append(array)
        return data_file_changes(self, arrays, count, _file_identity(path), diff)

    def advance(self, segments: list[Segment]) -> None:
        for segment in segments:
            self._last_version = segment["version"]
        if self.mode == "static" and self._last_version is not None and self._last_version >= self._static_version:
            self._finished = True


def _file_identity(path: str) -> str:
    """A data file as its rows' ids name it: its path in the table, decoded."""
    return unquote(path)


# ------------------------------------------------------------------------ sink

#: the folder name of a null partition value (Hive's, which Spark's Delta writer uses)
_PARTITION_NULL = "__HIVE_DEFAULT_PARTITION__"
#: a data file of a ``DeltaChangesSink``: its time (zero-padded, so that names sort in time
#: order) and a token of its own, so that two attempts of one Spark task never write one file
DATA_FILE = "part-{time:020d}-{token}.parquet"


def delta_columns(table: pa.Table, columns: dict[str, DType]) -> list[pa.Array]:
    """The table's ``columns`` as the Delta table holds them."""
    return [to_delta(table.column(i), t) for i, t in enumerate(columns.values())]


def change_rows(batch: OutputBatch, columns: dict[str, DType], schema: pa.Schema) -> pa.Table:
    """A time's changes as rows of a stream of changes, of ``schema``: the columns, then
    ``time`` and ``diff``.

    >>> from sparkway.core import dtypes
    >>> columns = {"word": dtypes.STR}
    >>> batch = OutputBatch(pa.table({"word": ["a"]}), 7, pa.array([-1]))
    >>> change_rows(batch, columns, delta_schema(columns, {}, STREAM_OF_CHANGES)).to_pylist()
    [{'word': 'a', 'time': 7, 'diff': -1}]
    """
    n = batch.table.num_rows
    arrays = delta_columns(batch.table, columns)
    arrays += [pa.array(np.full(n, batch.time, dtype=np.int64)), batch.diffs.cast(pa.int64())]
    return pa.Table.from_arrays(arrays, schema=schema)


class DeltaSink(Sink):
    """Writes each time's changes, and this sink's progress, in one Delta commit, all of
    it from the driver: the ``snapshot`` layout (one MERGE per time).  A stream of
    changes is ``DeltaChangesSink``'s, whose data files Spark's tasks write.

    >>> from sparkway.core import dtypes
    >>> sink = DeltaSink("/data/lake/counts", {"word": dtypes.STR, "n": dtypes.INT}, table_type="snapshot")
    >>> sink.table_schema().names
    ['word', 'n', '_id']
    """

    def __init__(self, uri: str, columns: dict[str, DType], *, table_type: str = STREAM_OF_CHANGES,
                 partition_columns: list[str] | None = None, s3_settings: AwsS3Settings | None = None,
                 column_metadata: dict[str, str] | None = None, name: str | None = None) -> None:
        self.uri = uri
        self.columns = dict(columns)
        self.table_type = table_type
        self.partition_columns = list(partition_columns or [])
        self.s3_settings = s3_settings
        self.storage_options = delta_storage_options(uri, s3_settings)
        self.column_metadata = dict(column_metadata or {})
        self.name = name or "deltalake"
        self.app_id = f"sparkway-{self.name}"  # the Delta txn action's application id
        self._table: Any = None
        self._done: int | None = None

    @property
    def label(self) -> str:
        return f"delta table {self.uri}"

    def table_schema(self) -> pa.Schema:
        return delta_schema(self.columns, self.column_metadata, self.table_type)

    def open(self) -> None:
        deltalake = require_deltalake()
        schema = self.table_schema()
        if deltalake.DeltaTable.is_deltatable(self.uri, storage_options=self.storage_options):
            self._table = open_table(self.uri, self.storage_options)
            self._check(self._table, schema)
        else:
            configuration = {APPEND_ONLY: "true"} if self.table_type == STREAM_OF_CHANGES else None
            if not is_s3(self.uri):
                os.makedirs(self.uri, exist_ok=True)
            try:
                self._table = deltalake.DeltaTable.create(
                    self.uri, schema, mode="error", partition_by=self.partition_columns or None,
                    configuration=configuration, storage_options=self.storage_options)
            except Exception as error:  # another writer made it meanwhile?
                if not deltalake.DeltaTable.is_deltatable(self.uri, storage_options=self.storage_options):
                    raise DeltaLakeError(f"cannot create the Delta table {self.uri!r}: {error}") from error
                self._table = open_table(self.uri, self.storage_options)
                self._check(self._table, schema)
        self._done = self._table.transaction_version(self.app_id)
        if self._done is not None:
            log.info("DeltaTableWriter-%s: %r holds the times up to %d", self.name, self.uri, self._done)

    def _check(self, table: Any, schema: pa.Schema) -> None:
        """The existing table must have the written columns, with their types."""
        deltalake = require_deltalake()
        existing = {f.name: f for f in table.schema().fields}
        wanted = {f.name: f for f in deltalake.Schema.from_arrow(schema).fields}
        problems = []
        extra = [c for c in wanted if c not in existing]
        if extra:
            problems.append(f"columns written that the table does not have: {extra}")
        lacking = [c for c in existing if c not in wanted]
        if lacking:
            problems.append(f"columns of the table that are not written: {lacking}")
        for c in wanted:
            if c in existing:
                old, new = existing[c], wanted[c]
                if _type_json(old) != _type_json(new) or old.nullable != new.nullable:
                    problems.append(f"column {c!r} is {_type_json(old)} (nullable={old.nullable}) in the table, "
                                    f"{_type_json(new)} (nullable={new.nullable}) written")
        if problems:
            raise DeltaLakeError(f"the Delta table {self.uri!r} does not fit the table written "
                                 f"({self.table_type}): {'; '.join(problems)}. Write elsewhere, or delete it")

    def write(self, batch: OutputBatch) -> None:
        if batch.table.num_rows == 0 or self._skipped(batch.time):
            return
        self._commit(batch.time, batch.table.num_rows, lambda commit: self._merge(batch, commit))

    def _skipped(self, time: int) -> bool:
        """Whether ``time`` is in the table already (a step replayed after a crash that
        followed its commit): it is then not written again."""
        assert self._table is not None, "the sink was not opened"
        if self._done is None or time > self._done:
            return False
        log.info("DeltaTableWriter-%s: time %d is already in %r (written up to time %d): skipped",
                 self.name, time, self.uri, self._done)
        return True

    def _commit(self, time: int, rows: int, write: Callable[[Any], None]) -> None:
        """``write(commit_properties)`` makes the time's changes one Delta commit; the
        properties record the time in it, in the ``txn`` action that ``open`` reads back."""
        deltalake = require_deltalake()
        started = _time.monotonic()
        commit = deltalake.CommitProperties(
            custom_metadata={"sparkway.sink": self.name, "sparkway.time": str(time)},
            app_transactions=[deltalake.Transaction(self.app_id, time)],
        )
        try:
            write(commit)
        except DeltaLakeError:
            raise
        except Exception as error:
            raise DeltaLakeError(
                f"writing the changes of time {time} to the Delta table {self.uri!r} (sink {self.name!r}) "
                f"failed: {error}. Nothing of this time was committed: fix the cause and restart"
            ) from error
        self._done = time
        log.info("DeltaTableWriter-%s: Done writing %d entries, time %d, in %d ms.", self.name, rows, time,
                 (_time.monotonic() - started) * 1000)

    def _merge(self, batch: OutputBatch, commit: Any) -> None:
        """Per row id, its insertion if it has one (an upsert), else its retraction (a
        delete): one MERGE on ``_id``."""
        if batch.ids is None:
            raise DeltaLakeError("the snapshot sink needs the row ids of the changes")
        latest = batch.last_change_per_id()
        ops = pc.greater(latest.diffs, 0)
        arrays = delta_columns(latest.table, self.columns)
        arrays.append(pa.array([pointer_text(i) for i in latest.ids.to_pylist()], pa.string()))
        schema = self.table_schema()
        source = pa.Table.from_arrays(arrays, schema=pa.schema([f.with_nullable(True) for f in schema]))
        source = source.append_column("__sparkway_upsert", ops)
        names = schema.names
        merger = self._table.merge(source, predicate=f"t.{_sql_name(ID_COLUMN)} = s.{_sql_name(ID_COLUMN)}",
                                   source_alias="s", target_alias="t", commit_properties=commit)
        updates = {_sql_name(c): f"s.{_sql_name(c)}" for c in names}
        merger = merger.when_matched_delete(predicate="NOT s.__sparkway_upsert")
        merger = merger.when_matched_update(updates=updates, predicate="s.__sparkway_upsert")
        merger = merger.when_not_matched_insert(updates=updates, predicate="s.__sparkway_upsert")
        merger.execute()

    def close(self) -> None:
        self._table = None


class DeltaDataFiles(PieceWriter):
    """Writes a piece of a time's changes as Parquet data files in the Delta table's
    folder, one per partition value found in the piece (in the ``column=value/`` folder
    Spark's own Delta writer would use; the partition columns are in the log, not in the
    file), where it runs (a Spark task), and returns their receipts (JSON: each file's
    path in the table's folder, partition values, size and statistics), which the
    ``DeltaChangesSink`` on the driver commits.  A data file that no commit names is no
    part of the table, invisible to readers (Spark's own Delta writer relies on it too):
    a second attempt of a task, whose receipts never reach the driver, leaves such an
    orphan file, which ``vacuum`` removes.

    >>> from sparkway.core import dtypes
    >>> columns = {"day": dtypes.STR, "word": dtypes.STR}
    >>> folder = str(getfixture("tmp_path"))
    >>> files = DeltaDataFiles(folder, None, columns, delta_schema(columns, {}, STREAM_OF_CHANGES), ["day"])
    >>> piece = files.write_piece(OutputBatch(pa.table({"day": ["d1", "d1", "d 2"], "word": ["a", "b", "c"]}),
    ...                                       7, pa.array([1, 1, 1])))
    >>> [(r["partitionValues"], r["path"].split("/")[0], r["stats"]["numRecords"]) for r in json.loads(piece.data)]
    [({'day': 'd 2'}, 'day=d%202', 1), ({'day': 'd1'}, 'day=d1', 2)]
    """

    writes_files = True

    def __init__(self, uri: str, s3_settings: AwsS3Settings | None, columns: dict[str, DType],
                 schema: pa.Schema, partition_columns: list[str] | None = None) -> None:
        self.uri, self.s3_settings, self.columns, self.schema = uri, s3_settings, columns, schema
        self.partition_columns = list(partition_columns or [])

    def write_piece(self, batch: OutputBatch) -> Piece:
        rows = change_rows(batch, self.columns, self.schema)
        files = _Files(self.uri, self.s3_settings)
        receipts = [self._write(files, batch.time, values, part) for values, part in self._partitions(rows)]
        return Piece(rows.num_rows, json.dumps(receipts).encode())

    def _partitions(self, rows: pa.Table) -> Iterator[tuple[dict[str, str | None], pa.Table]]:
        """The rows of each partition value in ``rows``, without the partition columns."""
        if not self.partition_columns:
            yield {}, rows
            return
        numbered = rows.append_column("__row", pa.array(np.arange(rows.num_rows)))
        groups = numbered.group_by(self.partition_columns, use_threads=False).aggregate([("__row", "list")])
        data = rows.drop_columns(self.partition_columns)
        for group in sorted(groups.to_pylist(), key=lambda g: [str(g[c]) for c in self.partition_columns]):
            yield {c: partition_text(group[c]) for c in self.partition_columns}, data.take(group["__row_list"])

    def _write(self, files: _Files, time: int, values: dict[str, str | None], rows: pa.Table) -> dict[str, Any]:
        folder = "/".join(f"{quote(c, safe='')}={_PARTITION_NULL if v is None else quote(v, safe='')}"
                          for c, v in values.items())
        name = posixpath.join(folder, DATA_FILE.format(time=time, token=uuid.uuid4().hex))
        size, footer = files.write_parquet(name, rows)
        return {"path": name, "partitionValues": values, "size": size, "written_ms": int(_time.time() * 1000),
                "stats": file_stats(footer, rows.schema)}


class DeltaChangesSink(PieceSink, DeltaSink):
    """Appends every change as a row, ``<columns>, time, diff``, to a Delta table
    (partitioned or not), each time in one commit with this sink's progress (as
    ``DeltaSink``): the data files are written where the changes are
    (``DeltaDataFiles``: by Spark's tasks, in a large step), and the driver commits the
    files of a time's pieces in one transaction.  Local tables and ``s3://`` ones (the
    tasks write through s3fs).

    >>> from sparkway.core import dtypes
    >>> sink = DeltaChangesSink("/data/lake/counts", {"word": dtypes.STR, "n": dtypes.INT})
    >>> sink.piece_writer().schema.names
    ['word', 'n', 'time', 'diff']
    """

    def __init__(self, uri: str, columns: dict[str, DType], *, partition_columns: list[str] | None = None,
                 s3_settings: AwsS3Settings | None = None, column_metadata: dict[str, str] | None = None,
                 name: str | None = None) -> None:
        super().__init__(uri, columns, table_type=STREAM_OF_CHANGES, partition_columns=partition_columns,
                         s3_settings=s3_settings, column_metadata=column_metadata, name=name)
        self.files = DeltaDataFiles(uri, s3_settings, self.columns, self.table_schema(), self.partition_columns)
        self._receipts: list[dict[str, Any]] = []  # of the time being written

    def piece_writer(self) -> DeltaDataFiles:
        return self.files

    def take_piece(self, time: int, piece: Piece) -> None:
        self._receipts += json.loads(piece.data)

    def end_time(self, time: int) -> None:
        receipts, self._receipts = self._receipts, []
        if not receipts:
            return
        if self._skipped(time):  # no commit will ever name these files
            _Files(self.uri, self.s3_settings).remove([r["path"] for r in receipts])
            return
        actions = [_add_action(r) for r in receipts]
        rows = sum(r["stats"]["numRecords"] for r in receipts)
        self._commit(time, rows, lambda commit: self._add(actions, commit))

    def _add(self, actions: list[Any], commit: Any) -> None:
        self._table.create_write_transaction(actions, mode="append", schema=self.table_schema(),
                                             partition_by=self.partition_columns or None, commit_properties=commit)
        # unlike delta-rs's own writes, this one leaves the table object at its version:
        # the next commit would take this one for a concurrent transaction of its app id
        self._table.update_incremental()


def _add_action(receipt: dict[str, Any]) -> Any:
    """The ``add`` action of a data file a ``DeltaDataFiles`` wrote (delta-rs encodes its
    path for the log)."""
    from deltalake.transaction import AddAction

    return AddAction(receipt["path"], receipt["size"], receipt.get("partitionValues", {}), receipt["written_ms"], True,
                     json.dumps(receipt["stats"]))


def file_stats(footer: Any, schema: pa.Schema) -> dict[str, Any]:
    """Delta's statistics of a data file (``add.stats``), from its Parquet ``footer``, as
    delta-rs's own writer keeps them: its rows, and per column its nulls and bounds
    (date-times to the millisecond; none for binary columns and lists).  Readers skip
    files by them, and delta-rs reads a column without bounds as one of nulls only: a
    file with fewer statistics than these is misread.

    >>> import pyarrow.parquet as pq
    >>> footer = []
    >>> pq.write_table(pa.table({"n": [3, None, 1]}), pa.BufferOutputStream(), metadata_collector=footer)
    >>> file_stats(footer[0], pa.schema([pa.field("n", pa.int64())]))
    {'numRecords': 3, 'minValues': {'n': 1}, 'maxValues': {'n': 3}, 'nullCount': {'n': 1}}
    """
    stats: dict[str, Any] = {"numRecords": footer.num_rows, "minValues": {}, "maxValues": {}, "nullCount": {}}
    groups = [footer.row_group(g) for g in range(footer.num_row_groups)]
    for i, (path, kind) in enumerate(_parquet_columns(schema)):
        chunks = [group.column(i).statistics for group in groups]
        if kind is None or any(c is None or not c.has_null_count for c in chunks):
            continue
        _put(stats["nullCount"], path, sum(c.null_count for c in chunks))
        bounded = [c for c in chunks if c.has_min_max]  # a group of nulls only has none
        if bounded:
            _put(stats["minValues"], path, _stat_value(min(c.min for c in bounded), kind))
            _put(stats["maxValues"], path, _stat_value(max(c.max for c in bounded), kind))
    return stats


def _parquet_columns(fields: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], pa.DataType | None]]:
    """The Parquet columns of these Arrow fields, in the file's order: each one's path of
    names, and its type, or None where Delta keeps no statistics (binary, in a list)."""
    for field in fields:
        where = (*path, field.name)
        if pa.types.is_struct(field.type):
            yield from _parquet_columns(list(field.type), where)
        elif pa.types.is_list(field.type):
            yield from ((inner, None) for inner, _ in _parquet_columns([field.type.value_field], where))
        else:
            yield where, None if pa.types.is_binary(field.type) else field.type


def _stat_value(value: Any, kind: pa.DataType) -> Any:
    """A bound as Delta's statistics hold it (delta-rs's forms: date-times to the
    millisecond, a non-finite float as null)."""
    if pa.types.is_timestamp(kind):
        text = value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"
        return text.replace(" ", "T") + "Z" if kind.tz is not None else text
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _put(stats: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    """Sets a nested column's entry (a struct's fields are an object of their own)."""
    for name in path[:-1]:
        stats = stats.setdefault(name, {})
    stats[path[-1]] = value


def _sql_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _type_json(field: Any) -> str:
    kind = field.type
    to_json = getattr(kind, "to_json", None)
    return to_json() if to_json is not None else str(kind)

