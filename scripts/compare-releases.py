"""Runs the sessions tutorial and the persistent word count, four runs each, on every
Spark release given, and checks that their output files are the same byte for byte on
each, the time values apart (a time is the wall clock of its run: each becomes its rank).

    .venv/bin/python scripts/compare-releases.py 3.5 4.0     # and the project's own .venv
Each release but the project's runs in the environment scripts/release-venv.sh makes.
Exits non-zero when an output differs or a run fails.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SESSIONS_LOGS = [  # the tutorial's log files (examples/sessions/demo.sh), added before each run
    {"part_one.csv": "user_id,access_time\nalice,1701102730\nbob,1701102743\nalice,1701103035\n"
                     "bob,1701102774\nbob,1701102805\nalice,1701103037\n",
     "part_two.csv": "user_id,access_time\nalice,1701103040\nalice,1701103331\nalice,1701103618\n"},
    {"part_three.csv": "user_id,access_time\nbob,1701104640\nbob,1701104931\nbob,1701105218\n"},
    {"part_four.csv": "user_id,access_time\nalice,1701103338\nalice,1701103629\nalice,1701103916\n"},
    {},
]
WORDS = [{"a.csv": "word\nx\ny\nx\n"}, {"b.csv": "word\ny\nz\n"}, {"a.csv": "word\nz\n"}, {}]


def python_of(release: str) -> str:
    if release == "project":
        return str(ROOT / ".venv" / "bin" / "python")
    venv = subprocess.run(["bash", str(ROOT / "scripts" / "release-venv.sh"), release], check=True,
                          capture_output=True, text=True).stdout.strip()
    return f"{venv}/bin/python"


def ranked(text: str, time_field: str) -> str:
    """The file with each time value replaced by its rank among the file's times."""
    if time_field == "csv":
        rows = list(csv.reader(io.StringIO(text)))
        if not rows:
            return ""
        column = rows[0].index("time")
        ranks = {t: str(i) for i, t in enumerate(sorted({r[column] for r in rows[1:]}, key=int))}
        for row in rows[1:]:
            row[column] = ranks[row[column]]
        out = io.StringIO()
        csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
        return out.getvalue()
    records = [json.loads(line) for line in text.splitlines()]
    ranks = {t: i for i, t in enumerate(sorted({r["time"] for r in records}))}
    return "".join(json.dumps({**r, "time": ranks[r["time"]]}) + "\n" for r in records)


def run_program(python: str, program: Path, work: Path, steps: list[dict[str, str]], inputs: str,
                output: str, kind: str) -> list[str]:
    env = {**os.environ, "PYSPARK_PYTHON": python, "PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": "127.0.0.1"}
    shutil.copy(program, work / program.name)
    outputs = []
    for files in steps:
        for name, text in files.items():
            (work / inputs).mkdir(exist_ok=True)
            (work / inputs / name).write_text(text)
        done = subprocess.run([python, program.name], cwd=work, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{program.name} failed with {python}:\n{done.stderr[-3000:]}")
        outputs.append(ranked((work / output).read_text(), kind))
    return outputs


def outputs_of(python: str) -> dict[str, list[str]]:
    with tempfile.TemporaryDirectory() as sessions, tempfile.TemporaryDirectory() as words:
        return {
            "sessions": run_program(python, ROOT / "examples" / "sessions" / "script.py", Path(sessions),
                                    SESSIONS_LOGS, "logs", "sessions.csv", "csv"),
            "wordcount": run_program(python, ROOT / "examples" / "wordcount" / "wordcount.py", Path(words),
                                     WORDS, "inputs", "result.jsonlines", "jsonlines"),
        }


def main(releases: list[str]) -> int:
    results = {}
    for release in [*releases, "project"]:
        python = python_of(release)
        version = subprocess.run([python, "-c", "import pyspark; print(pyspark.__version__)"], check=True,
                                 capture_output=True, text=True).stdout.strip()
        results[version] = outputs_of(python)
        print(f"pyspark {version}: ran the sessions tutorial and the word count, four runs each", flush=True)
    (first, reference), *others = results.items()
    differ = 0
    for version, outputs in others:
        for program, runs in outputs.items():
            for run, (text, expected) in enumerate(zip(runs, reference[program]), 1):
                if text != expected:
                    differ += 1
                    print(f"DIFFERS: {program} run {run} on pyspark {version} from pyspark {first}:\n{text}\n--\n{expected}")
    if not differ:
        print(f"the same output files, byte for byte (times as ranks), on pyspark {', '.join(results)}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
