"""Nanoseconds in date-times and durations, kept as Pathway keeps them: in input, in
arithmetic and comparisons, in ``.dt`` methods, in every output, and at the limits of
64 bits of nanoseconds.  Expected values are derived by hand, or (where said) were
recorded from Pathway 0.33.0 running the same program."""

from __future__ import annotations

import datetime as dt
import json
import logging
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from tables import assert_rows, rows

import sparkway as pw

pytestmark = pytest.mark.usefixtures("spark")

FORMAT = "%Y-%m-%dT%H:%M:%S.%f"


class Times(pw.Schema):
    a: pw.DateTimeNaive
    u: pw.DateTimeUtc
    d: pw.Duration


# the same values as CSV and as JSON lines: nine fraction digits, a tenth one (cut), an
# offset other than UTC's, and durations as nanoseconds
CSV_INPUT = (
    "a,u,d\n"
    "2023-01-01T00:00:00.123456789,2023-01-01T00:00:00.123456789+01:00,5\n"
    "1969-12-31T23:59:59.999999999,1969-12-31T23:59:59.999999999-00:30,-7\n"
    "2023-01-01T00:00:00.0000000019,2023-01-01T00:00:00.1+00:00,1000000000001\n"
)
JSON_INPUT = "".join(
    json.dumps({"a": a, "u": u, "d": int(d)}) + "\n"
    for a, u, d in (line.split(",") for line in CSV_INPUT.splitlines()[1:])
)
# what they hold (recorded from Pathway 0.33.0 reading them)
STORED = [
    (pd.Timestamp("2023-01-01T00:00:00.123456789"), pd.Timestamp("2022-12-31T23:00:00.123456789+00:00"), pd.Timedelta(5)),
    (pd.Timestamp("1969-12-31T23:59:59.999999999"), pd.Timestamp("1970-01-01T00:29:59.999999999+00:00"), pd.Timedelta(-7)),
    (pd.Timestamp("2023-01-01T00:00:00.000000001"), pd.Timestamp("2023-01-01T00:00:00.1+00:00"), pd.Timedelta(1_000_000_000_001)),
]


def _read(tmp_path: Path, kind: str) -> pw.Table:
    folder = tmp_path / kind
    folder.mkdir()
    if kind == "csv":
        (folder / "in.csv").write_text(CSV_INPUT)
        return pw.io.csv.read(folder, schema=Times, mode="static")
    (folder / "in.jsonl").write_text(JSON_INPUT)
    return pw.io.jsonlines.read(folder, schema=Times, mode="static")


@pytest.mark.parametrize("kind", ["csv", "jsonlines"])
def test_csv_and_json_input_keep_nine_fraction_digits(tmp_path: Path, kind: str) -> None:
    table = _read(tmp_path, kind)
    frame = pw.debug.table_to_pandas(table, include_id=False)
    assert str(frame.dtypes["a"]) == "datetime64[ns]" and str(frame.dtypes["d"]) == "timedelta64[ns]"
    got = sorted(frame.itertuples(index=False, name=None), key=lambda row: row[2])
    assert got == sorted(STORED, key=lambda row: row[2])
    assert all(isinstance(v, (pd.Timestamp, pd.Timedelta)) for row in got for v in row)


def test_values_a_nanosecond_apart_compare_and_subtract_exactly() -> None:
    t = pw.debug.table_from_markdown(
        """
        a                             | b
        2023-03-25T16:43:21.123456789 | 2023-03-25T16:43:21.123456788
        """
    ).select(a=pw.this.a.dt.strptime(FORMAT), b=pw.this.b.dt.strptime(FORMAT))
    result = t.select(
        lt=pw.this.b < pw.this.a, eq=pw.this.a == pw.this.b, ge=pw.this.b >= pw.this.a,
        gap=pw.this.a - pw.this.b, back=pw.this.b + (pw.this.a - pw.this.b) == pw.this.a,
        later=pw.this.a + pd.Timedelta(2), earlier=pw.this.a - dt.timedelta(microseconds=1),
    )
    assert_rows(result, [(True, False, False, pd.Timedelta(1), True,
                          pd.Timestamp("2023-03-25T16:43:21.123456791"), pd.Timestamp("2023-03-25T16:43:21.123455789"))])


def test_durations_of_a_few_nanoseconds() -> None:
    class Spans(pw.Schema):
        d: pw.Duration
        e: pw.Duration

    t = pw.debug.table_from_rows(Spans, [(pd.Timedelta(7), pd.Timedelta(2)), (pd.Timedelta(-7), pd.Timedelta(3))])
    result = t.select(
        pw.this.d, sum=pw.this.d + pw.this.e, times=pw.this.d * 3, scaled=pw.this.d * 0.5,
        floor=pw.this.d // 2, half=pw.this.d / 2, ratio=pw.this.d / pw.this.e, whole=pw.this.d // pw.this.e,
        rest=pw.this.d % pw.this.e, longer=pw.this.d > pw.this.e, ns=pw.this.d.dt.nanoseconds(),
        us=pw.this.d.dt.microseconds(),
    )
    # by hand: // and % round down (Python's), / and * 0.5 cut toward zero (as pandas);
    # a duration's microseconds are cut toward zero
    assert_rows(result, [
        (pd.Timedelta(7), pd.Timedelta(9), pd.Timedelta(21), pd.Timedelta(3), pd.Timedelta(3), pd.Timedelta(3),
         3.5, 3, pd.Timedelta(1), True, 7, 0),
        (pd.Timedelta(-7), pd.Timedelta(-4), pd.Timedelta(-21), pd.Timedelta(-3), pd.Timedelta(-4), pd.Timedelta(-3),
         -7 / 3, -3, pd.Timedelta(2), False, -7, 0),
    ])


def test_dt_methods_below_the_microsecond(tmp_path: Path) -> None:
    t = _read(tmp_path, "csv")
    result = t.select(
        pw.this.d, s=pw.this.a.to_string(), su=pw.this.u.to_string(), ds=pw.this.d.to_string(),
        n=pw.this.a.dt.nanosecond(), us=pw.this.a.dt.microsecond(), f=pw.this.a.dt.strftime("%S.%f %.f %3f"),
        ts=pw.this.u.dt.timestamp(unit="ns"), fl=pw.this.a.dt.floor(pd.Timedelta(10)),
        ro=pw.this.a.dt.round("100ns"),
    )
    # recorded from Pathway 0.33.0
    assert_rows(result, [
        (pd.Timedelta(5), "2023-01-01T00:00:00.123456789", "2022-12-31T23:00:00.123456789+0000", "5ns", 123456789,
         123456, "00.123456789 .123456789 123", 1.6725276001234568e18,
         pd.Timestamp("2023-01-01T00:00:00.123456780"), pd.Timestamp("2023-01-01T00:00:00.123456800")),
        (pd.Timedelta(-7), "1969-12-31T23:59:59.999999999", "1970-01-01T00:29:59.999999999+0000", "-7ns", 999999999,
         999999, "59.999999999 .999999999 999", 1799999999999.0,
         pd.Timestamp("1969-12-31T23:59:59.999999990"), dt.datetime(1970, 1, 1)),
        (pd.Timedelta(1_000_000_000_001), "2023-01-01T00:00:00.000000001", "2023-01-01T00:00:00.100000000+0000",
         "16m 40s 1ns", 1, 0, "00.000000001 .000000001 000", 1.6725312001e18,
         dt.datetime(2023, 1, 1), dt.datetime(2023, 1, 1)),
    ])


def test_timestamps_from_and_to_numbers_of_nanoseconds() -> None:
    t = pw.debug.table_from_markdown("n | f\n1685969950453404012 | 1685969950.4567")
    result = t.select(
        exact=pw.this.n.dt.from_timestamp(unit="ns"), floats=pw.this.f.dt.utc_from_timestamp(unit="s"),
        back=pw.this.n.dt.from_timestamp(unit="ns").dt.timestamp(unit="ns"),
    )
    # the float case as Pathway 0.33.0 computes it: 1685969950.4567 * 1e9 in floating point, cut
    assert_rows(result, [(pd.Timestamp("2023-06-05T12:59:10.453404012"),
                          pd.Timestamp("2023-06-05T12:59:10.456700160+00:00"), 1.685969950453404e18)])


def test_udfs_and_callbacks_get_pandas_values_with_nanoseconds() -> None:
    @pw.udf
    def later(when: pw.DateTimeUtc, by: pw.Duration) -> pw.DateTimeUtc:
        assert isinstance(when, pd.Timestamp) and isinstance(by, pd.Timedelta)
        return when + by

    @pw.udf
    def described(when: pw.DateTimeNaive) -> str:
        return f"{type(when).__name__} {when.nanosecond}"

    t = pw.debug.table_from_rows(Times, [(pd.Timestamp("2024-01-01T00:00:00.000000005"),
                                          pd.Timestamp("2024-01-01T00:00:00.000000005", tz="UTC"), pd.Timedelta(3))])
    result = t.select(later=later(pw.this.u, pw.this.d), text=described(pw.this.a))
    seen = []
    pw.io.subscribe(result, on_change=lambda key, row, time, is_addition: seen.append(row))
    pw.run()
    assert seen == [{"later": pd.Timestamp("2024-01-01T00:00:00.000000008", tz="UTC"), "text": "Timestamp 5"}]
    assert seen[0]["later"].tzinfo.utcoffset(None) == dt.timedelta(0)


def test_a_user_function_giving_a_value_of_the_wrong_kind_fails() -> None:
    t = pw.debug.table_from_markdown("n\n1")
    naive_for_utc = t.select(x=pw.apply_with_type(lambda n: dt.datetime(2020, 1, 1), pw.DateTimeUtc, pw.this.n))
    with pytest.raises(ValueError, match="without timezone"):
        rows(naive_for_utc)
    number_for_duration = t.select(x=pw.apply_with_type(lambda n: 5, pw.Duration, pw.this.n))
    with pytest.raises(TypeError, match="cannot create an object of type Duration from value 5"):
        rows(number_for_duration)


def test_file_outputs_write_nine_fraction_digits(tmp_path: Path) -> None:
    table = _read(tmp_path, "csv")
    pw.io.csv.write(table, tmp_path / "out.csv")
    pw.io.jsonlines.write(table, tmp_path / "out.jsonl")
    pw.io.sqlite.write(table, tmp_path / "out.db", "t", init_mode="create_if_not_exists")
    pw.run()
    # recorded from Pathway 0.33.0 (the time column left out)
    csv_lines = sorted(line.rsplit(",", 2)[0] for line in (tmp_path / "out.csv").read_text().splitlines()[1:])
    assert csv_lines == [
        '"1969-12-31T23:59:59.999999999","1970-01-01T00:29:59.999999999+0000","-7"',
        '"2023-01-01T00:00:00.000000001","2023-01-01T00:00:00.100000000+0000","1000000000001"',
        '"2023-01-01T00:00:00.123456789","2022-12-31T23:00:00.123456789+0000","5"',
    ]
    objects = sorted(({k: v for k, v in json.loads(line).items() if k != "time"}
                      for line in (tmp_path / "out.jsonl").read_text().splitlines()), key=lambda o: o["d"])
    assert objects == [
        {"a": "1969-12-31T23:59:59.999999999", "u": "1970-01-01T00:29:59.999999999+0000", "d": -7, "diff": 1},
        {"a": "2023-01-01T00:00:00.123456789", "u": "2022-12-31T23:00:00.123456789+0000", "d": 5, "diff": 1},
        {"a": "2023-01-01T00:00:00.000000001", "u": "2023-01-01T00:00:00.100000000+0000", "d": 1000000000001,
         "diff": 1},
    ]
    with sqlite3.connect(tmp_path / "out.db") as db:
        stored = sorted(db.execute("SELECT a, u, d FROM t").fetchall(), key=lambda row: row[2])
    assert stored == [
        ("1969-12-31T23:59:59.999999999", "1970-01-01T00:29:59.999999999+0000", -7),
        ("2023-01-01T00:00:00.123456789", "2022-12-31T23:00:00.123456789+0000", 5),
        ("2023-01-01T00:00:00.000000001", "2023-01-01T00:00:00.100000000+0000", 1000000000001),
    ]


def test_compute_and_print_shows_nanoseconds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pw.debug.compute_and_print(_read(tmp_path, "csv"), include_id=False)
    # recorded from Pathway 0.33.0
    assert capsys.readouterr().out.splitlines() == [
        "a                             | u                                   | d",
        "1969-12-31 23:59:59.999999999 | 1970-01-01 00:29:59.999999999+00:00 | -1 days +23:59:59.999999993",
        "2023-01-01 00:00:00.000000001 | 2023-01-01 00:00:00.100000+00:00    | 0 days 00:16:40.000000001",
        "2023-01-01 00:00:00.123456789 | 2022-12-31 23:00:00.123456789+00:00 | 0 days 00:00:00.000000005",
    ]


def test_date_times_beyond_the_range_of_64_bits_of_nanoseconds(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "in.csv").write_text(
        "a,u,d\n3000-01-01T00:00:00,2000-01-01T00:00:00+00:00,1\n2000-01-01T00:00:00,2000-01-01T00:00:00+00:00,2\n"
    )
    with caplog.at_level(logging.WARNING, logger="sparkway"):
        read = pw.io.csv.read(tmp_path, schema=Times, mode="static")
        assert [row[2] for row in rows(read)] == [pd.Timedelta(2)]  # as in Pathway, the row is left out
    assert "out of the range of date-times" in caplog.text
    with pytest.raises(OverflowError, match="1677-09-21 to 2262-04-11"):
        pw.debug.table_from_rows(Times, [(dt.datetime(3000, 1, 1), pd.Timestamp(0, tz="UTC"), pd.Timedelta(0))])
    # arithmetic wraps around 64 bits, as Pathway's (recorded from Pathway 0.33.0)
    t = pw.debug.table_from_rows(Times, [(dt.datetime(2262, 4, 11), pd.Timestamp(0, tz="UTC"), dt.timedelta(days=1))])
    assert_rows(t.select(s=pw.this.a + pw.this.d), [(pd.Timestamp("1677-09-21T00:25:26.290448384"),)])
