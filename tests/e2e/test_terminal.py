"""A streaming program in a terminal, as a user runs it: the live view on the screen (read
through a pseudo-terminal by a terminal emulator), Spark's UI at the address the view
shows, and Ctrl-C typed on the keyboard ending the run gracefully."""

from __future__ import annotations

import os
import re
import sys
import urllib.request
from pathlib import Path

import pytest

from .helpers import Terminal, write_file, write_script

pytestmark = pytest.mark.subprocess

PROGRAM = """
import sys
import sparkway as pw

class Words(pw.Schema):
    word: str

words = pw.io.csv.read("inputs", schema=Words, mode="streaming")
counts = words.groupby(pw.this.word).reduce(pw.this.word, n=pw.reducers.count())
pw.io.csv.write(counts, "counts.csv")
pw.io.subscribe(counts, on_change=lambda **kw: None, on_end=lambda: print("on_end called", file=sys.stderr))
pw.run(spark_ui=True)  # the default monitoring level: a live view, stdout being a terminal
"""


def _row(screen: str, label: str) -> list[str]:
    """The cells of the live view's row that starts with ``label``."""
    line = next((x for x in screen.splitlines() if x.strip().startswith(label)), None)
    return [] if line is None else line.strip()[len(label):].split()


def test_the_live_view_shows_the_run_and_ctrl_c_ends_it(tmp_path: Path, python_env) -> None:
    write_file(tmp_path / "inputs" / "a.csv", "word\nx\ny\nx\n")
    script = write_script(tmp_path, "count.py", PROGRAM)
    env = {**python_env, "TERM": "xterm-256color"}
    term = Terminal([sys.executable, str(script)], tmp_path, env)
    try:
        screen = term.wait_for(  # x and y: two changes written
            lambda s: _row(s, "CsvFilesystemReader-0")[2:3] == ["3"] and _row(s, "counts.csv")[2:3] == ["2"], 180,
            "the view to show the 3 rows of a.csv read and 2 changes written")
        assert "steps: 1" in screen

        ui = re.search(r"UI (http://\S+)", screen)
        assert ui is not None, f"the title names Spark's UI:\n{screen}"
        with urllib.request.urlopen(ui.group(1) + "/jobs/", timeout=30) as page:
            assert page.status == 200 and b"Spark" in page.read()

        write_file(tmp_path / "inputs" / "b.csv", "word\ny\nz\n")
        # y: 1 -> 2 (a retraction and an insertion), z new: three more changes
        # "last step" is the last finished step's: a picture drawn while step 2 writes
        # shows its rows since start, and step 1's in "last step"
        screen = term.wait_for(lambda s: "steps: 2" in s and _row(s, "counts.csv")[2:3] == ["5"], 120,
                               "step 2 ended, b.csv's changes written")
        assert _row(screen, "CsvFilesystemReader-0")[:3] == ["2", "5", "5"]  # last step, last minute, since start
        assert _row(screen, "counts.csv")[:3] == ["3", "5", "5"]
        assert re.search(r"Step 2 \(time \d+\): 2 rows in, 6 changes out", term.text_written()), "each step is logged"

        term.type(b"\x03")  # Ctrl-C: the terminal sends SIGINT to the program's process group
        screen = term.wait_for(lambda s: term.exited(), 60, "the program to end after Ctrl-C")
    finally:
        term.kill()
    output = term.output()
    assert os.WIFEXITED(term.status) and os.WEXITSTATUS(term.status) == 0, f"exit status {term.status}:\n{output[-4000:]}"
    title = next((x for x in screen.splitlines() if "sparkway · count.py" in x), "")
    assert "stopped" in title, f"the last picture stays, and says the run stopped:\n{screen}"
    assert output.count("Received SIGINT") == 1 and "on_end called" in output
    for noise in ("Traceback", "Py4J", "Exception", "KeyboardInterrupt"):
        assert noise not in output, f"{noise!r} after Ctrl-C:\n{output[-4000:]}"


SLOW_PROGRAM = """
import os
import sys
import time
import sparkway as pw

class Words(pw.Schema):
    word: str

@pw.udf
def upper(word: str) -> str:
    while os.path.exists("slow"):  # a step that runs until the test lets it go
        time.sleep(0.1)
    return word.upper()

words = pw.io.csv.read("inputs", schema=Words, mode="streaming", persistent_id="words")
pw.io.csv.write(words.select(word=upper(pw.this.word)), "upper.csv")
pw.io.subscribe(words, on_change=lambda **kw: None, on_end=lambda: print("on_end called", file=sys.stderr))
pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem("state")))
"""


def test_a_second_ctrl_c_abandons_the_step_and_the_next_run_does_it_again(tmp_path: Path, python_env) -> None:
    write_file(tmp_path / "inputs" / "a.csv", "word\nx\ny\n")
    write_file(tmp_path / "slow", "")
    script = write_script(tmp_path, "upper.py", SLOW_PROGRAM)
    env = {**python_env, "TERM": "xterm-256color"}
    term = Terminal([sys.executable, str(script)], tmp_path, env)
    try:
        term.wait_for(lambda s: "step #1 running" in s, 180, "the first step to run")
        term.type(b"\x03")
        term.wait_for(lambda s: "Received SIGINT" in term.text_written(), 30, "the first Ctrl-C to be seen")
        term.type(b"\x03")  # the step would never end: give it up
        term.wait_for(lambda s: term.exited(), 60, "the program to end after the second Ctrl-C")
    finally:
        term.kill()
    written = term.text_written()
    assert os.WIFEXITED(term.status) and os.WEXITSTATUS(term.status) == 0, f"exit status {term.status}:\n{written[-4000:]}"
    assert "The step was abandoned: the next run does it again" in written and "on_end called" in written
    for noise in ("Traceback", "Py4J", "Exception"):
        assert noise not in written, f"{noise!r} after two Ctrl-C:\n{written[-4000:]}"
    assert not (tmp_path / "upper.csv").exists() or "X" not in (tmp_path / "upper.csv").read_text()

    (tmp_path / "slow").unlink()
    again = Terminal([sys.executable, str(script)], tmp_path, env)
    try:
        again.wait_for(lambda s: "Replaying step 1" in again.text_written() and _row(s, "upper.csv")[2:3] == ["2"],
                       180, "the abandoned step done again")
        again.type(b"\x03")
        again.wait_for(lambda s: again.exited(), 60, "the program to end after Ctrl-C")
    finally:
        again.kill()
    rows = (tmp_path / "upper.csv").read_text().splitlines()
    assert sorted(line.split(",")[0] for line in rows[1:]) == ['"X"', '"Y"'], rows
