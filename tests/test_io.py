"""The ``pw.io`` connectors through ``pw.run``: formats in, updates with time and diff out."""

from __future__ import annotations

import csv
import datetime as dt
import json
from pathlib import Path

import pandas as pd
import pytest

import sparkway as pw
from sparkway.errors import PlanError

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
    # the line without "note" is skipped: absent is not null, as in Pathway 0.33 (recorded)
    assert sorted((r["item"], float(r["total"]), r["diff"]) for r in rows) == [("cake", 4.0, "1"), ("tea", 2.5, "1")]


def test_json_lines_and_csv_write_every_type_as_pathway_does(tmp_path: Path) -> None:
    # both files recorded with Pathway 0.33.0 (same program)
    class Row(pw.Schema):
        i: int
        f: float
        s: str
        o: int | None
        j: pw.Json
        t: tuple[int, str]
        dn: pw.DateTimeNaive
        du: pw.DateTimeUtc
        d: pw.Duration

    rows = [
        (1, 2.5, 'he said "hi", ok', None, pw.Json({"a": [1, 2], "b": "ż"}), (1, "x"),
         dt.datetime(2024, 1, 2, 3, 4, 5, 123456), dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc),
         dt.timedelta(seconds=90)),
        (-2, 1e20, "", 7, pw.Json(None), (2, "y,z"), dt.datetime(2024, 1, 2), dt.datetime(2024, 1, 2, tzinfo=dt.timezone.utc),
         dt.timedelta(0)),
    ]
    table = pw.debug.table_from_rows(Row, rows)
    pw.io.jsonlines.write(table, tmp_path / "out.jsonl")
    pw.io.csv.write(table, tmp_path / "out.csv")
    pw.run()
    assert sorted((tmp_path / "out.jsonl").read_text().splitlines()) == [
        '{"i":-2,"f":1e+20,"s":"","o":7,"j":null,"t":[2,"y,z"],"dn":"2024-01-02T00:00:00.000000000",'
        '"du":"2024-01-02T00:00:00.000000000+0000","d":0,"diff":1,"time":0}',
        '{"i":1,"f":2.5,"s":"he said \\"hi\\", ok","o":null,"j":{"a":[1,2],"b":"ż"},"t":[1,"x"],'
        '"dn":"2024-01-02T03:04:05.123456000","du":"2024-01-02T03:04:05.000000000+0000","d":90000000000,'
        '"diff":1,"time":0}',
    ]
    header, *lines = (tmp_path / "out.csv").read_text().splitlines()
    assert header == '"i","f","s","o","j","t","dn","du","d","time","diff"'
    assert sorted(lines) == [
        '"-2","1e20","","7","null","[2,""y,z""]","2024-01-02T00:00:00.000000000",'
        '"2024-01-02T00:00:00.000000000+0000","0","0","1"',
        '"1","2.5","he said ""hi"", ok","None","{""a"":[1,2],""b"":""ż""}","[1,""x""]",'
        '"2024-01-02T03:04:05.123456000","2024-01-02T03:04:05.000000000+0000","90000000000","0","1"',
    ]


def test_durations_read_as_nanoseconds_as_they_are_written(tmp_path: Path) -> None:
    # Pathway 0.33.0 reads 90000000000 in a Duration column as 90 seconds, in CSV and JSON
    class Span(pw.Schema):
        d: pw.Duration
        k: int

    (tmp_path / "in.csv").write_text("d,k\n90000000000,1\n")
    (tmp_path / "in.jsonl").write_text('{"d":1500,"k":2}\n')
    spans = pw.io.csv.read(tmp_path / "in.csv", schema=Span, mode="static").concat_reindex(
        pw.io.jsonlines.read(tmp_path / "in.jsonl", schema=Span, mode="static")
    )
    assert sorted(pw.debug.table_to_pandas(spans)["d"]) == [pd.Timedelta(1500), dt.timedelta(seconds=90)]


def test_columns_named_time_and_diff_are_written_before_the_change_s_own(tmp_path: Path) -> None:
    # as Pathway 0.33 writes them (recorded): the columns, then the change's time and diff,
    # so the names appear twice
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("time,value\n5,a\n")

    class Events(pw.Schema):
        time: int
        value: str

    t = pw.io.csv.read(tmp_path / "in", schema=Events, mode="static")
    result = t.select(pw.this.time, pw.this.value, diff=pw.this.time * 2)
    pw.io.csv.write(result, tmp_path / "out.csv")
    pw.io.jsonlines.write(result, tmp_path / "out.jsonl")
    seen = []
    pw.io.subscribe(result, lambda key, row, time, is_addition: seen.append((row, is_addition)))
    pw.run()
    header, row = list(csv.reader((tmp_path / "out.csv").read_text().splitlines()))
    assert header == ["time", "value", "diff", "time", "diff"]
    assert row[:3] == ["5", "a", "10"] and row[4] == "1"
    line = (tmp_path / "out.jsonl").read_text().strip()
    assert line.startswith('{"time":5,"value":"a","diff":10,"diff":1,"time":')
    assert seen == [({"time": 5, "value": "a", "diff": 10}, True)]
    assert pw.debug.table_to_pandas(result).to_dict("records") == [{"time": 5, "value": "a", "diff": 10}]


def test_rows_skipped_on_either_step_path_are_counted_when_the_run_ends(tmp_path: Path, step_path: str, caplog) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("word,n\nx,1\ny,two\nz,3\nw,four\n")

    class Words(pw.Schema):
        word: str
        n: int

    words = pw.io.csv.read(tmp_path / "in", schema=Words, mode="static")
    pw.io.csv.write(words, tmp_path / "out.csv")
    with caplog.at_level("WARNING", logger="sparkway"):
        pw.run()
    assert "2 row(s) skipped in this run, which did not parse: " + f"{tmp_path / 'in' / 'a.csv'} (2)" in caplog.text


def test_misspelt_options_are_refused_and_pathways_unused_ones_accepted(tmp_path: Path) -> None:
    class S(pw.Schema):
        a: int

    with pytest.raises(TypeError, match="pw.io.csv.read\\(\\) got unexpected keyword arguments: 'mdoe'"):
        pw.io.csv.read(tmp_path, schema=S, mdoe="static")
    table = pw.io.csv.read(tmp_path, schema=S, mode="static", autocommit_duration_ms=10, max_backlog_size=5)
    with pytest.raises(TypeError, match="'nmae'"):
        pw.io.jsonlines.write(table, tmp_path / "out.jsonl", nmae="out")
    with pytest.raises(TypeError, match="unexpected keyword argument 'sortby'"):
        pw.io.subscribe(table, on_change=print, sortby=[table.a])
    with pytest.raises(PlanError, match="json_field_paths"):
        pw.io.jsonlines.read(tmp_path, schema=S, json_field_paths={"a": "/x/a"})


def test_file_writers_order_the_changes_of_a_time_by_sort_by(tmp_path: Path) -> None:
    t = pw.debug.table_from_markdown("name  | n\nzoe   | 1\namy   | 3\nbob   | 2\n")
    pw.io.csv.write(t, tmp_path / "by_name.csv", sort_by=[t.name])
    pw.io.csv.write(t, tmp_path / "by_n.csv", sort_by=[pw.this.n])
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)
    names = [r["name"] for r in csv.DictReader(open(tmp_path / "by_name.csv"))]
    counts = [r["n"] for r in csv.DictReader(open(tmp_path / "by_n.csv"))]
    assert (names, counts) == (["amy", "bob", "zoe"], ["1", "2", "3"])


def test_sort_by_must_name_columns_of_the_table_written(tmp_path: Path) -> None:
    t = pw.debug.table_from_markdown("name  | n\nzoe   | 1")
    with pytest.raises(KeyError, match="sort_by: no column 'age'.*its columns: name, n"):
        pw.io.csv.write(t, tmp_path / "out.csv", sort_by=["age"])
