"""``Table.plot``: a Bokeh figure fed by a table, live while ``pw.run()`` runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparkway.api.table import Table
from sparkway.errors import PlanError
from sparkway.stdlib.viz._follow import Followed, header


def plot(self: Table, plotting_function: Callable[[Any], Any], sorting_col: str | None = None) -> Any:
    """A Panel column with the figure ``plotting_function`` draws from a Bokeh
    ``ColumnDataSource`` holding the table's columns.  A table reading only static input
    is computed now; a streaming one fills the figure as ``pw.run()`` processes its
    input, once per time.  Rows are in the order of ``sorting_col`` (else of their ids).

    >>> import sparkway as pw
    >>> from bokeh.plotting import figure
    >>> def scatter(source):
    ...     fig = figure(height=300, width=300)
    ...     fig.scatter("x", "y", source=source)
    ...     return fig
    >>> t = pw.debug.table_from_markdown('''
    ...     x | y
    ...     1 | 3
    ...     2 | 1
    ... ''')
    >>> viz = t.plot(scatter, sorting_col="y")
    >>> dict(viz[1].object.renderers[0].data_source.data)
    {'x': [2, 1], 'y': [1, 3]}
    """
    import panel as pn
    from bokeh.models import ColumnDataSource

    names = self.column_names()
    if sorting_col is not None and sorting_col not in names:
        raise PlanError(f"sorting_col {sorting_col!r} is not a column of the table; its columns: {', '.join(names)}")
    source = ColumnDataSource(data={name: [] for name in names})
    figure = plotting_function(source)

    def show_rows(rows: dict[int, dict[str, Any]]) -> None:
        if sorting_col is None:
            ordered = [row for _, row in sorted(rows.items())]
        else:  # None first
            ordered = sorted(rows.values(), key=lambda row: (row[sorting_col] is not None, row[sorting_col]))
        source.data = {name: [row[name] for row in ordered] for name in names}

    def refresh(followed: Followed) -> None:
        rows = dict(followed.rows)
        document = getattr(figure, "document", None)
        if document is not None and document.session_context is not None:
            # a served document is changed in its own thread
            document.add_next_tick_callback(lambda: show_rows(rows))
        else:
            show_rows(rows)

    return pn.Column(header(Followed(self, refresh).bounded), figure)
