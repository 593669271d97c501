"""Records the corpus's expected outputs by running its programs under real Pathway 0.33.0.

Run through ``scripts/record-corpus.sh [NAME ...]``, which makes the separate virtual
environment with Pathway (never the project's own). Each program runs in a process of its
own, in a temporary folder; its normalized outputs replace ``expected/<program>/``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from corpus import harness  # noqa: E402


def record_one(path: Path) -> None:
    """Runs one program under Pathway (in this process) and writes its expected outputs."""
    import pathway

    assert pathway.__version__ == "0.33.0", f"the oracle is Pathway 0.33.0, not {pathway.__version__}"
    server = None
    program = harness.load(path, pathway)
    with tempfile.TemporaryDirectory(prefix="corpus-") as workdir:
        def postgres() -> dict:
            nonlocal server
            from services.postgres import PostgresServer, find_bin_dir

            server = PostgresServer(find_bin_dir())
            server.start()
            return server.settings(server.create_database())

        try:
            results = harness.execute(program, Path(workdir), pathway.internals.parse_graph.G.clear, postgres)
        finally:
            if server is not None:
                server.stop()
    target = harness.EXPECTED / path.stem
    shutil.rmtree(target, ignore_errors=True)
    for name, text in results.items():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_text(text, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", help="programs to record (file stems or substrings); all by default")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child process: record this program
    args = parser.parse_args()
    if args.one:
        record_one(Path(args.one))
        return 0
    chosen = [p for p in harness.programs() if not args.names or any(n in p.stem for n in args.names)]
    failed = []
    for path in chosen:
        proc = subprocess.run([sys.executable, __file__, "--one", str(path)], capture_output=True, text=True)
        status = "ok" if proc.returncode == 0 else "FAILED"
        print(f"{status:6} {path.stem}", flush=True)
        if proc.returncode != 0:
            failed.append(path.stem)
            print(proc.stderr[-3000:], file=sys.stderr)
    print(f"{len(chosen) - len(failed)} of {len(chosen)} recorded")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
