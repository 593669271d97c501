"""Runs every corpus program under sparkway in this process and writes their normalized
outputs as one JSON object ``{program: {file: text}}``: what ``tests/test_corpus.py``
compares when the programs run through a Spark Connect server (this process is started
with ``SPARKWAY_SPARK_MASTER=sc://...``).

Arguments: the JSON file to write, a work folder, and a JSON object of PostgreSQL
connection settings by program (for the programs that take ``postgres``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from corpus import harness  # noqa: E402


def main(out: str, workdir: str, postgres: str) -> None:
    import sparkway
    from sparkway.api import graph

    databases = json.loads(postgres)
    results = {}
    for path in harness.programs():
        settings = databases.get(path.stem)
        program = harness.load(path, sparkway)
        results[path.stem] = harness.execute(program, Path(workdir) / path.stem, graph.clear,
                                             None if settings is None else lambda s=settings: s)
    Path(out).write_text(json.dumps(results), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])
