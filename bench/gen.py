"""Deterministic access logs for the sessions benchmark (numpy + pyarrow.csv, seconds).

A history of ``rows`` log lines of ``users`` users over ``days`` days, one CSV file per
day (``day_00.csv`` ...), with the columns of seeds 002/003: ``user_id,access_time``.
Visits come in bursts, so that sessions look like real ones: each day's ``rows / days``
lines are made of ``rows / days / 5`` bursts; each burst belongs to a random user and
starts at a random time of the day, and each row falls in a random burst of its day, up
to 15 minutes after its start (so a burst is sometimes split into two sessions by a gap
over 300 s). With 50 rows per user that gives about 10 bursts per user over 30 days.
One day is generated at a time, so that 100M rows need no more memory than 3.3M.

``new_rows`` writes a file of new log lines for *existing* users (distinct users while
there are enough of them), at random times in the last day of the history and the hour
after it: some extend or merge existing sessions, some start new ones.

``hot_key`` writes a file of log lines of one user of its own (``HOT_USER``), spread
over the history's days (the groupby-count benchmark's hot key).

``web_logs`` writes the web-server access logs of workload W3 (an output-heavy,
stateless program): ``ip,user_id,access_time,method,path,status,bytes,user_agent``,
about 100 bytes a line, half of them with a status under 400.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

T0 = 1_701_043_200  # 2023-11-27 00:00:00 UTC, the week of the tutorial's logs
DAY = 86_400
ROWS_PER_SESSION = 5
BURST_SECONDS = 900
HOT_USER = "user_hot"


def user_names(count: int) -> pa.Array:
    width = max(6, len(str(count - 1)))
    return pa.array([f"user{i:0{width}d}" for i in range(count)], pa.string())


def _write(path: str, users: np.ndarray, times: np.ndarray, names: pa.Array) -> None:
    """One CSV file, its rows in time order, like an access log."""
    order = np.argsort(times, kind="stable")
    table = pa.table({
        "user_id": names.take(pa.array(users[order])),
        "access_time": pa.array(times[order], pa.int64()),
    })
    # written next to its folder, then moved in: a polling reader never sees half a file
    tmp = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(path))), "." + os.path.basename(path) + ".tmp")
    pacsv.write_csv(table, tmp, pacsv.WriteOptions(quoting_style="none", include_header=True))
    os.replace(tmp, path)


def history(folder: str, rows: int, users: int, days: int = 30, seed: int = 0) -> dict:
    """Writes ``folder/day_XX.csv``; returns a summary (rows per file, users seen)."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    names = user_names(users)
    seen = np.zeros(users, dtype=bool)
    per_file = np.diff(np.linspace(0, rows, days + 1).astype(np.int64))
    for d, day_rows in enumerate(per_file):
        bursts = max(1, int(day_rows) // ROWS_PER_SESSION)
        burst_user = rng.integers(0, users, size=bursts)
        burst_start = T0 + d * DAY + rng.integers(0, DAY - BURST_SECONDS, size=bursts)
        which = rng.integers(0, bursts, size=int(day_rows))
        row_users = burst_user[which]
        seen[row_users] = True
        _write(os.path.join(folder, f"day_{d:02d}.csv"), row_users,
               burst_start[which] + rng.integers(0, BURST_SECONDS, size=int(day_rows)), names)
    present = np.flatnonzero(seen)
    np.save(users_file(folder), present)
    return {"rows": rows, "users": users, "users_with_rows": int(len(present)), "days": days,
            "files": days, "rows_per_file": per_file.tolist()}


def new_rows(path: str, count: int, present_users: np.ndarray, users: int, days: int = 30, seed: int = 1) -> int:
    """Writes ``count`` new log lines of existing users to ``path`` (atomically)."""
    rng = np.random.default_rng(seed)
    distinct = min(count, len(present_users))
    chosen = rng.choice(present_users, size=distinct, replace=False)
    if count > distinct:
        chosen = np.concatenate([chosen, rng.choice(present_users, size=count - distinct)])
    end = T0 + days * DAY
    times = rng.integers(end - DAY, end + 3600, size=count)
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    _write(path, chosen, times, user_names(users))
    return count


def hot_key(path: str, rows: int, days: int = 30, seed: int = 2) -> int:
    """Writes ``rows`` log lines of the one user ``HOT_USER`` (no other file has it) at random
    times over the history's ``days`` days to ``path`` (atomically)."""
    rng = np.random.default_rng(seed)
    _write(path, np.zeros(rows, dtype=np.int64), T0 + rng.integers(0, days * DAY, size=rows), pa.array([HOT_USER]))
    return rows


# ------------------------------------------------------------ W3: web-server access logs

WEB_COLUMNS = ("ip", "user_id", "access_time", "method", "path", "status", "bytes", "user_agent")
#: the column ``access_time`` rather than ``time``: a CSV sink appends its own ``time``
WEB_METHODS = (("GET", 0.75), ("POST", 0.15), ("PUT", 0.05), ("DELETE", 0.05))
#: statuses under 400 make exactly half of the weight: W3's filter keeps about half the rows
WEB_STATUSES = ((200, 0.40), (301, 0.05), (304, 0.05), (403, 0.10), (404, 0.30), (500, 0.10))
#: mixed case, so that lowering the path changes it; an id of up to 5 digits follows
WEB_PATHS = ("/api/Items/", "/api/Users/", "/static/Img/", "/Search?q=", "/blog/Posts/", "/Cart/")
WEB_AGENTS = (
    "curl/8.4.0",
    "python-requests/2.31.0",
    "Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X)",
    "Googlebot/2.1 (+http://www.google.com/bot.html)",
)
WEB_FILES = 10
WEB_DAYS = 10


def _pick(rng: np.random.Generator, choices: tuple[tuple[object, float], ...], size: int) -> np.ndarray:
    """Indices into ``choices`` (value, weight pairs), drawn by weight."""
    weights = np.array([w for _, w in choices])
    return rng.choice(len(choices), size=size, p=weights / weights.sum())


def _joined(*parts: pa.Array | str, separator: str = "") -> pa.Array:
    """The strings of ``parts`` (arrays, or one text for every row) joined row by row,
    in Arrow's kernels: Python strings for 10M rows would take minutes."""
    return pc.binary_join_element_wise(*parts, separator)


def _web_table(rng: np.random.Generator, rows: int, start: int, seconds: int, users: pa.Array) -> tuple[pa.Table, int]:
    """``rows`` access-log lines in time order over ``[start, start + seconds)``; returns
    them and how many have a status under 400."""
    octets = [pc.cast(pa.array(rng.integers(1, 255, size=rows)), pa.string()) for _ in range(4)]
    statuses = np.array([s for s, _ in WEB_STATUSES])[_pick(rng, WEB_STATUSES, rows)]
    table = pa.table({
        "ip": _joined(*octets, separator="."),
        "user_id": users.take(pa.array(rng.integers(0, len(users), size=rows))),
        "access_time": pa.array(np.sort(start + rng.integers(0, seconds, size=rows)), pa.int64()),
        "method": pa.array([m for m, _ in WEB_METHODS]).take(pa.array(_pick(rng, WEB_METHODS, rows))),
        "path": _joined(pa.array(WEB_PATHS).take(pa.array(rng.integers(0, len(WEB_PATHS), size=rows))),
                        pc.cast(pa.array(rng.integers(0, 100_000, size=rows)), pa.string())),
        "status": pa.array(statuses, pa.int64()),
        "bytes": pa.array(rng.integers(100, 50_000, size=rows), pa.int64()),
        "user_agent": pa.array(WEB_AGENTS).take(pa.array(rng.integers(0, len(WEB_AGENTS), size=rows))),
    })
    return table, int((statuses < 400).sum())


def web_logs(folder: str, rows: int, files: int = WEB_FILES, seed: int = 0) -> dict:
    """Writes ``rows`` access-log lines of W3 as ``folder/access_XX.csv`` (``files`` files,
    consecutive stretches of ``WEB_DAYS`` days, one file in memory at a time); returns a
    summary with ``kept``, the rows whose status is under 400 (what W3's filter keeps)."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    users = user_names(max(1, rows // 50))
    per_file = np.diff(np.linspace(0, rows, files + 1).astype(np.int64))
    span = WEB_DAYS * DAY // files
    kept = 0
    for i, file_rows in enumerate(per_file):
        table, file_kept = _web_table(rng, int(file_rows), T0 + i * span, span, users)
        kept += file_kept
        pacsv.write_csv(table, os.path.join(folder, f"access_{i:02d}.csv"), pacsv.WriteOptions(quoting_style="none"))
    return {"rows": rows, "files": files, "kept": kept, "rows_per_file": per_file.tolist()}


def users_file(folder: str) -> str:
    """The users that have rows in a history, saved next to its folder."""
    return os.path.join(os.path.dirname(os.path.abspath(folder)), "users.npy")


def present_users(folder: str) -> np.ndarray:
    return np.load(users_file(folder))


if __name__ == "__main__":
    import argparse
    import time

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    summary = history(args.folder, args.rows, args.users, seed=args.seed)
    print(f"{summary['rows']} rows, {summary['users_with_rows']} users in {time.perf_counter() - started:.2f} s")
