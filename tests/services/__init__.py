"""Real servers the tests start on loopback: PostgreSQL, an S3 endpoint, a Kafka broker,
Spark's Connect server, a Spark standalone cluster."""

from __future__ import annotations

import contextlib
import socket


def free_port() -> int:
    """A loopback port that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    """Whether a server accepts connections on loopback ``port``."""
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False
