"""What else the machine was doing while a benchmark process ran.

This machine is shared (other sessions run test suites on it), and on 2 cores a
concurrent JVM changes a timing a lot.  ``Monitor`` samples ``/proc`` once a second and
adds up the CPU time used by every process that is *not* the measured process or one of
its descendants (Spark's JVM, Python workers): ``others_cores`` is that CPU time divided
by the wall time, e.g. 0.9 means another process kept about one of the two cores busy.
``wait_quiet`` waits (up to a limit) until the other processes leave the CPU idle.
"""

from __future__ import annotations

import os
import threading
import time

_TICK = os.sysconf("SC_CLK_TCK")


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


def _others_cpu(ours: set[int], before: dict, after: dict) -> float:
    total = 0.0
    for pid, (_, cpu) in after.items():
        if pid in ours:
            continue
        total += max(0.0, cpu - before.get(pid, (0, 0.0))[1])
    return total


class Monitor:
    """Use: ``m = Monitor(); m.start(pid); ...; m.stop()`` -> {"others_cores": ...}."""

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval
        self.others = 0.0
        self.ours: set[int] = {os.getpid()}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = 0.0
        self.ours_cpu: dict[int, float] = {}

    def start(self, pid: int) -> None:
        self.root = pid
        self._started = time.perf_counter()
        self._last = _processes()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        now = _processes()
        self.ours |= _descendants(self.root, now)
        self.others += _others_cpu(self.ours, self._last, now)
        for pid in self.ours:
            if pid in now:
                self.ours_cpu[pid] = now[pid][1]
        self._last = now

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
        }


def others_busy(seconds: float = 2.0) -> float:
    """Cores kept busy by other processes over the next ``seconds``."""
    before = _processes()
    time.sleep(seconds)
    after = _processes()
    return _others_cpu({os.getpid()}, before, after) / seconds


def wait_quiet(limit_s: float, threshold: float = 0.3, log=print) -> float:
    """Waits until other processes use under ``threshold`` cores, at most ``limit_s``;
    returns the last measured use."""
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
