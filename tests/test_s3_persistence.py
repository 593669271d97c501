"""Persistence on S3, against a real S3 endpoint on loopback (moto's server).

Expected outputs are batch word counts computed here with ``collections.Counter``.
"""

from __future__ import annotations

import collections
import json
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sparkway as pw
from sparkway.api import graph
from sparkway.persistence.metadata import MetadataLog, StorageInUseError
from sparkway.persistence.storage import BlobStorage

pytestmark = pytest.mark.usefixtures("spark")


class Words(pw.Schema):
    word: str


def _write_words(path: Path, words: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("word\n" + "".join(w + "\n" for w in words))


def _word_count_run(work: Path, config: pw.persistence.Config, out: str) -> collections.Counter:
    """One run of a persistent word count; its output as a multiset of (word, count, diff)."""
    graph.clear()
    words = pw.io.csv.read(work / "in", schema=Words, mode="static", name="words")
    counts = words.groupby(words.word).reduce(words.word, count=pw.reducers.count())
    pw.io.jsonlines.write(counts, work / out)
    pw.run(persistence_config=config)
    rows = [json.loads(line) for line in (work / out).read_text().splitlines()]
    return collections.Counter((r["word"], r["count"], r["diff"]) for r in rows)


def _keys(bucket, prefix: str) -> list[str]:
    """Every object under ``prefix`` of the bucket, relative to it."""
    client = bucket.client()
    root = f"{bucket.name}/{prefix}"
    return sorted(path[len(root) + 1:] for path in client.find(root))


def test_the_cli_inspects_a_storage_on_s3_with_the_environment_s_credentials(
    tmp_path: Path, s3_bucket, monkeypatch, capsys,
) -> None:
    from sparkway.cli import main
    from tests.services.s3 import ACCESS_KEY, REGION, SECRET_KEY

    backend = pw.persistence.Backend.s3(f"s3://{s3_bucket.name}/wordcount", s3_bucket.settings())
    _write_words(tmp_path / "in" / "a.csv", ["ant", "bee", "ant"])
    _word_count_run(tmp_path, pw.persistence.Config(backend), "out.jsonl")
    capsys.readouterr()
    for name, value in [("AWS_ENDPOINT_URL", s3_bucket.endpoint), ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
                        ("AWS_SECRET_ACCESS_KEY", SECRET_KEY), ("AWS_DEFAULT_REGION", REGION)]:
        monkeypatch.setenv(name, value)
    assert main(["inspect", f"s3://{s3_bucket.name}/wordcount"]) == 0
    out = capsys.readouterr().out
    assert "last commit: step 1" in out and "words: 3 entries read; 1 file(s) read" in out, out


def _restart_scenario(tmp_path: Path, config: pw.persistence.Config, monkeypatch) -> None:
    """Three runs: the first input; one more file; nothing new.  Every run uses a new
    local state cache (as a new machine would), so operator state comes from the backend."""
    def run(k: int) -> collections.Counter:
        monkeypatch.setenv("SPARKWAY_STATE_CACHE", str(tmp_path / f"cache-{k}"))
        return _word_count_run(tmp_path, config, f"out{k}.jsonl")

    _write_words(tmp_path / "in" / "a.csv", ["ant", "bee", "ant"])
    assert run(1) == collections.Counter({("ant", 2, 1): 1, ("bee", 1, 1): 1})
    _write_words(tmp_path / "in" / "b.csv", ["bee", "cat"])
    assert run(2) == collections.Counter({("bee", 1, -1): 1, ("bee", 2, 1): 1, ("cat", 1, 1): 1})
    assert run(3) == collections.Counter()


def test_restart_on_s3_reads_only_new_input_and_outputs_only_changes(tmp_path: Path, s3_bucket, monkeypatch) -> None:
    backend = pw.persistence.Backend.s3(f"s3://{s3_bucket.name}/wordcount", s3_bucket.settings())
    _restart_scenario(tmp_path, pw.persistence.Config(backend), monkeypatch)
    keys = _keys(s3_bucket, "wordcount")
    assert "plan.json" in keys
    assert any(k.startswith("commits/") for k in keys)
    assert any(k.startswith("operators/") and "/runs/" in k for k in keys)  # the arrangements
    assert any(k.startswith("sources/words/files/") for k in keys)
    assert "LEASE" not in keys  # a graceful end releases it


@pytest.mark.parametrize("metadata_on", ["s3", "filesystem"])
def test_metadata_and_snapshots_in_different_storages(tmp_path: Path, s3_bucket, monkeypatch, metadata_on: str) -> None:
    s3 = pw.persistence.Backend.s3("pipeline", s3_bucket.settings())  # prefix inside bucket_name
    local = pw.persistence.Backend.filesystem(tmp_path / "local-storage")
    metadata, snapshots = (s3, local) if metadata_on == "s3" else (local, s3)
    _restart_scenario(tmp_path, pw.persistence.Config(metadata_storage=metadata, snapshot_storage=snapshots), monkeypatch)
    keys = _keys(s3_bucket, "pipeline")
    on_s3 = {k.split("/")[0] for k in keys}
    if metadata_on == "s3":
        assert on_s3 == {"plan.json", "steps", "commits", "positions"}  # positions: the file source's index
        assert (tmp_path / "local-storage" / "operators").is_dir()
    else:
        assert on_s3 == {"operators", "sources", "RUN"}  # RUN: the token of the run that owns the state
        assert (tmp_path / "local-storage" / "commits").is_dir()


# ----------------------------------------------------------------------- blob storage


def test_listings_are_fresh_after_writes_by_another_client(s3_bucket) -> None:
    """The metadata log and the state store find steps, commits and changelogs by listing
    folders that other processes write: a listing must never be served from a cache."""
    storage = pw.persistence.Backend.s3(f"s3://{s3_bucket.name}/root", s3_bucket.settings()).storage()
    other = s3_bucket.client()  # another process, in effect
    storage.write_bytes("commits/0001.json", b"one")
    assert storage.list("commits") == ["0001.json"]
    other.pipe_file(f"{s3_bucket.name}/root/commits/0002.json", b"two")
    assert storage.list("commits") == ["0001.json", "0002.json"]
    assert storage.exists("commits/0002.json")
    other.pipe_file(f"{s3_bucket.name}/root/commits/0002.json", b"two, rewritten")
    assert storage.read_bytes("commits/0002.json") == b"two, rewritten"
    other.rm(f"{s3_bucket.name}/root/commits/0001.json")
    assert storage.list("commits") == ["0002.json"]
    assert not storage.exists("commits/0001.json")


def test_s3_storage_is_picklable_and_its_repr_holds_no_secret(s3_bucket) -> None:
    backend = pw.persistence.Backend.s3(f"s3://{s3_bucket.name}/root", s3_bucket.settings())
    storage = backend.storage()
    storage.write_bytes("a/LATEST", b"{}")
    copy = pickle.loads(pickle.dumps(storage.child("a")))  # as shipped to an executor
    assert copy.read_bytes("LATEST") == b"{}"
    secret = s3_bucket.settings_kwargs()["secret_access_key"]
    for shown in (repr(storage), repr(backend), repr(s3_bucket.settings()), repr(pw.persistence.Config(backend))):
        assert secret not in shown


def test_backend_s3_root_path_forms() -> None:
    settings = pw.io.s3.AwsS3Settings(bucket_name="b", region="eu-west-1")
    assert pw.persistence.Backend.s3("s3://b/x/y/").root == "s3://b/x/y"
    assert pw.persistence.Backend.s3("x/y", settings).root == "s3://b/x/y"
    assert pw.persistence.Backend.s3("s3://b/x", settings).root == "s3://b/x"
    with pytest.raises(ValueError, match="give the bucket once"):
        pw.persistence.Backend.s3("s3://other/x", settings)
    with pytest.raises(ValueError, match="needs a bucket"):
        pw.persistence.Backend.s3("x/y")
    with pytest.raises(ValueError, match="both access_key and secret_access_key"):
        pw.io.s3.AwsS3Settings(access_key="AKIA")


# ------------------------------------------------------------------------------ lease


def _metadata_log(bucket, ttl_s: float = 30.0) -> MetadataLog:
    storage = pw.persistence.Backend.s3(f"s3://{bucket.name}/p", bucket.settings()).storage()
    return MetadataLog(storage, lease_ttl_s=ttl_s)


HOLDER = '''
import sys
from sparkway.persistence.metadata import MetadataLog, StorageInUseError
from sparkway.persistence.storage import BlobStorage

log = MetadataLog(BlobStorage({root}, {options}), lease_ttl_s={ttl})
log.lock()
print("locked", flush=True)
sys.stdin.readline()
try:
    log.log_step(1, 1, {})
    print("wrote", flush=True)
except StorageInUseError as exc:
    print("refused:", exc, flush=True)
'''


def _start_holder(bucket, ttl_s: float) -> subprocess.Popen:
    """A process that takes the lease of ``bucket``/p, then on a line of input tries to
    log a step."""
    storage = _metadata_log(bucket).storage
    source = (HOLDER.replace("{root}", repr(storage.root)).replace("{options}", repr(storage.options))
              .replace("{ttl}", repr(ttl_s)))
    proc = subprocess.Popen([sys.executable, "-c", source], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
    line = proc.stdout.readline()
    assert line == "locked\n", f"the holder did not take the lease: {line!r} {proc.stderr.read() if proc.poll() is not None else ''}"
    return proc


def test_a_second_user_of_the_storage_is_refused_while_the_lease_is_live(s3_bucket) -> None:
    first, second = _metadata_log(s3_bucket), _metadata_log(s3_bucket)
    first.lock()
    try:
        with pytest.raises(StorageInUseError, match="is in use by process"):
            second.lock()
        first.log_step(1, 1, {})  # the holder still writes
    finally:
        first.unlock()
    second.lock()  # released: free again
    second.unlock()
    assert "LEASE" not in _keys(s3_bucket, "p")


def test_the_lease_of_a_crashed_process_on_this_machine_is_taken_at_once(s3_bucket) -> None:
    holder = _start_holder(s3_bucket, ttl_s=600)  # would not expire during the test
    waiting = _metadata_log(s3_bucket)
    with pytest.raises(StorageInUseError):
        waiting.lock()
    holder.kill()
    holder.wait()
    waiting.lock()  # its process is gone: no need to wait for the lease to expire
    waiting.unlock()


def test_a_lease_not_renewed_expires_and_its_holder_stops_writing(s3_bucket) -> None:
    """A holder that is alive but paused (SIGSTOP: a long GC pause, a frozen VM) loses the
    lease once it is not renewed for its time to live; resumed, it refuses to write."""
    holder = _start_holder(s3_bucket, ttl_s=2)
    try:
        taker = _metadata_log(s3_bucket)
        with pytest.raises(StorageInUseError):
            taker.lock()
        holder.send_signal(signal.SIGSTOP)
        deadline = time.monotonic() + 60
        while True:
            try:
                taker.lock()
                break
            except StorageInUseError:
                assert time.monotonic() < deadline, "the paused holder's lease never expired"
                time.sleep(0.5)
        holder.send_signal(signal.SIGCONT)
        out, err = holder.communicate("go\n", timeout=60)
        assert out.startswith("refused:") and "lost the lease" in out, (out, err)
        taker.log_step(1, 1, {})  # the new holder writes
        taker.unlock()
    finally:
        holder.kill()
        holder.wait()


def test_the_lease_needs_an_existing_bucket(s3_endpoint) -> None:
    storage = BlobStorage("s3://no-such-bucket/p", _metadata_log(s3_endpoint.new_bucket()).storage.options)
    with pytest.raises(FileNotFoundError, match="create it"):
        MetadataLog(storage).lock()
