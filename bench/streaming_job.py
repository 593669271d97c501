"""The streaming pipelines of the latency benchmark (``bench/latency.py``), for sparkway
or for Pathway 0.33: the same program, imported as ``pw`` from either.

    python bench/streaming_job.py --engine sparkway|pathway --pipeline count|sessions --input DIR --out out.csv

Reads the CSV files of ``--input`` as they appear (``mode="streaming"``) and writes
every change of its result to ``--out`` with ``pw.io.csv.write``, until it is stopped
(SIGTERM).  ``count``: the rows per ``user_id``; ``sessions``: the sessions of seeds
002/003, a user's visits less than 300 s apart (``windowby(session(max_gap=300))``).
No persistence: the state lives as long as the process.
"""

from __future__ import annotations

import argparse
import importlib


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", choices=("sparkway", "pathway"), required=True)
    parser.add_argument("--pipeline", choices=("count", "sessions"), default="count")
    parser.add_argument("--input", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    pw = importlib.import_module(args.engine)

    class Logs(pw.Schema):
        user_id: str
        access_time: int

    logs = pw.io.csv.read(args.input, schema=Logs, mode="streaming")
    if args.pipeline == "count":
        result = logs.groupby(pw.this.user_id).reduce(pw.this.user_id, count=pw.reducers.count())
    else:
        result = logs.windowby(
            pw.this.access_time, window=pw.temporal.session(max_gap=300), instance=pw.this.user_id,
        ).reduce(
            user_id=pw.this._pw_instance,
            session_start=pw.reducers.min(pw.this.access_time),
            session_finish=pw.reducers.max(pw.this.access_time),
            count=pw.reducers.count(),
        )
    pw.io.csv.write(result, args.out)
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)


if __name__ == "__main__":
    main()
