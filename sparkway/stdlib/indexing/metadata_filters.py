"""Metadata filters of the indexes: JMESPath expressions over each entry's JSON metadata.

An entry passes a filter when the expression evaluates to ``true`` on its metadata (any
other value, e.g. a missing field, leaves it out); no filter (None) lets every entry
pass. Besides JMESPath's functions, ``globmatch(pattern, path)`` matches a path against
a glob pattern segment by segment (``*`` within a segment, ``**`` any number of them).
The ``jmespath`` package is imported only when a filter is evaluated.

>>> from sparkway.stdlib.indexing.metadata_filters import passes
>>> passes("foo > `4`", {"foo": 5}), passes("foo > `4`", {"foo": 3}), passes(None, {"foo": 3})
(True, False, True)
>>> passes("globmatch('docs/**/*.md', path)", {"path": "docs/a/b/c.md"})
True
"""

from __future__ import annotations

import fnmatch
import functools
from typing import Any


def _glob_segments(pattern: list[str], path: list[str]) -> bool:
    """Whether the path's segments match the pattern's, ``**`` standing for any number."""

    @functools.lru_cache(maxsize=None)
    def match(i: int, j: int) -> bool:
        if i == len(pattern):
            return j == len(path)
        if pattern[i] == "**":
            return match(i + 1, j) or (j < len(path) and match(i, j + 1))
        return j < len(path) and fnmatch.fnmatchcase(path[j], pattern[i]) and match(i + 1, j + 1)

    return match(0, 0)


def globmatch(pattern: str, path: str) -> bool:
    """Whether ``path`` matches the glob ``pattern``, ``/``-separated segment by segment.

    >>> globmatch("a/*/c", "a/b/c"), globmatch("a/*", "a/b/c"), globmatch("**/c", "a/b/c")
    (True, False, True)
    """
    return _glob_segments(pattern.split("/"), path.split("/"))


@functools.lru_cache(maxsize=1024)
def _compiled(expression: str) -> Any:
    """The parsed expression (parsing is the costly part; filters repeat)."""
    import jmespath

    return jmespath.compile(expression)


@functools.lru_cache(maxsize=1)
def _options() -> Any:
    import jmespath
    import jmespath.functions

    class Functions(jmespath.functions.Functions):
        @jmespath.functions.signature({"types": ["string"]}, {"types": ["string"]})
        def _func_globmatch(self, pattern: str, path: str) -> bool:
            return globmatch(pattern, path)

    return jmespath.Options(custom_functions=Functions())


def passes(expression: str | None, metadata: Any) -> bool:
    """Whether an entry with ``metadata`` (a ``pw.Json``, or plain JSON values) passes the
    filter ``expression``; an invalid expression raises ``jmespath``'s ``ParseError``."""
    if expression is None:
        return True
    value = getattr(metadata, "value", metadata)
    return _compiled(expression).search(value, options=_options()) is True


def is_filter_error(error: BaseException) -> bool:
    """Whether ``error`` comes from an invalid filter expression (jmespath's errors)."""
    return type(error).__module__.startswith("jmespath")
