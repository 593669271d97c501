"""Stop signals (engine/signals.py): counted at once in the main thread, reacted to on a
thread of their own, so that a reaction never waits for a lock the interrupted main
thread holds (a CI run's Ctrl-C hung that way: the program logged the signal, then
never stopped)."""

from __future__ import annotations

import os
import queue
import signal
import threading
import time

from sparkway.engine.signals import StopSignals


def test_a_signal_is_reacted_to_even_while_the_main_thread_holds_the_lock_the_reaction_takes() -> None:
    lock = threading.Lock()  # as an Event's or a stream's: not reentrant
    reactions: queue.Queue = queue.Queue()

    def on_signal(name: str, nth: int) -> None:
        took = lock.acquire(timeout=5)  # from the main thread's handler: never, the main thread holds it
        reactions.put((name, nth, threading.current_thread() is threading.main_thread(), took))
        if took:
            lock.release()

    signals = StopSignals(on_signal)
    signals.install()
    try:
        with lock:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10_000):  # bytecodes run with the lock held: the handler runs among them
                pass
            assert signals.received == 1  # counted in the main thread, at once
        assert reactions.get(timeout=10) == ("SIGINT", 1, False, True)
    finally:
        signals.restore()


def test_signals_are_numbered_in_order_and_restore_puts_back_the_handlers_from_before() -> None:
    before = signal.getsignal(signal.SIGTERM)
    seen: queue.Queue = queue.Queue()
    signals = StopSignals(lambda name, nth: seen.put((name, nth)))
    signals.install()
    signals.install()  # again, as after Spark put its own: still the handlers from before are restored
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
        assert [seen.get(timeout=10), seen.get(timeout=10)] == [("SIGTERM", 1), ("SIGINT", 2)]
        assert signals.received == 2
    finally:
        signals.restore()
    assert signal.getsignal(signal.SIGTERM) is before
    deadline = time.monotonic() + 10
    while _relaying() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _relaying(), "the relaying thread ends once the handlers are restored"


def _relaying() -> bool:
    return any(t.name == "sparkway-signals" for t in threading.enumerate())
