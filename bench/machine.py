"""What a benchmark process used, and what else the machine was doing meanwhile.

This machine is shared (other sessions run test suites on it), and on 2 cores a
concurrent JVM changes a timing a lot.  ``Monitor`` samples ``/proc`` four times a second:

- ``others_cores``: the CPU time used by every process that is *not* the measured process
  or one of its descendants (Spark's JVM, Python workers), divided by the wall time; e.g.
  0.9 means another process kept about one of the two cores busy;
- ``peak_rss_bytes``: the largest sum of the resident set sizes of the measured process
  tree (the driver, Spark's JVM, Spark's Python daemon and workers) seen in one sample,
  and ``peak_rss_by_kind`` its parts at that moment.  A page shared by several processes
  (a forked Python worker and its daemon) counts once per process, as ``ps`` shows it;
- ``pss_at_peak_bytes``: at that moment, the sum of the proportional set sizes (a page
  shared by n processes counts 1/n in each), which is what the tree takes from the
  machine's memory.

``wait_quiet`` waits (up to a limit) until the other processes leave the CPU idle.
"""

from __future__ import annotations

import os
import threading
import time

_TICK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _processes() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds used so far)."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        fields = raw[raw.rfind(b")") + 2:].split()
        out[int(name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK)
    return out


def _descendants(root: int, table: dict[int, tuple[int, float]]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _rss(pid: int) -> int:
    """Resident bytes of one process (0 once it has exited): ``statm`` costs microseconds,
    whatever the process's size, so sampling it does not slow the measured run."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _pss(pid: int) -> int:
    """Proportional set size of one process (0 once it has exited); reading it walks the
    process's page tables, so it is read only when the tree's RSS reaches a new peak."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


def _kind(pid: int, root: int) -> str:
    if pid == root:
        return "driver"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv0 = f.read().split(b"\0")[0]
    except OSError:
        return "other"
    name = os.path.basename(argv0)
    return "jvm" if name == b"java" else "python workers" if name.startswith(b"python") else "other"


def _others_cpu(ours: set[int], before: dict, after: dict) -> float:
    total = 0.0
    for pid, (_, cpu) in after.items():
        if pid in ours:
            continue
        total += max(0.0, cpu - before.get(pid, (0, 0.0))[1])
    return total


class Monitor:
    """Use: ``m = Monitor(); m.start(pid); ...; m.stop()`` -> {"others_cores": ...,
    "peak_rss_bytes": ...}."""

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self.others = 0.0
        self.ours: set[int] = {os.getpid()}
        self.tree: set[int] = set()
        self.peak_rss = 0
        self.peak_by_kind: dict[str, int] = {}
        self.pss_at_peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = 0.0
        self.ours_cpu: dict[int, float] = {}

    def start(self, pid: int) -> None:
        self.root = pid
        self.tree = {pid}
        self._started = time.perf_counter()
        self._last = _processes()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        now = _processes()
        self.tree = _descendants(self.root, now) & now.keys()
        self.ours |= self.tree
        self.others += _others_cpu(self.ours, self._last, now)
        for pid in self.ours:
            if pid in now:
                self.ours_cpu[pid] = now[pid][1]
        self._last = now
        self._sample_memory()

    def _sample_memory(self) -> None:
        by_kind: dict[str, int] = {}
        for pid in self.tree:
            kind = _kind(pid, self.root)  # not cached: spark-submit's shell execs into the JVM
            by_kind[kind] = by_kind.get(kind, 0) + _rss(pid)
        total = sum(by_kind.values())
        if total > self.peak_rss:
            self.peak_rss, self.peak_by_kind = total, by_kind
            self.pss_at_peak = sum(_pss(pid) for pid in self.tree)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def stop(self) -> dict:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        wall = time.perf_counter() - self._started
        return {
            "others_cpu_s": round(self.others, 1),
            "others_cores": round(self.others / wall, 2) if wall > 0 else 0.0,
            "load1": round(os.getloadavg()[0], 2),
            "peak_rss_bytes": self.peak_rss,
            "peak_rss_by_kind": dict(sorted(self.peak_by_kind.items())),
            "pss_at_peak_bytes": self.pss_at_peak,
        }


def others_busy(seconds: float = 2.0) -> float:
    """Cores kept busy by other processes over the next ``seconds``."""
    before = _processes()
    time.sleep(seconds)
    after = _processes()
    return _others_cpu({os.getpid()}, before, after) / seconds


def wait_quiet(limit_s: float, threshold: float = 0.3, log=print) -> float | None:
    """Waits until other processes use under ``threshold`` cores, at most ``limit_s``;
    returns the last measured use (None when ``limit_s`` is 0: no wait, no measurement)."""
    if limit_s <= 0:
        return None
    started = time.monotonic()
    busy = others_busy()
    first = busy
    while busy >= threshold and time.monotonic() < started + limit_s:
        time.sleep(3)
        busy = others_busy()
    if first >= threshold:
        log(f"   (other processes used {first:.1f} cores; waited {time.monotonic() - started:.0f} s, "
            f"now {busy:.1f} cores)")
    return busy


def own_peak_rss() -> int:
    """This process's peak RSS in bytes (the Python driver alone, without its JVM child):
    the kernel's high-water mark of its memory map, exact where sampling from outside
    could miss a short peak.  Not ``getrusage``'s ``ru_maxrss``: that one survives
    ``exec``, so a process started by a large one (the benchmark runner, holding the
    rows it generated) reports its parent's size."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("/proc/self/status has no VmHWM line")
