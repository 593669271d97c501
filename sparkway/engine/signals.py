"""Ctrl-C (SIGINT) and SIGTERM for a run or a server.

Python runs a signal handler in the main thread between two of its bytecodes, possibly
while that thread holds a lock: an ``Event``'s, the live view's, a stream's buffer.  A
handler that took the same lock (setting an ``Event``, logging) would wait forever for
its own thread.  So the handler here only counts the signal and writes its number to a
pipe, and a thread of its own reads the pipe and reacts.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """Counts SIGINT and SIGTERM (``received``, at once) and calls ``on_signal`` with each
    one's name and number (1 for the first), in order, on a thread of its own.

    >>> import os, signal, threading
    >>> seen = threading.Event()
    >>> signals = StopSignals(lambda name, nth: seen.set())
    >>> signals.install()
    >>> os.kill(os.getpid(), signal.SIGTERM)
    >>> seen.wait(5), signals.received
    (True, 1)
    >>> signals.restore()
    """

    def __init__(self, on_signal: Callable[[str, int], None]) -> None:
        self.received = 0
        self._on_signal = on_signal
        self._previous: dict[int, Any] = {}
        self._write_end: int | None = None

    def install(self) -> None:
        """Makes SIGINT and SIGTERM call this object, again after something else (a new
        SparkContext) put its own handler; in the main thread only, as Python allows."""
        if threading.current_thread() is not threading.main_thread():
            return
        if self._write_end is None:
            read_end, self._write_end = os.pipe()
            os.set_blocking(self._write_end, False)
            threading.Thread(target=self._relay, args=(read_end,), name="sparkway-signals", daemon=True).start()
        for sig in STOP_SIGNALS:
            previous = signal.signal(sig, self._handle)
            self._previous.setdefault(sig, previous)

    def restore(self) -> None:
        """The handlers from before ``install``; the relaying thread ends once it has
        passed on every signal received."""
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
        if self._write_end is not None:
            os.close(self._write_end)
            self._write_end = None

    def _handle(self, signum: int, frame: Any) -> None:
        self.received += 1
        if self._write_end is not None:
            try:
                os.write(self._write_end, bytes([signum]))
            except BlockingIOError:  # a full pipe holds thousands unread: this one adds nothing
                pass

    def _relay(self, read_end: int) -> None:
        try:
            relayed = 0
            while chunk := os.read(read_end, 64):
                for signum in chunk:
                    relayed += 1
                    self._on_signal(signal.Signals(signum).name, relayed)
        finally:
            os.close(read_end)
