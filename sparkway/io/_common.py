"""What every ``pw.io`` connector shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparkway.api import graph
from sparkway.api.table import Table
from sparkway.connectors.base import ID_COLUMN, META_COLUMNS, SNAPSHOT, STREAM_OF_CHANGES
from sparkway.core.expression import ColumnRef
from sparkway.errors import PlanError, PlanTypeError


def refuse_unknown_options(function: str, options: dict[str, Any], ignored: tuple[str, ...] = ()) -> None:
    """Pathway's options that do not change what sparkway computes (``ignored``) are
    accepted; any other name is refused as Python refuses a misspelt keyword, so that a
    typo (``mdoe="static"``) is not silently dropped."""
    unknown = [name for name in options if name not in ignored]
    if unknown:
        raise TypeError(f"{function}() got unexpected keyword arguments: {', '.join(map(repr, unknown))}")


def persistent_name(name: str | None, persistent_id: str | None) -> str | None:
    """The source's persistent id: ``name=``, or its older spelling ``persistent_id=``."""
    if persistent_id is not None and name is not None and persistent_id != name:
        raise PlanError("give name= or its older spelling persistent_id=, not both")
    return name if name is not None else persistent_id


def snapshot_primary_key(table: Table, primary_key: list[Any] | None, output_table_type: str) -> list[str]:
    """A database sink's ``primary_key=`` as column names (from references such as
    ``table.col``, ``pw.this.col``, or names): snapshots only, each a non-optional column of
    the table, once."""
    if output_table_type != "snapshot":
        if primary_key:
            raise PlanError("primary_key is for output_table_type='snapshot' only")
        return []
    if not primary_key:
        raise PlanError("a snapshot needs primary_key: the column(s) that identify a row, e.g. [table.id_col]")
    names = [c.name if isinstance(c, ColumnRef) else c for c in primary_key]
    columns = table.schema._dtypes()
    for name in names:
        if not isinstance(name, str) or name not in columns:
            raise PlanError(f"primary_key entry {name!r} is not a column of the table; its columns are {list(columns)}")
        if columns[name].optional:
            raise PlanError(f"primary_key column {name!r} is declared nullable, and key columns must be "
                            "non-nullable in snapshot mode (a NULL key could never be matched to delete it): "
                            f"filter the Nones out first (.filter(pw.this.{name}.is_not_none()))")
    repeated = sorted({c for c in names if names.count(c) > 1})
    if repeated:
        raise PlanError(f"primary_key contains duplicate column(s) {repeated}: name each column once")
    return names


def refuse_reserved_columns(columns: dict[str, Any], reserved: tuple[str, ...], what: str) -> None:
    """A table whose columns would collide with the ones a sink adds (``time``, ``diff``,
    ``_id``) is refused, with the way out."""
    taken = [c for c in columns if c in reserved]
    if taken:
        raise PlanError(f"column(s) {taken} collide with the {list(reserved)} column(s) the {what} gets: rename "
                        "them (table.rename(...)) before writing")


def table_sink_columns(
    table: Table, output_table_type: str, min_commit_frequency: int | None, what: str,
    column_type: Callable[[Any], Any],
) -> dict[str, Any]:
    """The columns a table sink (Delta Lake, Iceberg) writes, checked: the layout is one
    of the two, ``min_commit_frequency`` a number of milliseconds, no column collides with
    the ones the layout adds, and ``column_type`` (which raises PlanTypeError for a type
    the format cannot store) accepts each column's type."""
    if output_table_type not in (STREAM_OF_CHANGES, SNAPSHOT):
        raise PlanError(f"output_table_type must be {STREAM_OF_CHANGES!r} or {SNAPSHOT!r}, not {output_table_type!r}")
    if min_commit_frequency is not None and min_commit_frequency < 0:
        raise PlanError(f"min_commit_frequency must be a number of milliseconds, not {min_commit_frequency}")
    columns = table.schema._dtypes()
    special = META_COLUMNS if output_table_type == STREAM_OF_CHANGES else (ID_COLUMN,)
    refuse_reserved_columns(columns, special, f"{output_table_type} {what}")
    for column, dtype in columns.items():
        try:
            column_type(dtype)
        except PlanTypeError as error:
            raise PlanTypeError(f"column {column!r}: {error}") from None
    return columns


def refuse_a_second_output(same_target: Callable[[Any], bool], what: str) -> None:
    """Two outputs of one program writing one table would share its progress record
    and skip each other's times: the sinks of the outputs defined so far for which
    ``same_target(sink)`` holds are refused."""
    if any(same_target(output.sink) for output in graph.outputs()):
        raise PlanError(f"two outputs of this program write to {what}: write each table once (concatenate the "
                        "tables first)")
