"""The ``pw.io`` connectors through ``pw.run``: formats in, updates with time and diff out."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import sparkway as pw

pytestmark = pytest.mark.usefixtures("spark")


def _json_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_plaintext_lines_and_files(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("first line\nsecond line\n")
    (tmp_path / "in" / "b.txt").write_text("other\n")
    lines = pw.io.plaintext.read(tmp_path / "in", mode="static")
    files = pw.io.fs.read(tmp_path / "in", format="plaintext_by_file", mode="static")
    pw.io.jsonlines.write(lines, tmp_path / "lines.jsonl")
    pw.io.jsonlines.write(files, tmp_path / "files.jsonl")
    pw.run()
    assert sorted(r["data"] for r in _json_lines(tmp_path / "lines.jsonl")) == ["first line", "other", "second line"]
    assert sorted(r["data"] for r in _json_lines(tmp_path / "files.jsonl")) == ["first line\nsecond line\n", "other\n"]


def test_binary_files_and_metadata(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "blob.bin").write_bytes(b"\x00\x01\xff")
    blobs = pw.io.fs.read(tmp_path / "in", format="binary", mode="static", with_metadata=True)
    sizes = blobs.select(n=pw.apply(len, pw.this.data), path=pw.this._metadata["path"].as_str())
    pw.io.jsonlines.write(sizes, tmp_path / "out.jsonl")
    pw.run()
    (row,) = _json_lines(tmp_path / "out.jsonl")
    assert row["n"] == 3 and row["path"].endswith("blob.bin") and row["diff"] == 1


def test_json_lines_in_csv_out_through_fs(tmp_path: Path) -> None:
    class Sale(pw.Schema):
        item: str
        price: float
        note: str | None

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "s.jsonl").write_text(
        '{"item": "tea", "price": 2.5, "note": "hot"}\n{"item": "tea", "price": 1}\n{"item": "cake", "price": 4.0, "note": null}\n'
    )
    sales = pw.io.fs.read(tmp_path / "in", format="json", schema=Sale, mode="static")
    totals = sales.groupby(sales.item).reduce(sales.item, total=pw.reducers.sum(sales.price))
    pw.io.fs.write(totals, tmp_path / "totals.csv", format="csv")
    pw.io.null.write(sales)
    pw.run()
    with open(tmp_path / "totals.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [list(r) for r in rows[:1]] == [["item", "total", "time", "diff"]]
    assert sorted((r["item"], float(r["total"]), r["diff"]) for r in rows) == [("cake", 4.0, "1"), ("tea", 3.5, "1")]
