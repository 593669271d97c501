"""Live views of a table in a notebook or a Panel dashboard (``Table.plot``, ``Table.show``;
needs the ``viz`` extra: ``pip install 'sparkway[viz]'``)."""

from sparkway.stdlib.viz.plotting import plot
from sparkway.stdlib.viz.table_viz import show

__all__ = ["plot", "show"]
