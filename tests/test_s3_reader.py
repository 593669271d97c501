"""pw.io.s3.read and pw.io.minio.read against a real S3 endpoint on loopback (moto's
server): objects listed here, read here or by Spark's tasks, changes found as for files.

Expected rows are those the tests upload, counted here with ``collections.Counter``.
"""

from __future__ import annotations

import collections
import json
import logging
from pathlib import Path

import pyarrow as pa
import pytest

import sparkway as pw
from sparkway.api import graph
from sparkway.connectors.files import FileSource
from sparkway.connectors.object_store import ObjectStoreFiles
from sparkway.core.columns import Column
from sparkway.core.dtypes import INT, STR
from sparkway.errors import PlanError
from sparkway.persistence.storage import BlobStorage

pytestmark = pytest.mark.usefixtures("spark")


class Visit(pw.Schema):
    user: str
    n: int


def _csv(rows: list[tuple[str, int]]) -> bytes:
    return ("user,n\n" + "".join(f"{user},{n}\n" for user, n in rows)).encode()


def _put(bucket, key: str, data: bytes) -> None:
    bucket.client().pipe(f"{bucket.name}/{key}", data)


def _visits(count: int, tag: str) -> list[tuple[str, int]]:
    return [(f"{tag}{i}", i) for i in range(count)]


def _table_rows(table: pw.Table) -> collections.Counter:
    _, columns = pw.debug.table_to_dicts(table)
    return collections.Counter(zip(columns["user"].values(), columns["n"].values()))


def test_a_prefix_is_read_as_a_folder_of_objects(s3_bucket, step_path: str, caplog) -> None:
    """Also when every step is large: then Spark's tasks fetch and parse the pieces."""
    objects = {"logs/a.csv": _visits(30, "a"), "logs/day/b.csv": _visits(20, "b"), "logs2/c.csv": _visits(5, "c")}
    for key, rows in objects.items():
        _put(s3_bucket, key, _csv(rows))
    with caplog.at_level(logging.INFO, logger="sparkway"):
        table = pw.io.s3.read(f"s3://{s3_bucket.name}/logs", format="csv", aws_s3_settings=s3_bucket.settings(),
                              schema=Visit, mode="static")
        got = _table_rows(table)
    assert got == collections.Counter(objects["logs/a.csv"] + objects["logs/day/b.csv"])
    by_tasks = "piece(s) to read by Spark's tasks" in caplog.text
    assert by_tasks == (step_path == "large")


def test_metadata_names_each_object_by_its_key(s3_bucket) -> None:
    _put(s3_bucket, "in/x.csv", _csv([("ann", 1)]))
    table = pw.io.s3.read("in/", format="csv", aws_s3_settings=s3_bucket.settings(), schema=Visit, mode="static",
                          with_metadata=True)
    _, columns = pw.debug.table_to_dicts(table)
    (meta,) = [m.value for m in columns["_metadata"].values()]
    listed = s3_bucket.client().info(f"{s3_bucket.name}/in/x.csv")
    assert meta["path"] == "in/x.csv" and meta["size"] == listed["size"]
    assert meta["modified_at"] == int(listed["LastModified"].timestamp())
    assert list(meta) == ["created_at", "modified_at", "owner", "path", "size", "seen_at"]


def test_objects_by_object_and_by_line(s3_bucket) -> None:
    _put(s3_bucket, "notes/one.txt", b"first line\nsecond line\n")
    _put(s3_bucket, "notes/two.txt", b"other\n")
    settings = s3_bucket.settings()
    by_object = pw.io.s3.read("notes", format="plaintext_by_object", aws_s3_settings=settings, mode="static")
    by_line = pw.io.s3.read("notes", format="plaintext", aws_s3_settings=settings, mode="static")
    _, objects = pw.debug.table_to_dicts(by_object)
    _, lines = pw.debug.table_to_dicts(by_line)
    assert sorted(objects["data"].values()) == ["first line\nsecond line\n", "other\n"]
    assert sorted(lines["data"].values()) == ["first line", "other", "second line"]


def test_minio_settings_reach_the_same_bucket(s3_bucket) -> None:
    from services.s3 import ACCESS_KEY, SECRET_KEY

    _put(s3_bucket, "m/a.csv", _csv([("ann", 1), ("bob", 2)]))
    settings = pw.io.minio.MinIOSettings(endpoint=s3_bucket.endpoint, bucket_name=s3_bucket.name,
                                         access_key=ACCESS_KEY, secret_access_key=SECRET_KEY, region="us-east-1")
    assert SECRET_KEY not in repr(settings)
    table = pw.io.minio.read("m", settings, "csv", schema=Visit, mode="static")
    assert _table_rows(table) == collections.Counter([("ann", 1), ("bob", 2)])


# --------------------------------------------------------------- changes of objects


def _source(bucket, prefix: str, storage: BlobStorage | None) -> FileSource:
    url = f"s3://{bucket.name}/{prefix}"
    columns = {"user": Column("user", STR), "n": Column("n", INT)}
    src = FileSource(url, format="csv", columns=columns, mode="streaming", name="visits",
                     files=ObjectStoreFiles(url, bucket.settings().storage_options()))
    src.open(storage)
    return src


def _step(src: FileSource) -> tuple[list[str], collections.Counter]:
    segments = src.discover()
    table: pa.Table = src.read(segments)
    src.advance(segments)
    return [s["kind"] for s in segments], collections.Counter((r["user"], r["n"], r["_diff"]) for r in table.to_pylist())


def test_new_rewritten_and_deleted_objects_give_inserts_updates_and_retractions(s3_bucket, tmp_path: Path) -> None:
    storage = BlobStorage(str(tmp_path / "state"))
    src = _source(s3_bucket, "v", storage)
    _put(s3_bucket, "v/a.csv", _csv([("ann", 1), ("bob", 2)]))
    _put(s3_bucket, "v/b.csv", _csv([("cid", 3)]))
    assert _step(src) == (["new", "new"], collections.Counter({("ann", 1, 1): 1, ("bob", 2, 1): 1, ("cid", 3, 1): 1}))
    assert _step(src) == ([], collections.Counter())
    # the same size, most likely within the same second: only the ETag tells
    _put(s3_bucket, "v/a.csv", _csv([("ann", 1), ("bob", 9)]))
    assert _step(src) == (["modify"], collections.Counter({("ann", 1, -1): 1, ("bob", 2, -1): 1,
                                                           ("ann", 1, 1): 1, ("bob", 9, 1): 1}))
    s3_bucket.client().rm(f"{s3_bucket.name}/v/b.csv")
    assert _step(src) == (["delete"], collections.Counter({("cid", 3, -1): 1}))
    # a restart from the position: nothing again, then the next object only
    restarted = _source(s3_bucket, "v", storage)
    restarted.restore(json.loads(json.dumps(src.position())))
    assert _step(restarted) == ([], collections.Counter())
    _put(s3_bucket, "v/c.csv", _csv([("dan", 4)]))
    assert _step(restarted) == (["new"], collections.Counter({("dan", 4, 1): 1}))


def test_a_restart_with_persistence_outputs_only_what_the_new_objects_change(s3_bucket, tmp_path: Path) -> None:
    config = pw.persistence.Config(pw.persistence.Backend.filesystem(tmp_path / "state"))

    def run(out: str) -> collections.Counter:
        graph.clear()
        visits = pw.io.s3.read("in", format="csv", aws_s3_settings=s3_bucket.settings(), schema=Visit,
                               mode="static", name="visits")
        totals = visits.groupby(visits.user).reduce(visits.user, total=pw.reducers.sum(visits.n))
        pw.io.jsonlines.write(totals, tmp_path / out)
        pw.run(persistence_config=config)
        lines = (tmp_path / out).read_text().splitlines()
        return collections.Counter((r["user"], r["total"], r["diff"]) for r in map(json.loads, lines))

    _put(s3_bucket, "in/a.csv", _csv([("ann", 1), ("bob", 2), ("ann", 3)]))
    assert run("1.jsonl") == collections.Counter({("ann", 4, 1): 1, ("bob", 2, 1): 1})
    _put(s3_bucket, "in/b.csv", _csv([("bob", 5)]))
    assert run("2.jsonl") == collections.Counter({("bob", 2, -1): 1, ("bob", 7, 1): 1})
    assert run("3.jsonl") == collections.Counter()


# ------------------------------------------------------------------------- errors


def test_a_path_without_a_bucket_says_how_to_name_one() -> None:
    with pytest.raises(PlanError, match=r"s3://<bucket>/animals/.*bucket_name"):
        pw.io.s3.read("animals/", format="csv", schema=Visit)


def test_a_path_in_another_bucket_than_the_settings_is_refused() -> None:
    settings = pw.io.s3.AwsS3Settings(bucket_name="one")
    with pytest.raises(PlanError, match="'two'.*'one'"):
        pw.io.s3.read("s3://two/animals", format="csv", schema=Visit, aws_s3_settings=settings)


def test_the_objects_travel_to_tasks_without_their_client() -> None:
    import pickle

    files = ObjectStoreFiles("s3://bucket/logs", {"key": "k", "secret": "s3cr3t"})
    files.fs  # noqa: B018 - a client made, as after a listing
    copy = pickle.loads(pickle.dumps(files))
    assert copy._fs is None and copy.options == files.options and "s3cr3t" not in repr(files)
