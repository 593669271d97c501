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
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
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
