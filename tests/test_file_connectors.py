"""File input and output connectors, on real files (no Spark)."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import random
import re
import time
from pathlib import Path

import pyarrow as pa
import pytest

from sparkway.connectors.base import OutputBatch
from sparkway.connectors.files import FileSource
from sparkway.connectors.formats.csv import CsvParserSettings
from sparkway.connectors.formats.values import SchemaMismatchError
from sparkway.connectors.writers import CsvSink, JsonLinesSink, NullSink
from sparkway.core.columns import Column
from sparkway.core.dtypes import BOOL, BYTES, DATE_TIME_NAIVE, FLOAT, INT, JSON, STR, DType
from sparkway.core.durations import nanos
from sparkway.persistence.storage import BlobStorage

LOGS = {"user_id": Column("user_id", STR), "access_time": Column("access_time", INT)}


def write(path: Path, text: str | bytes, *, append: bool = False) -> None:
    """Write a file and move its mtime forward, so that every change is visible even
    within the filesystem's timestamp granularity."""
    path.parent.mkdir(parents=True, exist_ok=True)
    before = path.stat().st_mtime_ns if path.exists() else 0
    data = text.encode() if isinstance(text, str) else text
    with open(path, "ab" if append else "wb") as f:
        f.write(data)
    later = max(before + 1_000_000_000, path.stat().st_mtime_ns)
    os.utime(path, ns=(later, later))


def source(path: Path, columns: dict[str, Column] | None = None, **kw) -> FileSource:
    kw.setdefault("format", "csv")
    storage = kw.pop("storage", None)
    src = FileSource(str(path), columns=LOGS if columns is None else columns, name="logs", **kw)
    src.open(storage)
    return src


def step(src: FileSource) -> pa.Table:
    """One step of the engine's loop: discover, read, advance."""
    segments = src.discover()
    table = src.read(segments)
    src.advance(segments)
    return table


def rows(table: pa.Table, *cols: str) -> list[tuple]:
    cols = cols or tuple(n for n in table.column_names if n not in ("_id", "_diff"))
    return [tuple(r[c] for c in cols) + (r["_diff"],) for r in table.to_pylist()]


def by_id(table: pa.Table) -> dict[tuple[int, int], dict]:
    return {(r["_id"], r["_diff"]): r for r in table.to_pylist()}


# --------------------------------------------------------------------------- static


def test_static_reads_a_directory_recursively_in_path_order(tmp_path: Path) -> None:
    write(tmp_path / "logs" / "b.csv", "user_id,access_time\ncarol,3\n")
    write(tmp_path / "logs" / "a.csv", "user_id,access_time\nbob,1\nalice,2")  # no final \n
    write(tmp_path / "logs" / "sub" / "c.csv", "access_time,user_id\n4,dan\n")
    src = source(tmp_path / "logs", mode="static")
    segments = src.discover()
    assert [s["file"] for s in segments] == ["a.csv", "b.csv", "sub/c.csv"]
    assert src.discover() == segments  # discover does not move the position
    table = src.read(segments)
    assert table.schema.names == ["_id", "user_id", "access_time", "_diff"]
    assert table.schema.field("access_time").type == pa.int64()
    assert rows(table) == [("bob", 1, 1), ("alice", 2, 1), ("carol", 3, 1), ("dan", 4, 1)]
    assert len(set(table.column("_id").to_pylist())) == 4
    assert not src.is_finished
    src.advance(segments)
    assert src.is_finished
    assert src.discover() == []


def test_static_finishes_with_a_warning(tmp_path: Path, caplog) -> None:
    write(tmp_path / "a.csv", "user_id,access_time\nbob,1\n")
    src = source(tmp_path, mode="static")
    with caplog.at_level(logging.WARNING, logger="sparkway"):
        step(src)
    assert "FileReader-logs: Closing the data source" in caplog.text


def test_static_source_with_nothing_to_read_is_finished(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    src = source(tmp_path / "empty", mode="static")
    assert src.discover() == []
    assert src.is_finished


def test_reading_the_same_segments_again_gives_the_same_rows(tmp_path: Path) -> None:
    write(tmp_path / "a.csv", "user_id,access_time\nbob,1\nalice,2\n")
    src = source(tmp_path, with_metadata=True)
    segments = src.discover()
    first = src.read(segments)
    assert src.read(json.loads(json.dumps(segments))).equals(first)
    meta = json.loads(first.column("_metadata")[0].as_py())
    assert meta["path"] == str((tmp_path / "a.csv").resolve())
    assert meta["size"] == len("user_id,access_time\nbob,1\nalice,2\n")
    assert set(meta) == {"path", "size", "modified_at", "seen_at"}


def test_object_pattern_filters_file_names(tmp_path: Path) -> None:
    write(tmp_path / "a.csv", "user_id,access_time\nbob,1\n")
    write(tmp_path / "notes.txt", "hello\n")
    src = source(tmp_path, object_pattern="*.csv")
    assert rows(step(src)) == [("bob", 1, 1)]


# ------------------------------------------------------------------------ streaming


def test_streaming_new_file_then_appended_lines(tmp_path: Path) -> None:
    log = tmp_path / "a.csv"
    write(log, "user_id,access_time\nbob,1\n")
    src = source(tmp_path)
    assert rows(step(src)) == [("bob", 1, 1)]
    assert step(src).num_rows == 0
    write(log, "alice,2\ncarol,3\n", append=True)
    segments = src.discover()
    assert [s["kind"] for s in segments] == ["append"]
    assert rows(src.read(segments)) == [("alice", 2, 1), ("carol", 3, 1)]
    src.advance(segments)
    assert src.discover() == []


def test_streaming_reads_a_last_line_without_newline_once_it_is_stable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sparkway.connectors.files.STABLE_AFTER_S", 0.2)
    log = tmp_path / "a.txt"
    write(log, "one\ntw")
    src = source(tmp_path, {}, format="plaintext")
    assert rows(step(src)) == [("one", 1)]
    # unchanged, but only just: the writer may be pausing in the middle of the line
    assert step(src).num_rows == 0
    time.sleep(0.25)  # unchanged for longer: the writer is done with the line
    assert rows(step(src)) == [("tw", 1)]
    assert step(src).num_rows == 0


def test_streaming_partial_line_waits_while_the_file_grows(tmp_path: Path) -> None:
    log = tmp_path / "a.txt"
    write(log, "one\ntw")
    src = source(tmp_path, {}, format="plaintext")
    assert rows(step(src)) == [("one", 1)]
    write(log, "o\nthr", append=True)
    assert rows(step(src)) == [("two", 1)]


def test_streaming_modified_file_retracts_old_rows_with_same_ids(tmp_path: Path) -> None:
    log = tmp_path / "a.csv"
    write(log, "user_id,access_time\nbob,1\nalice,2\n")
    src = source(tmp_path)
    first = step(src)
    write(log, "user_id,access_time\nbob,1\nalice,5\nerin,6\n")
    segments = src.discover()
    assert [s["kind"] for s in segments] == ["modify"]
    second = src.read(segments)
    src.advance(segments)
    retracted = [r for r in second.to_pylist() if r["_diff"] == -1]
    inserted = [r for r in second.to_pylist() if r["_diff"] == 1]
    assert [{**r, "_diff": 1} for r in retracted] == first.to_pylist()
    old_ids = first.column("_id").to_pylist()
    assert [r["_id"] for r in inserted[:2]] == old_ids  # same positions, same ids
    assert [(r["user_id"], r["access_time"]) for r in inserted] == [("bob", 1), ("alice", 5), ("erin", 6)]
    assert inserted[2]["_id"] not in old_ids


def test_streaming_deleted_file_is_retracted(tmp_path: Path) -> None:
    write(tmp_path / "a.csv", "user_id,access_time\nbob,1\n")
    write(tmp_path / "b.csv", "user_id,access_time\nalice,2\n")
    src = source(tmp_path)
    first = step(src)
    (tmp_path / "a.csv").unlink()
    segments = src.discover()
    assert [(s["kind"], s["file"]) for s in segments] == [("delete", "a.csv")]
    table = src.read(segments)
    src.advance(segments)
    assert table.to_pylist() == [{**first.to_pylist()[0], "_diff": -1}]
    assert "a.csv" not in src.position()["files"]
    assert src.discover() == []


def test_a_streaming_input_path_that_goes_missing_retracts_nothing_until_it_is_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    folder = tmp_path / "logs"
    write(folder / "a.csv", "user_id,access_time\nbob,1\n")
    src = source(folder)
    assert rows(step(src), "user_id") == [("bob", 1)]
    folder.rename(tmp_path / "moved")  # an unmounted disk, a folder moved away
    with caplog.at_level(logging.WARNING, logger="sparkway"):
        assert src.discover() == [] and src.discover() == []
    assert [r.getMessage() for r in caplog.records] == [f"{src.label}: {folder} does not exist; its rows read so far stay"]
    (tmp_path / "moved").rename(folder)
    assert src.discover() == []  # back as it was: nothing to read again
    write(folder / "b.csv", "user_id,access_time\nann,2\n")
    (folder / "a.csv").unlink()
    assert sorted(rows(step(src), "user_id")) == [("ann", 1), ("bob", -1)]  # a file deleted from a path that exists


@pytest.mark.parametrize("mode", ["streaming", "static"])
def test_an_input_path_emptied_of_every_file_retracts_nothing_unless_asked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, mode: str,
) -> None:
    folder = tmp_path / "logs"
    write(folder / "a.csv", "user_id,access_time\nbob,1\n")
    write(folder / "b.csv", "user_id,access_time\nann,2\n")
    store = str(tmp_path / "store")  # the rows a retraction needs
    first = source(folder, storage=BlobStorage(store))
    assert sorted(rows(step(first), "user_id")) == [("ann", 1), ("bob", 1)]
    position = first.position()
    for name in ("a.csv", "b.csv"):  # the empty mount point of an unmounted disk
        (folder / name).unlink()
    kept = source(folder, mode=mode, storage=BlobStorage(store))
    kept.restore(position)  # a restart, as persistence gives it
    with caplog.at_level(logging.WARNING, logger="sparkway"):
        assert kept.discover() == [] and kept.discover() == []
    warned = [r.getMessage() for r in caplog.records if "lists no file" in r.getMessage()]
    assert warned == [f"{kept.label}: {folder} lists no file, where it had 2; their rows stay until files come back "
                      "(read it with retract_when_emptied=True to retract them)"]
    retracting = source(folder, mode=mode, storage=BlobStorage(store), retract_when_emptied=True)
    retracting.restore(position)
    assert sorted(rows(step(retracting), "user_id")) == [("ann", -1), ("bob", -1)]


def test_a_quote_never_closed_is_reported_at_the_line_where_its_row_starts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    """The row keeps the rest of the file, as Pathway reads it (corpus program
    csv_input_unterminated_quote), but no longer without a word."""
    write(tmp_path / "a.csv", 'user_id,access_time\nbob,1\n"ann,2\ncid,3\ndan,4\n')
    with caplog.at_level(logging.WARNING, logger="sparkway"):
        step(source(tmp_path, mode="static"))
    assert [r.getMessage() for r in caplog.records if "quoted" in r.getMessage()] == [
        f"{tmp_path / 'a.csv'}:3: a quoted field is not closed before the end of the file: its row holds the 3 "
        "line(s) from there on (a missing closing quote?)"
    ]


def test_a_static_read_of_a_path_that_does_not_exist_is_an_error_naming_it(tmp_path: Path) -> None:
    src = source(tmp_path / "typo", mode="static")
    with pytest.raises(FileNotFoundError, match=f"input path {tmp_path / 'typo'} does not exist"):
        src.discover()


def test_appended_rows_are_retracted_too_when_the_file_is_replaced(tmp_path: Path) -> None:
    log = tmp_path / "a.csv"
    write(log, "user_id,access_time\nbob,1\n")
    src = source(tmp_path)
    step(src)
    write(log, "alice,2\n", append=True)
    step(src)
    write(log, "user_id,access_time\ncarol,3\n")
    assert sorted(rows(step(src))) == [("alice", 2, -1), ("bob", 1, -1), ("carol", 3, 1)]


def test_touched_file_gives_nothing(tmp_path: Path) -> None:
    log = tmp_path / "a.bin"
    write(log, b"\x00\x01")
    src = source(tmp_path, {}, format="binary")
    step(src)
    os.utime(log, ns=(log.stat().st_mtime_ns + 10**9,) * 2)
    assert src.discover() == []


def test_csv_record_with_quoted_newline_is_not_cut_by_an_append(tmp_path: Path) -> None:
    log = tmp_path / "a.csv"
    cols = {"name": Column("name", STR), "note": Column("note", STR)}
    write(log, 'name,note\nbob,"first\n')
    src = source(tmp_path, cols)
    assert src.discover() == []  # the quoted field is still open
    write(log, 'line"\nalice,x\n', append=True)
    assert rows(step(src)) == [("bob", "first\nline", 1), ("alice", "x", 1)]


def _consolidated(tables: list[pa.Table]) -> dict[tuple, int]:
    total: dict[tuple, int] = {}
    for table in tables:
        for r in table.to_pylist():
            key = tuple(v for k, v in r.items() if k != "_diff")
            total[key] = total.get(key, 0) + r["_diff"]
    return {k: v for k, v in total.items() if v}


def _random_content(rng, format: str) -> str:
    if format == "csv":
        pieces = [lambda i: f"u{i},{i}\n", lambda i: f'"q,{i}\nnext ""line""",{i}\n',
                  lambda i: f"bad{i},x\n", lambda i: "\n", lambda i: f"é{i},{i}\n"]
        head = "name,n\n"
    elif format == "json":
        pieces = [lambda i: json.dumps({"name": f"u{i}", "n": i}) + "\n", lambda i: "\n",
                  lambda i: f'{{"name": "bad", "n": "{i}"}}\n', lambda i: f'{{"name": "é{i}", "n": {i}}}\n']
        head = ""
    else:
        pieces = [lambda i: f"line {i}\n", lambda i: "\n", lambda i: f"é{i}\r\n"]
        head = ""
    return head + "".join(rng.choice(pieces)(i) for i in range(30))


@pytest.mark.parametrize("format", ["csv", "json", "plaintext"])
@pytest.mark.parametrize("seed", range(15))
def test_streaming_a_file_written_in_random_pieces_ends_as_a_static_read(
    tmp_path: Path, seed: int, format: str
) -> None:
    import random

    rng = random.Random(seed)
    cols = {"name": Column("name", STR), "n": Column("n", INT)} if format != "plaintext" else {}
    content = _random_content(rng, format).encode()
    log = tmp_path / "logs" / "a.txt"
    write(log, b"")
    src = source(tmp_path / "logs", cols, format=format)
    outputs = []
    pos = 0
    while pos < len(content):
        size = rng.randint(1, 25)
        write(log, content[pos : pos + size], append=True)
        pos += size
        outputs.append(step(src))
        if rng.random() < 0.2:  # a discover right after: a tail without newline still waits
            outputs.append(step(src))
    outputs.append(step(src))
    outputs.append(step(src))
    assert src.discover() == []
    expected = step(source(tmp_path / "logs", cols, format=format, mode="static"))
    assert _consolidated(outputs) == _consolidated([expected])
    assert all(v == 1 for v in _consolidated(outputs).values())


# ---------------------------------------------------------------- restore, storage


def test_restored_source_reads_only_what_is_new(tmp_path: Path) -> None:
    write(tmp_path / "logs" / "a.csv", "user_id,access_time\nbob,1\n")
    # a position is committed by a run with persistence only
    first = source(tmp_path / "logs", mode="static", storage=BlobStorage(str(tmp_path / "store")))
    step(first)
    position = json.loads(json.dumps(first.position()))

    again = source(tmp_path / "logs", mode="static")
    again.restore(position)
    assert again.discover() == []
    assert again.is_finished

    write(tmp_path / "logs" / "b.csv", "user_id,access_time\nalice,2\n")
    write(tmp_path / "logs" / "a.csv", "carol,3\n", append=True)
    later = source(tmp_path / "logs", mode="static")
    later.restore(position)
    assert rows(step(later)) == [("carol", 3, 1), ("alice", 2, 1)]


def test_retraction_rows_survive_in_blob_storage(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    write(logs / "a.csv", "user_id,access_time\nbob,1\n")
    write(logs / "b.csv", "user_id,access_time\nalice,2\n")
    storage = BlobStorage(str(tmp_path / "store"))
    first = source(logs, storage=storage)
    inserted = by_id(step(first))
    position = json.loads(json.dumps(first.position()))

    write(logs / "a.csv", "user_id,access_time\nbob,7\n")
    (logs / "b.csv").unlink()
    second = source(logs, storage=BlobStorage(str(tmp_path / "store")))
    second.restore(position)
    table = step(second)
    retracted = {k: v for k, v in by_id(table).items() if k[1] == -1}
    assert {k[0]: {**v, "_diff": 1} for k, v in retracted.items()} == {
        k[0]: v for k, v in inserted.items()
    }
    assert [r for r in rows(table) if r[-1] == 1] == [("bob", 7, 1)]
    # the deleted file's and the old generation's rows are gone from the storage
    third = source(logs, storage=BlobStorage(str(tmp_path / "store")), retract_when_emptied=True)
    third.restore(second.position())
    (logs / "a.csv").unlink()
    assert rows(step(third)) == [("bob", 7, -1)]


def test_uncommitted_reads_are_not_retracted(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "a.csv"
    write(log, "user_id,access_time\nbob,1\n")
    storage = BlobStorage(str(tmp_path / "store"))
    src = source(tmp_path / "logs", storage=storage)
    step(src)
    write(log, "alice,2\n", append=True)
    src.read(src.discover())  # a step that is abandoned: never advanced
    write(log, "user_id,access_time\ncarol,3\n")
    assert sorted(rows(step(src))) == [("bob", 1, -1), ("carol", 3, 1)]


# ----------------------------------------------------------------------- bad input


def test_bad_csv_rows_are_skipped_with_their_location(tmp_path: Path, caplog) -> None:
    log = tmp_path / "logs" / "a.csv"
    write(log, 'user_id,access_time\nbob,1\n"al,ice",12x\ncarol\ndan,4,5\nerin,5\n')
    src = source(tmp_path / "logs", mode="static")
    with caplog.at_level(logging.WARNING, logger="sparkway"):
        table = step(src)
    # a line with more fields than the header is read, its extra fields ignored, as in
    # Pathway 0.33 (recorded: tests/corpus/programs/csv_input_type_float.py); said once
    assert rows(table) == [("bob", 1, 1), ("dan", 4, 1), ("erin", 5, 1)]
    path = os.path.join(str(tmp_path / "logs"), "a.csv")
    assert f'{path}:3:10: column "access_time": cannot parse "12x" as int; row skipped' in caplog.text
    assert f"{path}:4:6: expected 2 fields as in the header, found 1; row skipped" in caplog.text
    assert f"{path}:5: 3 fields where the header has 2: the fields after the 2th are ignored" in caplog.text


def test_bad_row_location_in_an_appended_chunk(tmp_path: Path, caplog) -> None:
    log = tmp_path / "a.csv"
    write(log, "user_id,access_time\nbob,1\n")
    src = source(tmp_path)
    step(src)
    write(log, "alice,2\ncarol,1.5\n", append=True)
    with caplog.at_level(logging.WARNING, logger="sparkway"):
        assert rows(step(src)) == [("alice", 2, 1)]
    assert f'{log}:4:7: column "access_time": cannot parse "1.5" as int' in caplog.text


def test_bad_json_lines_are_skipped_with_their_location(tmp_path: Path, caplog) -> None:
    log = tmp_path / "a.jsonl"
    write(
        log,
        '{"user_id": "bob", "access_time": 1}\n'
        '{"user_id": "al", "access_time": "12"}\n'
        '{"user_id": "x", \n'
        '{"access_time": 3}\n'
        "[1, 2]\n"
        '{"user_id": "erin", "access_time": 5, "extra": true}\n',
    )
    src = source(tmp_path, format="json", mode="static")
    with caplog.at_level(logging.WARNING, logger="sparkway"):
        assert rows(step(src)) == [("bob", 1, 1), ("erin", 5, 1)]
    text = caplog.text
    assert f'{log}:2:34: column "access_time": expected int, found "12"; row skipped' in text
    assert f"{log}:3:18: invalid JSON" in text
    assert f'{log}:4:1: column "user_id": missing; row skipped' in text
    assert f"{log}:5:1: expected a JSON object" in text


def test_missing_header_column_raises_from_discover(tmp_path: Path) -> None:
    write(tmp_path / "a.csv", "user_id,time\nbob,1\n")
    src = source(tmp_path, mode="static")
    with pytest.raises(SchemaMismatchError) as info:
        src.discover()
    message = str(info.value)
    assert "a.csv" in message and '"access_time"' in message and "user_id,time" in message
    assert isinstance(info.value, ValueError)


def test_a_streaming_source_skips_a_file_with_a_bad_header_until_it_is_fixed(tmp_path: Path, caplog) -> None:
    write(tmp_path / "a.csv", "user_id,access_time\nbob,1\n")
    write(tmp_path / "bad.csv", "user_id,time\nal,2\n")
    src = source(tmp_path, mode="streaming")
    with caplog.at_level(logging.ERROR, logger="sparkway"):
        assert rows(step(src)) == [("bob", 1, 1)]
        assert rows(step(src)) == []
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "bad.csv" in errors[0] and '"access_time"' in errors[0], errors
    assert "skipped until it changes" in errors[0]
    write(tmp_path / "bad.csv", "user_id,access_time\nal,2\n")
    assert rows(step(src)) == [("al", 2, 1)]


def test_a_streaming_source_told_to_stop_on_a_bad_file_raises_naming_it(tmp_path: Path) -> None:
    import sparkway as pw

    write(tmp_path / "a.csv", "user_id,access_time\nbob,1\n")
    src = source(tmp_path, mode="streaming", on_bad_file="stop")
    assert rows(step(src)) == [("bob", 1, 1)]
    write(tmp_path / "bad.csv", "user_id,time\nal,2\n")
    with pytest.raises(SchemaMismatchError) as info:
        step(src)
    assert "bad.csv" in str(info.value) and '"access_time"' in str(info.value)

    class Logs(pw.Schema):
        user_id: str
        access_time: int

    assert pw.io.csv.read(tmp_path, schema=Logs, on_bad_file="stop").column_names() == ["user_id", "access_time"]
    with pytest.raises(pw.errors.PlanError, match="on_bad_file must be one of \\['skip', 'stop'\\], not 'halt'"):
        pw.io.csv.read(tmp_path, schema=Logs, on_bad_file="halt")


def test_a_header_naming_a_schema_column_twice_raises_naming_it(tmp_path: Path) -> None:
    write(tmp_path / "a.csv", "user_id,access_time,user_id\nbob,1,al\n")
    with pytest.raises(SchemaMismatchError) as info:
        source(tmp_path, mode="static").discover()
    assert "a.csv" in str(info.value) and '"user_id" more than once' in str(info.value)


def test_a_column_the_schema_does_not_read_may_repeat(tmp_path: Path) -> None:
    write(tmp_path / "a.csv", "user_id,note,access_time,note\nbob,x,1,y\n")
    assert rows(step(source(tmp_path, mode="static"))) == [("bob", 1, 1)]


def test_a_byte_order_mark_before_a_quoted_header_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_bytes(b'\xef\xbb\xbf"user_id","access_time"\nbob,1\n')
    assert rows(step(source(tmp_path, mode="static"))) == [("bob", 1, 1)]


def test_rows_that_do_not_parse_are_counted_by_file_when_the_run_ends(tmp_path: Path, caplog) -> None:
    write(tmp_path / "a.csv", "user_id,access_time\nbob,x\nal,1\nann,y\nerin,z\n")
    write(tmp_path / "b.csv", "user_id,access_time\nbob,2\ncid,\n")
    write(tmp_path / "c.csv", "user_id,access_time\nbob,3\n")
    src = source(tmp_path, mode="static")
    assert len(rows(step(src))) == 3
    with caplog.at_level(logging.WARNING, logger="sparkway"):
        src.close()
    summary = [r.getMessage() for r in caplog.records if "skipped in this run" in r.getMessage()]
    assert len(summary) == 1 and "4 row(s) skipped in this run" in summary[0], caplog.text
    assert f"{tmp_path / 'a.csv'} (3), {tmp_path / 'b.csv'} (1)" in summary[0] and "c.csv" not in summary[0]


def test_empty_file_is_logged_and_not_fatal(tmp_path: Path, caplog) -> None:
    write(tmp_path / "a.csv", "")
    write(tmp_path / "b.csv", "user_id,access_time\nbob,1\n")
    src = source(tmp_path, mode="static")
    with caplog.at_level(logging.WARNING, logger="sparkway"):
        assert rows(step(src)) == [("bob", 1, 1)]
    assert "a.csv: empty file" in caplog.text


def test_unreadable_file_is_logged_and_not_fatal(tmp_path: Path, caplog, monkeypatch) -> None:
    write(tmp_path / "a.csv", "user_id,access_time\nalice,2\n")
    write(tmp_path / "b.csv", "user_id,access_time\nbob,1\n")
    (tmp_path / "a.csv").chmod(0)
    src = source(tmp_path, mode="static")
    if os.geteuid() == 0:  # root reads any file: make the read fail as it would for a user
        real_read = src.files.read

        def read(path: str, *args):
            if path.endswith("a.csv"):
                raise PermissionError(13, "Permission denied", path)
            return real_read(path, *args)

        monkeypatch.setattr(src.files, "read", read)
    with caplog.at_level(logging.WARNING, logger="sparkway"):
        assert rows(step(src)) == [("bob", 1, 1)]
    assert "a.csv: cannot read the file" in caplog.text
    assert "Permission denied" in caplog.text


def test_file_vanished_before_read_is_logged_and_not_fatal(tmp_path: Path, caplog) -> None:
    write(tmp_path / "a.csv", "user_id,access_time\nalice,2\n")
    write(tmp_path / "b.csv", "user_id,access_time\nbob,1\n")
    src = source(tmp_path)
    segments = src.discover()
    (tmp_path / "a.csv").unlink()
    with caplog.at_level(logging.WARNING, logger="sparkway"):
        assert rows(src.read(segments)) == [("bob", 1, 1)]
    assert "a.csv: cannot read" in caplog.text
    src.advance(segments)
    assert [s["kind"] for s in src.discover()] == ["delete"]


def test_truncated_file_retracts_its_rows(tmp_path: Path) -> None:
    write(tmp_path / "a.csv", "user_id,access_time\nbob,1\n")
    src = source(tmp_path)
    step(src)
    write(tmp_path / "a.csv", "")
    assert rows(step(src)) == [("bob", 1, -1)]
    write(tmp_path / "a.csv", "user_id,access_time\ncarol,3\n")
    assert rows(step(src)) == [("carol", 3, 1)]


# -------------------------------------------------------------------------- formats


def test_csv_types_defaults_and_optional(tmp_path: Path) -> None:
    cols = {
        "name": Column("name", STR),
        "score": Column("score", FLOAT),
        "ok": Column("ok", BOOL),
        "meta": Column("meta", JSON),
        "at": Column("at", DATE_TIME_NAIVE),
        "n": Column("n", INT.with_optional()),
        "label": Column("label", STR, default_value="none"),
        "missing": Column("missing", INT.with_optional()),
        "tags": Column("tags", DType("list", (INT,))),
        "renamed": Column("renamed", STR, source_name="other name"),
    }
    write(
        tmp_path / "a.csv",
        'name,score,ok,meta,at,n,tags,other name\n'
        '"bob ""b""",1.5,true,"{""a"": [1,2]}",2023-11-29T15:01:32,,"[1, 2]",x\n'
        ',2,False,null,2023-11-29T00:00:00,7,[],y\n',  # a date alone is not a DateTimeNaive (Pathway)
    )
    table = step(source(tmp_path, cols, mode="static"))
    assert table.schema.field("meta").type == pa.string()
    assert table.schema.field("tags").type == pa.list_(pa.int64())
    assert rows(table) == [
        ('bob "b"', 1.5, True, '{"a": [1, 2]}', nanos(dt.datetime(2023, 11, 29, 15, 1, 32)), None,
         "none", None, [1, 2], "x", 1),
        ("", 2.0, False, "null", nanos(dt.datetime(2023, 11, 29)), 7, "none", None, [], "y", 1),
    ]


def test_csv_parser_settings(tmp_path: Path) -> None:
    write(tmp_path / "a.csv", "# a comment\nuser_id;access_time\n# another\n'b;ob';1\n")
    settings = CsvParserSettings(delimiter=";", quote="'", comment_character="#")
    src = source(tmp_path, mode="static", csv_settings=settings)
    assert rows(step(src)) == [("b;ob", 1, 1)]


def test_json_lines_format(tmp_path: Path) -> None:
    cols = {
        "word": Column("word", STR),
        "count": Column("count", FLOAT),
        "data": Column("data", JSON),
        "n": Column("n", INT.with_optional()),
        "k": Column("k", INT, default_value=-1),
    }
    write(tmp_path / "a.jsonl", '{"word": "a", "count": 2, "data": {"x": [1]}, "n": null}\n\n'
                                '{"word": "b", "count": 2.5, "data": "s", "k": 3}\n')
    table = step(source(tmp_path, cols, format="json", mode="static"))
    # "b" has no "n": an absent optional field skips the line, as in Pathway 0.33 (recorded)
    assert rows(table) == [("a", 2.0, '{"x": [1]}', None, -1, 1)]


def test_plaintext_format(tmp_path: Path) -> None:
    write(tmp_path / "a.txt", "hello world\r\n\nbye\n")
    table = step(source(tmp_path, {}, format="plaintext", mode="static"))
    assert table.schema.names == ["_id", "data", "_diff"]
    assert rows(table) == [("hello world", 1), ("", 1), ("bye", 1)]


def test_plaintext_by_file_and_binary_formats(tmp_path: Path) -> None:
    write(tmp_path / "a.txt", "line 1\nline 2\n")
    write(tmp_path / "b.txt", "other")
    text = step(source(tmp_path, {}, format="plaintext_by_file", mode="static"))
    assert rows(text) == [("line 1\nline 2\n", 1), ("other", 1)]
    binary = step(source(tmp_path, {"raw": Column("raw", BYTES)}, format="binary", mode="static"))
    assert binary.schema.field("raw").type == pa.binary()
    assert rows(binary) == [(b"line 1\nline 2\n", 1), (b"other", 1)]


def test_by_file_format_change_is_an_update_of_the_same_id(tmp_path: Path) -> None:
    write(tmp_path / "a.txt", "v1")
    src = source(tmp_path, {}, format="plaintext_by_file")
    first = step(src)
    write(tmp_path / "a.txt", "v2 longer")
    second = step(src)
    assert rows(second) == [("v1", -1), ("v2 longer", 1)]
    assert set(second.column("_id").to_pylist()) == set(first.column("_id").to_pylist())


def test_rows_with_a_primary_key_leave_their_ids_to_the_engine(tmp_path: Path) -> None:
    # the engine makes them from the key's values (tests/test_ids.py checks them)
    cols = {"user_id": Column("user_id", STR, primary_key=True), "access_time": Column("access_time", INT)}
    write(tmp_path / "a.csv", "user_id,access_time\nbob,1\n")
    src = source(tmp_path, cols, mode="static")
    assert src.key_columns == ["user_id"]
    assert rows(step(src)) == [("bob", 1, 1)]


def test_ids_without_primary_key_depend_on_source_file_and_line(tmp_path: Path) -> None:
    write(tmp_path / "a.csv", "user_id,access_time\nbob,1\n")
    write(tmp_path / "b.csv", "user_id,access_time\nbob,1\n")
    ids = step(source(tmp_path, mode="static")).column("_id").to_pylist()
    assert ids[0] != ids[1]
    again = step(source(tmp_path, mode="static")).column("_id").to_pylist()
    assert again == ids


# ---------------------------------------------------------------------------- sinks


def _batch(time: int, diff: pa.Array | None = None, **columns: pa.Array) -> OutputBatch:
    n = len(next(iter(columns.values())))
    diff = pa.array([1] * n, pa.int64()) if diff is None else diff
    return OutputBatch(pa.table(columns), time, diff)


def test_csv_sink_text(tmp_path: Path, caplog) -> None:
    out = tmp_path / "out" / "sessions.csv"
    sink = CsvSink(str(out), ["user_id", "session_length", "score", "ok", "meta", "note"])
    # as Pathway, a missing directory is not created: the error names it
    with pytest.raises(OSError, match=f"{tmp_path / 'out'} does not exist"):
        sink.open()
    out.parent.mkdir()
    sink.open()
    assert out.read_text() == ""  # the header comes with the first rows
    batch = _batch(
        1701270092168,
        user_id=pa.array(["bob", 'say "hi"']),
        session_length=pa.array([62, None], pa.int64()),
        score=pa.array([1.5, 2.0]),
        ok=pa.array([True, False]),
        meta=pa.array(['{"a": 1}', None]),
        note=pa.array(["a,b", ""]),
        diff=pa.array([1, -1], pa.int64()),
    )
    with caplog.at_level(logging.INFO, logger="sparkway"):
        sink.write(batch)
        sink.write(OutputBatch(batch.table.slice(0, 0), 1701270092170, batch.diffs.slice(0, 0)))  # nothing to write
    sink.close()
    assert out.read_text() == (
        '"user_id","session_length","score","ok","meta","note","time","diff"\n'
        '"bob","62","1.5","True","{""a"": 1}","a,b","1701270092168","1"\n'
        '"say ""hi""","None","2.0","False","None","","1701270092168","-1"\n'
    )
    assert "Done writing 2 entries, time 1701270092168" in caplog.text


def test_csv_floats_are_written_as_pathway_writes_them(tmp_path: Path) -> None:
    """Python's shortest digits, its choice of exponent form, the exponent without "+"
    and leading zeros, whole numbers with ".0"; over many magnitudes."""
    rng = random.Random(7)
    values = [rng.random() * 10.0 ** rng.randint(-25, 25) * rng.choice([1, -1]) for _ in range(3000)]
    values += [rng.randint(-10**6, 10**6) / rng.choice([1, 2, 1024]) for _ in range(1000)]
    values += [0.0, -0.0, 1e16, 1e-4, 9.99e-5, 1e15, float("inf"), float("-inf"), float("nan")]

    def pathway_text(value: float) -> str:
        return "NaN" if value != value else re.sub(r"e\+?(-?)0*(\d)", r"e\1\2", repr(value))

    out = tmp_path / "out.csv"
    sink = CsvSink(str(out), ["x"])
    sink.open()
    sink.write(_batch(1, x=pa.array(values, pa.float64()), diff=pa.array([1] * len(values), pa.int64())))
    sink.close()
    written = [line.split(",")[0].strip('"') for line in out.read_text().splitlines()[1:]]
    assert written == [pathway_text(v) for v in values]


def test_json_lines_sink_text(tmp_path: Path) -> None:
    out = tmp_path / "result.jsonlines"
    sink = JsonLinesSink(str(out), ["word", "count", "data", "at"], dtypes={"data": JSON, "at": DATE_TIME_NAIVE})
    sink.open()
    assert out.read_text() == ""
    sink.write(_batch(
        1701270092168,
        word=pa.array(["a", "é"]),
        count=pa.array([2, 3], pa.int64()),
        data=pa.array(['{"x": [1, 2]}', None]),
        at=pa.array([nanos(dt.datetime(2023, 11, 29, 15, 1, 32)) + 5, None], pa.int64()),  # date-times: nanoseconds
    ))
    sink.close()
    assert out.read_text() == (
        '{"word":"a","count":2,"data":{"x":[1,2]},"at":"2023-11-29T15:01:32.000000005",'
        '"diff":1,"time":1701270092168}\n'
        '{"word":"é","count":3,"data":null,"at":null,"diff":1,"time":1701270092168}\n'
    )


def test_csv_sink_truncates_on_open_and_null_sink_discards(tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    out.write_text("old content\n")
    sink = CsvSink(str(out), ["word"])
    sink.open()
    sink.close()
    assert out.read_text() == ""  # truncated; no rows, no header (as Pathway 0.33)
    NullSink().write(_batch(1, word=pa.array(["a"])))


# --------------------------------------------------------------- read on the executors


def _read_pieces(src: FileSource, segments: list) -> pa.Table:
    """What the executors read for ``segments``: every piece through the read function
    Spark's tasks run (here in this process)."""
    plan = src.read_on_executors(segments)
    assert plan is not None
    return pa.concat_tables([plan.read(piece)[0] for piece in plan.pieces])


def test_pieces_read_on_executors_give_the_rows_and_ids_of_one_read(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("sparkway.connectors.files.EXECUTOR_READ_BYTES", 0)
    monkeypatch.setattr("sparkway.connectors.files.PIECE_BYTES", 20)
    # quoted fields hold commas, quotes and line breaks: no piece may end inside one
    lines = [f'"user {i}, ""the"" {i}\nsecond line",{i}\n' if i % 3 == 0 else f"u{i},{i}\n" for i in range(40)]
    write(tmp_path / "in" / "a.csv", "user_id,access_time\n" + "".join(lines))
    write(tmp_path / "in" / "b.csv", "user_id,access_time\nbob,7\n")
    here, there = (source(tmp_path / "in", storage=BlobStorage(str(tmp_path / name))) for name in ("s1", "s2"))
    segments = here.discover()
    assert there.discover() == segments
    expected = here.read(segments)
    plan = there.read_on_executors(segments)
    assert len(plan.pieces) > 10
    assert sorted(_read_pieces(there, segments).to_pylist(), key=str) == sorted(expected.to_pylist(), key=str)
    assert {'user 3, "the" 3\nsecond line', "u1", "bob"} <= {r["user_id"] for r in expected.to_pylist()}


def test_a_task_tells_whether_it_sees_the_files_of_a_read(tmp_path: Path, monkeypatch, spark) -> None:
    """What a program attached to Spark Connect asks before its executors read: one
    task looks for each file at its listed length (the pieces name absolute paths,
    since a task's working folder is not the program's)."""
    from sparkway.engine.executor_reads import executors_see

    monkeypatch.setattr("sparkway.connectors.files.EXECUTOR_READ_BYTES", 0)
    monkeypatch.setattr("sparkway.connectors.files.PIECE_BYTES", 16)
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "in" / "a.csv", "user_id,access_time\n" + "".join(f"u{i},{i}\n" for i in range(20)))
    src = source(Path("in"), storage=BlobStorage(str(tmp_path / "state")))
    read = src.read_on_executors(src.discover())
    assert all(os.path.isabs(piece["path"]) for piece in read.pieces)
    assert executors_see(spark, read, "logs")
    write(tmp_path / "in" / "a.csv", "user_id,access_time\n")  # shorter than listed
    assert not executors_see(spark, read, "logs")
    (tmp_path / "in" / "a.csv").unlink()
    assert not executors_see(spark, read, "logs")


def test_pieces_keep_their_rows_so_that_a_changed_file_is_retracted(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("sparkway.connectors.files.EXECUTOR_READ_BYTES", 0)
    monkeypatch.setattr("sparkway.connectors.files.PIECE_BYTES", 16)
    log = tmp_path / "in" / "a.csv"
    write(log, "user_id,access_time\n" + "".join(f"u{i},{i}\n" for i in range(12)))
    src = source(tmp_path / "in", storage=BlobStorage(str(tmp_path / "state")))
    segments = src.discover()
    first = _read_pieces(src, segments)
    src.advance(segments)
    # the file rewritten: every row the pieces read goes, read back from what they kept
    write(log, "user_id,access_time\nnew,1\n")
    segments = src.discover()
    changes = _read_pieces(src, segments)
    retracted = sorted((r["_id"], r["user_id"]) for r in changes.to_pylist() if r["_diff"] == -1)
    assert retracted == sorted((r["_id"], r["user_id"]) for r in first.to_pylist())
    assert [r["user_id"] for r in changes.to_pylist() if r["_diff"] == 1] == ["new"]
