"""sparkway: incremental, persistent, consistent data pipelines on Apache Spark.

The API follows Pathway's, so that ``import sparkway as pw`` runs Pathway programs::

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown('''
    ... a | b
    ... 1 | 2
    ... ''')
    >>> pw.debug.compute_and_print(t.select(s=t.a + t.b), include_id=False)
    s
    3

``import sparkway`` itself loads nothing: the API (``sparkway.public``, with pyspark,
pyarrow and pandas behind it) is loaded on the first use of one of its names;
``pw.__version__`` is the installed distribution's version.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sparkway.public import *  # noqa: F403


def __getattr__(name: str) -> Any:
    if name == "__version__":  # the installed distribution's, as ``pw.__version__`` in Pathway
        from importlib.metadata import version

        return version("sparkway")
    if name.startswith("__"):  # copy, pickle and doctest probe for dunders: no API load
        raise AttributeError(f"module 'sparkway' has no attribute {name!r}")
    public = importlib.import_module("sparkway.public")
    try:
        value = getattr(public, name)
    except AttributeError:
        raise AttributeError(f"module 'sparkway' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(importlib.import_module("sparkway.public").__all__))
