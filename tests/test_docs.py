"""The documentation site (mkdocs.yml): the guides and the API reference made from the
docstrings build without a warning (a broken link, a docstring mkdocstrings cannot read,
a page missing from the navigation), and the docstrings' examples are shown as code."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_documentation_builds_without_a_warning(tmp_path: Path) -> None:
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-4000:]
    page = (tmp_path / "reference" / "run" / "index.html").read_text()
    assert '<code class="language-pycon">&gt;&gt;&gt; import sparkway as pw' in page, "examples are code"
    assert "doctest:" not in page, "the test runner's directives are not shown"


def test_every_name_of_pw_has_a_docstring_with_an_example() -> None:
    """The doctest run of the suite then checks that each example works."""
    public = importlib.import_module("sparkway.public")
    names = [name for name in public.__all__ if not inspect.ismodule(getattr(public, name))]
    lacking = [name for name in names if ">>>" not in (inspect.getdoc(getattr(public, name)) or "")]
    assert not lacking, f"pw names whose docstring has no example: {lacking}"
