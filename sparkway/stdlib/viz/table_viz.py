"""``Table.show``: a table widget (Panel's Tabulator) kept equal to a table."""

from __future__ import annotations

from typing import Any

from sparkway.api.table import Table
from sparkway.core import dtypes as dt
from sparkway.core.text import pointer_text
from sparkway.stdlib.viz._follow import Followed, header

_JSON_SHOWN = 64  # characters of a JSON value shown in a cell


def show(
    self: Table,
    *,
    snapshot: bool = True,
    include_id: bool = True,
    short_pointers: bool = True,
    sorters: list[dict[str, str]] | None = None,
    page_size: int = 10,
    table_height: int = 400,
) -> Any:
    """A Panel column with a table widget showing the table: its current rows
    (``snapshot=True``) or every change with its ``time`` and ``diff`` (newest first).  A
    table reading only static input is computed now; a streaming one changes as
    ``pw.run()`` processes its input, once per time.  ``sorters`` are Tabulator's
    (``[{"field": "a", "dir": "desc"}]``).

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown('''
    ...     a | b
    ...     1 | x
    ... ''')
    >>> t.show(include_id=False)[1].value.to_dict("records")
    [{'a': 1, 'b': 'x'}]
    """
    import pandas as pd
    import panel as pn

    pn.extension("tabulator")  # without it a notebook cannot draw the widget
    types = self.schema._dtypes()
    names = (["id"] if include_id else []) + list(types) + ([] if snapshot else ["time", "diff"])
    widget = pn.widgets.Tabulator(
        pd.DataFrame(columns=names), disabled=True, show_index=False, height=table_height,
        pagination="local", page_size=page_size, sizing_mode="stretch_width",
    )
    cell = {name: _cell_text(kind, short_pointers) for name, kind in types.items()}
    cell["id"] = _cell_text(dt.POINTER, short_pointers)

    def refresh(followed: Followed) -> None:
        if snapshot:
            rows = [{"id": key, **row} for key, row in sorted(followed.rows.items())]
        else:
            rows = [{"id": key, **row, "time": time, "diff": diff} for key, row, time, diff in followed.changes]
        widget.value = pd.DataFrame(
            [{name: cell.get(name, _same)(row[name]) for name in names} for row in rows], columns=names
        )

    followed = Followed(self, refresh, keep_changes=not snapshot)
    widget.sorters = list(sorters or []) + ([] if snapshot else [{"field": "time", "dir": "desc"}, {"field": "diff", "dir": "desc"}])
    if not snapshot:
        widget.style.apply(_colour_by_diff, axis=1)
    return pn.Column(header(followed.bounded), widget)


def _same(value: Any) -> Any:
    return value


def _cell_text(kind: dt.DType, short_pointers: bool) -> Any:
    """How a cell of this type is shown: ids as text, JSON cut short, date-times without
    nanoseconds; others as they are."""
    base = kind.with_optional(False)
    if base.name == "Pointer":
        return lambda v: None if v is None else pointer_text(v, short=short_pointers)
    if base == dt.JSON:
        return lambda v: None if v is None else (text if len(text := str(v)) <= _JSON_SHOWN else text[:_JSON_SHOWN] + " ...")
    if base.name in ("DateTimeNaive", "DateTimeUtc"):
        return lambda v: None if v is None else v.strftime("%Y-%m-%d %H:%M:%S%z")
    return _same


def _colour_by_diff(row: Any) -> list[str]:
    colour = "red" if row["diff"] < 0 else "green"
    return [f"color: {colour}"] * len(row)
