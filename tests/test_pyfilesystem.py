"""pw.io.pyfilesystem: files of a PyFilesystem object (memory and OS folders here)."""

from __future__ import annotations

from pathlib import Path

import pytest

import sparkway as pw
from sparkway.connectors.files import FileSource
from sparkway.connectors.pyfilesystem import PyFilesystemFiles
from sparkway.errors import PlanError

fs = pytest.importorskip("fs")  # a test dependency: present whenever the suite runs


def memory_folder():
    folder = fs.open_fs("mem://")
    folder.makedirs("logs/old")
    folder.writebytes("logs/a.txt", b"alpha")
    folder.writebytes("logs/old/b.txt", b"beta")
    folder.writebytes("top.txt", b"top")
    return folder


def test_static_read_gives_a_row_per_file_under_path() -> None:
    table = pw.io.pyfilesystem.read(memory_folder(), path="logs", mode="static")
    _, columns = pw.debug.table_to_dicts(table)
    assert list(columns) == ["data"]
    assert sorted(columns["data"].values()) == [b"alpha", b"beta"]


def test_metadata_names_each_file_from_the_filesystem_root(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.bin").write_bytes(b"12345")
    table = pw.io.pyfilesystem.read(fs.open_fs(str(tmp_path)), mode="static", with_metadata=True)
    _, columns = pw.debug.table_to_dicts(table)
    assert list(columns) == ["_metadata", "data"]
    (meta,) = [m.value for m in columns["_metadata"].values()]
    assert (meta["path"], meta["name"], meta["size"]) == ("sub/x.bin", "x.bin", 5)
    assert meta["modified_at"] == int((tmp_path / "sub" / "x.bin").stat().st_mtime)
    assert meta["owner"]  # an OS folder knows the file's owner


def test_only_metadata_format_has_the_metadata_column_alone() -> None:
    table = pw.io.pyfilesystem.read(memory_folder(), mode="static", format="only_metadata")
    _, columns = pw.debug.table_to_dicts(table)
    assert list(columns) == ["_metadata"]
    paths = sorted(m.value["path"] for m in columns["_metadata"].values())
    assert paths == ["logs/a.txt", "logs/old/b.txt", "top.txt"]
    assert all(m.value["owner"] is None for m in columns["_metadata"].values())  # memory: no owner


def test_unknown_format_is_refused() -> None:
    with pytest.raises(PlanError, match="only_metadata"):
        pw.io.pyfilesystem.read(memory_folder(), format="csv")


def test_streaming_sees_new_changed_and_deleted_files_after_the_refresh_interval() -> None:
    folder = memory_folder()
    files = PyFilesystemFiles(folder, "logs", refresh_interval=0)
    src = FileSource(files.root, format="binary", columns={}, files=files)
    first = src.read(segments := src.discover())
    src.advance(segments)
    assert sorted(r["data"] for r in first.to_pylist()) == [b"alpha", b"beta"]
    folder.writebytes("logs/a.txt", b"alpha, again")
    folder.remove("logs/old/b.txt")
    folder.writebytes("logs/c.txt", b"gamma")
    second = src.read(segments := src.discover())
    src.advance(segments)
    changes = sorted((r["data"], r["_diff"]) for r in second.to_pylist())
    assert changes == [(b"alpha", -1), (b"alpha, again", 1), (b"beta", -1), (b"gamma", 1)]
    assert src.discover() == []


def test_listing_waits_for_the_refresh_interval() -> None:
    folder = memory_folder()
    files = PyFilesystemFiles(folder, "logs", refresh_interval=3600)
    assert sorted(files.list()) == ["a.txt", "old/b.txt"]
    folder.writebytes("logs/c.txt", b"gamma")
    assert sorted(files.list()) == ["a.txt", "old/b.txt"]  # not listed again yet
