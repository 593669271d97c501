"""W3, an output-heavy stateless workload, as a sparkway program (``bench/w3_plain.py`` is
the same job in plain PySpark).

    python bench/w3_job.py --logs DIR --out out.csv [--probe probe.jsonl]

Reads the web-server access logs of ``--logs`` (``bench/gen.py: web_logs``) with
``pw.io.csv.read(mode="static")``, keeps the requests answered with a status under 400
(about half), adds three computed columns and writes the rows to one CSV file with
``pw.io.csv.write`` (Pathway's API writes one file: the columns, then ``time`` and
``diff``):

- ``page``: the path in lower case (a string operation);
- ``kb``: the response's size in kB, ``bytes / 1024`` (arithmetic, a float);
- ``hour``: the hour of the request, UTC (a date-time).

No persistence: a stateless batch job, as a user would run it.  ``--probe`` records the
same phases as ``bench/sparkway_job.py`` (imports, Spark's start, the step's read, compute
and write), and at the end the driver process's own peak RSS, without its JVM child.
"""

from __future__ import annotations

import argparse
import sys
import time

STARTED = time.time()

import sparkway as pw  # noqa: E402
from machine import own_peak_rss  # noqa: E402
from sparkway_job import Probe, install_probes  # noqa: E402


class AccessLog(pw.Schema):
    ip: str
    user_id: str
    access_time: int
    method: str
    path: str
    status: int
    bytes: int
    user_agent: str


def transform(logs: pw.Table) -> pw.Table:
    """W3's rows: the requests under status 400, with three computed columns."""
    return logs.filter(pw.this.status < 400).with_columns(
        page=pw.this.path.str.lower(),
        kb=pw.this.bytes / 1024,
        hour=pw.this.access_time.dt.utc_from_timestamp(unit="s").dt.hour(),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--logs", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--probe")
    args = parser.parse_args()
    probe = Probe(args.probe)
    probe.emit("start", seconds=time.time() - STARTED)
    install_probes(probe)
    logs = pw.io.csv.read(args.logs, schema=AccessLog, mode="static")
    pw.io.csv.write(transform(logs), args.out)
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)
    probe.emit("end", seconds=time.time() - STARTED, driver_peak_rss_bytes=own_peak_rss())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
