"""The corpus: programs written here, whose outputs real Pathway 0.33.0 recorded.

Each program in ``tests/corpus/programs`` runs under sparkway (``import pathway`` answered
by sparkway) in this process, and every output file, printed line and error must equal
what Pathway wrote, byte for byte after ``tests/corpus/harness.py``'s normalizations
(time values as ranks, rows of one time sorted). ``scripts/record-corpus.sh`` records.
The programs must give the same outputs through Spark's own Connect server, run in a
process attached to it (``corpus/run_attached.py``).
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
from corpus import harness

import sparkway
from sparkway.api import graph

pytestmark = [pytest.mark.usefixtures("spark"), pytest.mark.releases]


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

    program = harness.load(path, sparkway)
    check_outputs(path.stem, harness.execute(program, tmp_path, graph.clear, postgres))


def check_outputs(name: str, actual: dict[str, str]) -> None:
    """``actual``, a program's normalized outputs, are Pathway's."""
    expected = _expected(name)
    for file, text in expected.items():
        if file.endswith("error.txt") and file in actual:
            # sparkway's error must be each standard error class Pathway's was
            missing = set(text.split()) - set(actual[file].split())
            assert not missing, f"{file}: sparkway raised {actual[file].split()[0]}, not {sorted(missing)}"
            actual[file] = text
    assert sorted(actual) == sorted(expected), "different output files (or an error where there was none)"
    for file in expected:
        assert actual[file] == expected[file], f"{name}: {file} differs"


def test_programs_through_spark_connect_match_pathway(tmp_path: Path, python_env: dict[str, str],
                                                      spark_connect_server, postgres_server) -> None:
    """Every program, run in a process attached to Spark's own Connect server, gives
    Pathway's outputs, as it does in a classic session."""
    databases = {p.stem: postgres_server.settings(postgres_server.create_database()) for p in harness.programs()
                 if "postgres" in inspect.signature(harness.load(p, sparkway).run).parameters}
    out = tmp_path / "outputs.json"
    env = {**python_env, "SPARKWAY_SPARK_MASTER": spark_connect_server.address}
    proc = subprocess.run([sys.executable, str(harness.PROGRAMS.parent / "run_attached.py"), str(out),
                           str(tmp_path / "work"), json.dumps(databases)], env=env, capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 0, proc.stderr[-6000:]
    assert "Attached to the Spark Connect server" in proc.stderr
    failed = {}
    for name, actual in json.loads(out.read_text()).items():
        try:
            check_outputs(name, actual)
        except AssertionError as error:
            failed[name] = str(error).splitlines()[0]
    assert not failed, f"{len(failed)} programs differ through Spark Connect: {failed}"
