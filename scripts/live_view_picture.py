"""Draws docs/live-view.svg, the README's picture of the live view, from a real run:
examples/wordcount/wordcount.py --streaming in a pseudo-terminal (the test suite's
driver, tests/e2e/helpers.py), given two batches of files, then stopped with Ctrl-C.

    .venv/bin/python scripts/live_view_picture.py
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from e2e.helpers import COLUMNS, Terminal, write_file  # noqa: E402


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="sparkway-picture-"))
    words = ["spark", "way", "stream", "state", "time", "diff"]
    for k in range(3):
        write_file(work / "inputs" / f"{k}.csv", "word\n" + "\n".join(words[(k + i) % 6] for i in range(400)) + "\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable, "SPARKWAY_CACHE": str(work / "cache"),
           "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"), "TERM": "xterm-256color"}
    term = Terminal([sys.executable, str(ROOT / "examples" / "wordcount" / "wordcount.py"), "--streaming"], work, env)
    try:
        term.wait_for(lambda s: "steps: 1" in s, 180, "the first step")
        write_file(work / "inputs" / "3.csv", "word\n" + "\n".join(words[i % 4] for i in range(250)) + "\n")
        term.wait_for(lambda s: "steps: 2" in s, 60, "the second step")
        time.sleep(1.5)  # the lag as it is between steps
        screen = term.text()
        term.type(b"\x03")
        term.wait_for(lambda s: term.exited(), 60, "the end")
    finally:
        term.kill()
        shutil.rmtree(work, ignore_errors=True)
    console = Console(record=True, width=COLUMNS, file=io.StringIO())
    for line in screen.rstrip("\n").splitlines():
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    target = ROOT / "docs" / "live-view.svg"
    console.save_svg(str(target), title="wordcount.py --streaming")
    print(f"wrote {target.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
