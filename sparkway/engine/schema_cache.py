"""Schemas of Spark Connect plans kept across runs, so that a rerun asks the server for none.

Through Spark Connect, a DataFrame's schema (``frame.columns``, ``frame.schema``), which
the engine reads while it builds a step's plan, is an analysis by the server: about 20
ms each, and a small program's first step asks for about 30 (a third of its time
attached to the daemon).  A program rerun builds the same plans, and a plan's schema is
a function of the plan alone when its leaves carry their data (local relations, ranges):
such a schema is stored under a digest of the plan and of the session's settings, in
the daemon's folder (one per installation, so one Spark), and read from there next time.

The digest leaves out what does not decide a schema but changes from run to run: plan
ids (numbered in order of appearance, so that a plan edited upstream still matches
downstream), the call sites Connect records, and the pickled body of Python functions
(whose declared output type stays in).  A plan that reads tables, files, SQL text or a
frame cached on the server is always analysed by the server: what it names may change.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

#: relations whose schema depends on more than the plan's bytes
_NAMED = frozenset({
    "read", "sql", "catalog", "cached_remote_relation", "common_inline_user_defined_table_function",
    "common_inline_user_defined_data_source", "with_relations", "extension", "unknown",
})
#: plans larger than this (local relations of many rows) are analysed by the server:
#: their digest would cost more than the analysis
_LARGEST = 1 << 20
#: entries kept; beyond, the least recently used half is removed
_ENTRIES = 20_000


def keep_schemas(spark: SparkSession, folder: Path, context: str) -> None:
    """Makes the Connect session ``spark`` take the schemas of plans it analysed in earlier
    runs from ``folder``, and store those of new ones there; ``context``: what else
    decides a schema (the session's settings)."""
    folder.mkdir(mode=0o700, exist_ok=True)
    _prune(folder)
    client = spark.client  # type: ignore[attr-defined]
    client.schema = _cached(client.schema, folder, context)


def _cached(analyse: Callable[[Any], StructType], folder: Path, context: str) -> Callable[[Any], StructType]:
    def schema(plan: Any) -> StructType:
        key = plan_digest(plan, context)
        if key is None:
            return analyse(plan)
        entry = folder / f"{key}.json"
        with contextlib.suppress(OSError, ValueError):
            found = StructType.fromJson(json.loads(entry.read_text()))
            os.utime(entry)  # recently used: kept by _prune
            return found
        found = analyse(plan)
        _write(entry, found.json())
        return found

    return schema


def plan_digest(plan: Any, context: str) -> str | None:
    """The digest of a Connect ``Plan`` without what varies between runs, or None when its
    schema may depend on more than the plan (``_NAMED``)."""
    if plan.ByteSize() > _LARGEST or not plan.HasField("root"):  # a compressed plan hides its leaves
        return None
    canonical = type(plan)()
    canonical.CopyFrom(plan)
    if not _canonical(canonical, {}):
        return None
    digest = hashlib.sha256(context.encode())
    digest.update(canonical.SerializeToString(deterministic=True))
    return digest.hexdigest()


def _canonical(message: Any, plan_ids: dict[int, int]) -> bool:
    """Rewrites ``message`` in place into its canonical form; False if it names data."""
    if message.DESCRIPTOR.name == "Relation" and message.WhichOneof("rel_type") in _NAMED:
        return False
    for field, value in message.ListFields():
        if field.name == "plan_id" and field.type == field.TYPE_INT64:
            setattr(message, "plan_id", plan_ids.setdefault(value, len(plan_ids)))
        elif (field.type == field.TYPE_MESSAGE and field.message_type.name == "Origin") or (
                field.name == "command" and message.DESCRIPTOR.name == "PythonUDF"):
            message.ClearField(field.name)
        elif field.type == field.TYPE_MESSAGE:
            if field.message_type.GetOptions().map_entry:
                items = value.values() if field.message_type.fields_by_name["value"].message_type else []
            else:
                items = value if _repeated(field) else [value]
            if not all(_canonical(item, plan_ids) for item in items):
                return False
    return True


def _repeated(field: Any) -> bool:
    if hasattr(field, "is_repeated"):  # protobuf 5.28 on; ``label`` is gone from 7
        return bool(field.is_repeated)
    return bool(field.label == field.LABEL_REPEATED)


def _write(path: Path, text: str) -> None:
    """Writes an entry at once (a concurrent run reads all of it or nothing)."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        temporary.write_text(text)
        os.replace(temporary, path)


def _prune(folder: Path) -> None:
    with contextlib.suppress(OSError):
        entries = list(os.scandir(folder))
        if len(entries) <= _ENTRIES:
            return
        entries.sort(key=lambda e: e.stat().st_mtime)
        for entry in entries[: len(entries) // 2]:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
