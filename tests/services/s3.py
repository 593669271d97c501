"""A real S3 endpoint for the tests: moto's server, started once per session on loopback.

``s3_endpoint`` is the session's server (an HTTP S3 API on 127.0.0.1, on a free port, so
that programs run as subprocesses reach it too); ``s3_bucket`` gives each test a fresh,
empty bucket.  Dummy credentials go through ``AwsS3Settings``: the environment is not
touched.  The server is a process of its own: in a thread of the tests' process, it
would wait for the interpreter lock while delta-rs, holding it, waits for its answer.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from services import free_port, listening

ACCESS_KEY = "testing"
SECRET_KEY = "testing-secret"
REGION = "us-east-1"
START_TIMEOUT_S = 60
_bucket_numbers = itertools.count()


@dataclass(frozen=True)
class S3Bucket:
    """A bucket on the test endpoint."""

    endpoint: str
    name: str

    def settings_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``pw.io.s3.AwsS3Settings`` for this bucket (plain values, to
        write into the programs of subprocess tests)."""
        return {"bucket_name": self.name, "access_key": ACCESS_KEY, "secret_access_key": SECRET_KEY,
                "endpoint": self.endpoint, "region": REGION, "with_path_style": True}

    def settings(self):
        import sparkway as pw

        return pw.io.s3.AwsS3Settings(**self.settings_kwargs())

    def client(self):
        """A fresh s3fs client of its own (no cached instance, no cached listings): what
        another process would see."""
        return _client(self.endpoint)


class S3Endpoint:
    def __init__(self) -> None:
        port = free_port()
        self.server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not listening(port):
            if self.server.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"moto's S3 server did not start on port {port}")
            time.sleep(0.1)
        self.url = f"http://127.0.0.1:{port}"

    def new_bucket(self) -> S3Bucket:
        name = f"test-{os.getpid()}-{next(_bucket_numbers)}"
        _client(self.url).call_s3("create_bucket", Bucket=name)
        return S3Bucket(self.url, name)

    def stop(self) -> None:
        self.server.terminate()
        self.server.wait(timeout=30)


def _client(endpoint: str):
    import s3fs

    return s3fs.S3FileSystem(
        key=ACCESS_KEY, secret=SECRET_KEY, endpoint_url=endpoint, client_kwargs={"region_name": REGION},
        use_listings_cache=False, skip_instance_cache=True,
    )


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[S3Endpoint]:
    """The session's S3 endpoint (``.url``, ``.new_bucket()``)."""
    endpoint = S3Endpoint()
    yield endpoint
    endpoint.stop()


@pytest.fixture
def s3_bucket(s3_endpoint: S3Endpoint) -> S3Bucket:
    """An empty bucket of this test's own."""
    return s3_endpoint.new_bucket()
