"""Hooks of the documentation build (mkdocs.yml): the docstrings' doctest examples
(``>>>`` lines and the output after them) are shown as Python console code, not as the
nested quotes Markdown would make of them."""

from __future__ import annotations

import re
from typing import Any

from markdown import Markdown
from markdown.extensions import Extension
from markdown.preprocessors import Preprocessor


#: "# doctest: +SKIP" and the like: for the test runner, not for the reader
DOCTEST_DIRECTIVE = re.compile(r"\s*# doctest:.*$")


class DoctestBlocks(Preprocessor):
    """Fences every run of lines that starts with ``>>>`` and lasts until a blank line."""

    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        in_example = False
        for line in lines:
            starts = line.lstrip().startswith(">>>")
            if starts and not in_example:
                indent = line[: len(line) - len(line.lstrip())]
                out += ["", f"{indent}```pycon"]
                in_example = True
            elif in_example and not line.strip():
                out.append(f"{indent}```")
                in_example = False
            out.append(DOCTEST_DIRECTIVE.sub("", line) if in_example else line)
        if in_example:
            out.append(f"{indent}```")
        return out


class DoctestExtension(Extension):
    def extendMarkdown(self, md: Markdown) -> None:  # noqa: N802 - Markdown's name
        # before the fenced-code preprocessor (priority 25), which then reads the fences
        md.preprocessors.register(DoctestBlocks(md), "doctest_blocks", 30)


def on_config(config: Any) -> Any:
    config.markdown_extensions.append(DoctestExtension())
    return config
