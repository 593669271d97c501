"""The corpus: programs written here, whose outputs real Pathway 0.33.0 recorded.

Each program in ``tests/corpus/programs`` runs under sparkway (``import pathway`` answered
by sparkway) in this process, and every output file, printed line and error must equal
what Pathway wrote, byte for byte after ``tests/corpus/harness.py``'s normalizations
(time values as ranks, rows of one time sorted). ``scripts/record-corpus.sh`` records.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus import harness

import sparkway
from sparkway.api import graph

pytestmark = pytest.mark.usefixtures("spark")


def _expected(name: str) -> dict[str, str]:
    folder = harness.EXPECTED / name
    if not folder.is_dir():
        pytest.fail(f"no recorded outputs for {name}: run ./scripts/record-corpus.sh {name}")
    return {str(p.relative_to(folder)): p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("path", harness.programs(), ids=lambda p: p.stem)
def test_program_matches_pathway(path: Path, step_path: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    def postgres() -> dict:
        server = request.getfixturevalue("postgres_server")
        return server.settings(server.create_database())

    expected = _expected(path.stem)
    program = harness.load(path, sparkway)
    actual = harness.execute(program, tmp_path, graph.clear, postgres)
    for name, text in expected.items():
        if name.endswith("error.txt") and name in actual:
            # sparkway's error must be each standard error class Pathway's was
            missing = set(text.split()) - set(actual[name].split())
            assert not missing, f"{name}: sparkway raised {actual[name].split()[0]}, not {sorted(missing)}"
            actual[name] = text
    assert sorted(actual) == sorted(expected), "different output files (or an error where there was none)"
    for name in expected:
        assert actual[name] == expected[name], f"{path.stem}: {name} differs"
