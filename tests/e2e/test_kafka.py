"""A persistent program reading a Kafka topic, stopped and restarted: every message is
read once across runs.

The program reads JSON messages ``{"n": <int>}`` and writes two JSON-lines files per run
(a file sink rewrites its file when a run starts, so each run writes its own): every row
(``rows-<run>.jsonl``) and the running total and count of all rows (``totals-<run>.jsonl``,
state kept by persistence).  Expected values come from the messages the test sent.
"""

from __future__ import annotations

import collections
import json
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from .helpers import describe, read_jsonlines_output, write_script

pytestmark = pytest.mark.subprocess

WAIT_S = 240  # Spark start-up plus the first steps

PROGRAM = '''
import os
import sparkway as pw


class Number(pw.Schema):
    n: int


run = os.environ["KAFKA_TEST_RUN"]
numbers = pw.io.kafka.read({settings}, {topic}, schema=Number, format="json",
                           autocommit_duration_ms=200, name="numbers")
pw.io.jsonlines.write(numbers, f"rows-{run}.jsonl")
totals = numbers.reduce(total=pw.reducers.sum(pw.this.n), count=pw.reducers.count())
pw.io.jsonlines.write(totals, f"totals-{run}.jsonl")
pw.run(persistence_config=pw.persistence.Config(pw.persistence.Backend.filesystem("./state/")))
'''


def _messages(numbers: Iterable[int]) -> list[str]:
    return [json.dumps({"n": i}) for i in numbers]


def _rows(tmp_path: Path, run: int, *, allow_torn: bool = False) -> list[dict[str, Any]]:
    return read_jsonlines_output(tmp_path / f"rows-{run}.jsonl", allow_torn=allow_torn)


def _program(tmp_path: Path, kafka_broker, topic: str) -> Path:
    # not "numbers.py": the script's folder comes first on sys.path, it would hide the stdlib module
    return write_script(tmp_path, "read_topic.py", PROGRAM, settings=kafka_broker.settings, topic=topic)


def _net(lines: list[dict[str, Any]], columns: list[str]) -> collections.Counter:
    """Rows with their net multiplicity (identical lines counted once: a replayed step
    writes the same (row, time, diff) again)."""
    unique = {tuple(r[c] for c in [*columns, "time", "diff"]) for r in lines}
    net: collections.Counter = collections.Counter()
    for *row, _time, diff in unique:
        net[tuple(row)] += diff
    return +net


class Runs:
    """Starts the program as run 1, 2, ... (the run number names its output files)."""

    def __init__(self, programs, tmp_path: Path, env: dict[str, str], script: Path) -> None:
        self.programs, self.tmp_path, self.env, self.script = programs, tmp_path, env, script
        self.count = 0

    def start(self):
        self.count += 1
        env = {**self.env, "KAFKA_TEST_RUN": str(self.count)}
        return self.programs(self.script, self.tmp_path, env, tag=f"run{self.count}")


def test_a_restart_after_sigterm_reads_each_message_once_and_keeps_the_state(
    tmp_path: Path, python_env, programs, kafka_broker
) -> None:
    topic = kafka_broker.new_topic("e2e-graceful")
    runs = Runs(programs, tmp_path, python_env, _program(tmp_path, kafka_broker, topic))
    kafka_broker.produce(topic, _messages(range(0, 5)))

    first = runs.start()
    first.wait_until(lambda: len(_rows(tmp_path, 1, allow_torn=True)) >= 5, WAIT_S, "the first 5 rows")
    assert first.terminate() == 0, describe(first)
    kafka_broker.produce(topic, _messages(range(5, 12)))
    second = runs.start()
    second.wait_until(lambda: len(_rows(tmp_path, 2, allow_torn=True)) >= 7, WAIT_S, "the next 7 rows")
    assert second.terminate() == 0, describe(second)

    # each run outputs exactly its new messages, each once, as insertions
    assert sorted(r["n"] for r in _rows(tmp_path, 1)) == list(range(0, 5))
    assert sorted(r["n"] for r in _rows(tmp_path, 2)) == list(range(5, 12))
    assert all(r["diff"] == 1 for r in _rows(tmp_path, 1) + _rows(tmp_path, 2))
    # the total of the second run starts from the first run's: its first change retracts it
    totals = read_jsonlines_output(tmp_path / "totals-1.jsonl") + read_jsonlines_output(tmp_path / "totals-2.jsonl")
    assert _net(totals, ["total", "count"]) == collections.Counter({(sum(range(12)), 12): 1})
    assert "restored" in second.stderr_text()


def test_a_restart_after_sigkill_loses_nothing_and_counts_nothing_twice(
    tmp_path: Path, python_env, programs, kafka_broker
) -> None:
    topic = kafka_broker.new_topic("e2e-crash")
    runs = Runs(programs, tmp_path, python_env, _program(tmp_path, kafka_broker, topic))
    total = 60
    stop_feeding = threading.Event()
    fed: list[int] = []

    def feed() -> None:  # the first half keeps coming while the program runs and is killed
        for start in range(3, total // 2, 3):
            if stop_feeding.wait(0.4):
                return
            kafka_broker.produce(topic, _messages(range(start, start + 3)))
            fed.extend(range(start, start + 3))

    feeder = threading.Thread(target=feed, daemon=True)
    kafka_broker.produce(topic, _messages(range(3)))
    fed.extend(range(3))
    first = runs.start()
    # the first step is slow (Spark warms up): the rest comes in while later steps run
    first.wait_until(lambda: len(_rows(tmp_path, 1, allow_torn=True)) >= 3, WAIT_S, "the first step")
    feeder.start()
    try:
        # kill inside a step (logged, not committed) if the feeder leaves the time to
        first.wait_until(lambda: len(_rows(tmp_path, 1, allow_torn=True)) >= 6
                         and (_step_pending(tmp_path / "state") or not feeder.is_alive()), WAIT_S, "6 rows")
        first.crash()
    finally:
        stop_feeding.set()
        feeder.join()
    kafka_broker.produce(topic, _messages(n for n in range(total) if n not in fed))  # the rest
    second = runs.start()
    second.wait_until(lambda: (tmp_path / "rows-2.jsonl").exists()
                      and _net(_all_rows(tmp_path, 2), ["n"]).total() >= total, WAIT_S, "every message")
    assert second.terminate() == 0, describe(second)

    # at least once in the file sinks: a step cut by the kill may be written again by
    # its replay, as the same lines; once those are counted once, each message is there once
    assert _net(_all_rows(tmp_path, 2), ["n"]) == collections.Counter({(i,): 1 for i in range(total)})
    # exactly once into the state: the total counts every message once
    totals = read_jsonlines_output(tmp_path / "totals-1.jsonl", allow_torn=True)
    totals += read_jsonlines_output(tmp_path / "totals-2.jsonl")
    assert _net(totals, ["total", "count"]) == collections.Counter({(sum(range(total)), total): 1})


def _all_rows(tmp_path: Path, runs: int) -> list[dict[str, Any]]:
    return [r for run in range(1, runs + 1) for r in _rows(tmp_path, run, allow_torn=True)]


def _step_pending(state: Path) -> bool:
    """A step is logged and not committed yet (persistence's steps/ and commits/)."""
    def last(folder: str) -> int:
        return max((int(p.stem) for p in (state / folder).glob("*.json")), default=0)
    return last("steps") > last("commits")
