"""Helpers for the end-to-end tests: programs run as separate Python processes.

Every test writes its program as a small script into ``tmp_path`` and runs it there with
the ``python_env`` environment (tests/conftest.py).  Expected outputs are computed here
with plain Python (batch computations over the input files), never taken from sparkway.
"""

from __future__ import annotations

import collections
import csv
import fcntl
import io
import json
import os
import pty
import random
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import textwrap
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyte

RUN_TIMEOUT = 300  # seconds for one program run (Spark start-up alone takes 5-30 s)

#: programs killed (SIGKILL, or a crash at a fault point) by the tests of this session, by
#: kind, and executor JVMs killed under a program that went on (``EXECUTOR_KILLS``); the
#: terminal summary shows them (tests/conftest.py)
KILLS: collections.Counter = collections.Counter()
#: the kind of the kills of an executor's JVM (``SPARKWAY_TASK_FAULT=...:kill-executor``):
#: the program is not killed, Spark runs the executor's tasks elsewhere
EXECUTOR_KILLS = "executor SIGKILLs"


def record_kills(kind: str, count: int = 1) -> None:
    KILLS[kind] += count


def program_kills(kills: collections.Counter) -> collections.Counter:
    """The kills of programs (drivers), without those of executors."""
    return collections.Counter({kind: n for kind, n in kills.items() if kind != EXECUTOR_KILLS})


# ----------------------------------------------------------------------------- files


def write_file(path: Path, text: str) -> None:
    """Writes a file whole (parent folders created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def write_script(folder: Path, name: str, source: str, **params: Any) -> Path:
    """A program from a template: ``{name}`` placeholders are replaced by ``repr``s."""
    text = textwrap.dedent(source)
    for key, value in params.items():
        text = text.replace("{" + key + "}", repr(value))
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------------- processes


def run_program(script: Path, cwd: Path, env: dict[str, str], timeout: float = RUN_TIMEOUT,
                args: Iterable[str] = ()) -> subprocess.CompletedProcess:
    """Runs a program to its end; stdout and stderr are captured as text."""
    return subprocess.run(
        [sys.executable, str(script), *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=timeout,
    )


def describe(proc: subprocess.CompletedProcess | "Program", limit: int = 6000) -> str:
    """Exit code and the tail of stderr, for assertion messages."""
    stderr = proc.stderr if isinstance(proc, subprocess.CompletedProcess) else proc.stderr_text()
    return f"exit code {proc.returncode}; stderr (tail):\n{stderr[-limit:]}"


def check_ok(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, f"the program failed: {describe(proc)}"


class Program:
    """A program running in the background, in its own process group (so that a crash
    can take down its Spark JVM and Python workers with it, as a real crash would)."""

    def __init__(self, script: Path, cwd: Path, env: dict[str, str], tag: str = "run") -> None:
        self.stdout_path = cwd / f"{script.stem}.{tag}.stdout"
        self.stderr_path = cwd / f"{script.stem}.{tag}.stderr"
        self._stdout = open(self.stdout_path, "w")
        self._stderr = open(self.stderr_path, "w")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, str(script)], cwd=cwd, env=env, stdout=self._stdout,
            stderr=self._stderr, start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def poll(self) -> int | None:
        return self.proc.poll()

    def stderr_text(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def wait_until(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        """Waits for ``condition``; fails if the program ends first or time runs out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            if self.proc.poll() is not None:
                if condition():
                    return
                raise AssertionError(f"the program ended while waiting for {what}: {describe(self)}")
            time.sleep(0.2)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}: {describe(self)}")

    def terminate(self, timeout: float = 120) -> int:
        """SIGTERM to the program (not its group): it should end after its current step."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        finally:
            self.kill()

    def crash(self, whole_group: bool = True) -> None:
        """SIGKILL to the whole process group (the program, its JVM and Python workers),
        or to the program's process alone (``kill -9 <pid>``: its JVM and workers notice
        later, and may still be finishing a task when the next run starts)."""
        try:
            if whole_group:
                os.killpg(self.proc.pid, signal.SIGKILL)
            else:
                self.proc.kill()
        except ProcessLookupError:
            pass
        self.proc.wait(30)
        self._close_files()

    def kill(self) -> None:
        """Clean-up: whatever is left of the process group is killed."""
        if self.proc.poll() is None:
            self.crash()
        else:
            try:  # the JVM may outlive a program that ended
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self._close_files()

    def _close_files(self) -> None:
        for f in (self._stdout, self._stderr):
            if not f.closed:
                f.close()


def crash_at_random_moment(program: Program, rng: random.Random, k: int,
                           has_output: Callable[[], bool]) -> tuple[str, bool]:
    """Kills run ``k``: an even run 3-16 s after its start (during Spark's start-up,
    recovery or a step), an odd run 0-3 s after ``has_output()`` (while steps go on).
    The whole process group is killed or, at random, the driver process alone.
    Returns what happened, and whether the whole group was killed."""
    return _crash(program, rng, k, has_output, early=k % 2 == 0, after_start=(3.0, 16.0), after_output=(0.0, 3.0))


def crash_soon(program: Program, rng: random.Random, k: int,
               has_output: Callable[[], bool]) -> tuple[str, bool]:
    """A faster schedule than ``crash_at_random_moment``, for many kills in little time:
    three runs in four are killed 0.2-9 s after their start (before Spark is up, while the
    storage is locked and restored, during the replay of an interrupted step, or during
    the first steps), the fourth 0-2 s after ``has_output()`` (while steps go on)."""
    return _crash(program, rng, k, has_output, early=k % 4 != 3, after_start=(0.2, 9.0), after_output=(0.0, 2.0))


def _crash(program: Program, rng: random.Random, k: int, has_output: Callable[[], bool], *, early: bool,
           after_start: tuple[float, float], after_output: tuple[float, float]) -> tuple[str, bool]:
    """Kills run ``k`` a random time ``after_start`` its start (``early``) or
    ``after_output`` it has output; its whole process group, or at random its driver alone."""
    if early:
        delay = rng.uniform(*after_start)
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline and program.poll() is None:
            time.sleep(0.02)
        what = f"run {k}: killed {delay:.1f} s after its start"
    else:
        program.wait_until(has_output, 120, f"run {k}'s first output")
        delay = rng.uniform(*after_output)
        time.sleep(delay)
        what = f"run {k}: killed {delay:.1f} s after its first output"
    assert program.poll() is None, f"run {k} ended by itself: {describe(program)}"
    whole_group = rng.random() < 0.5
    program.crash(whole_group=whole_group)
    return (what if whole_group else what + " (the driver process alone)"), whole_group


class FileFeeder(threading.Thread):
    """Every 0.2-1.2 s adds a file ``<folder>/fNNNN.csv`` made by ``next_file``.  Some files
    are written in two parts with a pause between, the cut falling anywhere after the
    header (also inside a line)."""

    def __init__(self, root: Path, rng: random.Random) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.rng = rng
        self.stop_event = threading.Event()
        self.count = 0
        self.error: BaseException | None = None

    def next_file(self) -> tuple[str, list[str]]:
        """The folder (under ``root``) and the lines (header first) of the next file."""
        raise NotImplementedError

    def add_file(self) -> None:
        folder, lines = self.next_file()
        path = self.root / folder / f"f{self.count:04d}.csv"
        self.count += 1
        text = "".join(lines)
        if self.rng.random() < 0.3:
            cut = self.rng.randint(len(lines[0]) + 1, len(text) - 1)
            with open(path, "w") as f:
                f.write(text[:cut])
                f.flush()
                time.sleep(self.rng.uniform(0.05, 1.5))
                f.write(text[cut:])
        else:
            write_file(path, text)

    def run(self) -> None:
        try:
            while not self.stop_event.wait(self.rng.uniform(0.2, 1.2)):
                self.add_file()
        except BaseException as exc:  # reported by the test
            self.error = exc

    def stop(self) -> None:
        self.stop_event.set()
        self.join(10)
        assert self.error is None, f"the feeder failed: {self.error!r}"


# --------------------------------------------------------------------------- outputs


def read_csv_output(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """Header and rows (as text) of a CSV sink's file; a torn last line is left out."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines = lines[:-1]
    reader = csv.reader(io.StringIO("".join(lines)))
    records = list(reader)
    if not records:
        return [], []
    header, body = records[0], records[1:]
    return header, [dict(zip(header, r)) for r in body]


def read_jsonlines_output(path: Path, *, allow_torn: bool = False) -> list[dict[str, Any]]:
    """The objects of a JSON-lines sink's file.  With ``allow_torn``, an unfinished last
    line (a crash during a write) is left out; anything else that does not parse fails."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    last = lines.pop()  # "" when the file ends with a newline
    if last:
        assert allow_torn, f"{path}: the last line is not terminated: {last!r}"
    return [json.loads(line) for line in lines]


def changes(rows: Iterable[dict[str, Any]], columns: list[str]) -> collections.Counter:
    """A multiset of (values of ``columns``..., diff)."""
    return collections.Counter(tuple(r[c] for c in columns) + (int(r["diff"]),) for r in rows)


def single_time(rows: list[dict[str, Any]]) -> int | None:
    """The one time shared by all rows of a run (None without rows)."""
    times = {int(r["time"]) for r in rows}
    assert len(times) <= 1, f"the rows of one run have several times: {sorted(times)}"
    return times.pop() if times else None


def snapshot_diff(old: collections.Counter, new: collections.Counter) -> collections.Counter:
    """The update stream from one multiset of rows to another: (row..., -1) for each row
    that goes, (row..., +1) for each that comes."""
    out: collections.Counter = collections.Counter()
    for row in set(old) | set(new):
        delta = new[row] - old[row]
        if delta:
            out[row + (1 if delta > 0 else -1,)] += abs(delta)
    return out


# ---------------------------------------------------------------------- batch oracles


def read_csv_inputs(folder: Path) -> list[dict[str, str]]:
    """The rows of every CSV file under ``folder``, or of one file (plain csv module,
    header per file)."""
    rows: list[dict[str, str]] = []
    for path in [folder] if folder.is_file() else sorted(folder.rglob("*")):
        if path.is_file():
            with open(path, newline="", encoding="utf-8") as f:
                rows.extend(csv.DictReader(f))
    return rows


def word_counts(folder: Path) -> collections.Counter:
    """Batch word count: multiset of (word, count) rows."""
    counts = collections.Counter(r["word"] for r in read_csv_inputs(folder))
    return collections.Counter((w, c) for w, c in counts.items())


def sessions(events: Iterable[tuple[str, int]], max_gap: int) -> collections.Counter:
    """Batch sessions per user: multiset of (user, length, start, finish, count); two
    consecutive visits of a user closer than ``max_gap`` are in one session."""
    by_user: dict[str, list[int]] = collections.defaultdict(list)
    for user, t in events:
        by_user[user].append(t)
    out: collections.Counter = collections.Counter()
    for user, times in by_user.items():
        times.sort()
        run = [times[0]]
        for t in times[1:]:
            if t - run[-1] < max_gap:
                run.append(t)
            else:
                out[(user, run[-1] - run[0], run[0], run[-1], len(run))] += 1
                run = [t]
        out[(user, run[-1] - run[0], run[0], run[-1], len(run))] += 1
    return out


def session_events(folder: Path) -> list[tuple[str, int]]:
    return [(r["user_id"], int(r["access_time"])) for r in read_csv_inputs(folder)]


# ------------------------------------------------------------------------- terminals

ROWS, COLUMNS = 40, 140


class Terminal:
    """A program on a pseudo-terminal of ROWS x COLUMNS, as a user runs it in a shell, and
    what its screen shows (through a terminal emulator)."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = bytearray()
        self.lock = threading.Lock()
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the terminal's only process group, as in a shell
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))  # before it starts
            os.chdir(cwd)
            # the size is the terminal's, as in a shell: COLUMNS and LINES in the
            # environment (pytest-xdist's test processes have 80 and 24) would win
            os.execve(argv[0], argv, {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")})
        self.status: int | None = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if not ready:
                continue
            try:
                data = os.read(self.fd, 65536)
            except OSError:  # the program ended: the terminal is gone
                return
            if not data:
                return
            with self.lock:
                self.raw += data
                self.stream.feed(data)

    def text(self) -> str:
        with self.lock:
            return "\n".join(line.rstrip() for line in self.screen.display)

    def output(self) -> str:
        with self.lock:
            return self.raw.decode(errors="replace")

    def text_written(self) -> str:
        """Everything written, without the terminal's control sequences (colours, cursor
        moves), also what scrolled off the screen."""
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", self.output())

    def wait_for(self, condition: Callable[[str], bool], timeout: float, what: str) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.text()
            if condition(screen):
                return screen
            if self.exited():
                break
            time.sleep(0.2)
        raise AssertionError(f"waiting for {what}; the screen:\n{self.text()}\nthe output:\n{self.output()[-4000:]}")

    def exited(self) -> bool:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
        return self.status is not None

    def type(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def kill(self) -> None:
        if not self.exited():
            os.killpg(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
