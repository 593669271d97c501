"""The streaming groupby-count of the latency benchmark (``bench/latency.py``), for
sparkway or for Pathway 0.33: the same program, imported as ``pw`` from either.

    python bench/streaming_count.py --engine sparkway|pathway --input DIR --out out.csv

Reads the CSV files of ``--input`` as they appear (``mode="streaming"``), counts the
rows per ``user_id`` and writes every change of the counts to ``--out`` with
``pw.io.csv.write``, until it is stopped (SIGTERM).  No persistence: the state lives as
long as the process.
"""

from __future__ import annotations

import argparse
import importlib


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", choices=("sparkway", "pathway"), required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    pw = importlib.import_module(args.engine)

    class Logs(pw.Schema):
        user_id: str
        access_time: int

    logs = pw.io.csv.read(args.input, schema=Logs, mode="streaming")
    counts = logs.groupby(pw.this.user_id).reduce(pw.this.user_id, count=pw.reducers.count())
    pw.io.csv.write(counts, args.out)
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)


if __name__ == "__main__":
    main()
