"""Pathway 0.33.0's own tests that passed with sparkway (``baseline.json``) still pass.

The check runs a fixed share of every test file and of the docstring examples (``SHARE``
percent, the same tests on every run): the whole run takes about 15 minutes on 2 cores,
as long as the rest of the suite.  The pass rates themselves are measured by a
whole run, ``python -m tests.compat.runner --write-baseline``, after an improvement.

Opt-in (``SPARKWAY_COMPAT=1``, which ``scripts/test.sh`` sets): the first run downloads
Pathway's 105 MB wheel.  Alone: ``SPARKWAY_COMPAT=1 .venv/bin/python -m pytest tests/compat -m compat``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASELINE = Path(__file__).with_name("baseline.json")
SHARE = 25
BUDGET = 1800
# twice the whole run's 15 s: a test that passed in the baseline near its limit is not
# lost on a slower machine
TIMEOUT = 30


@pytest.mark.compat
@pytest.mark.timeout(BUDGET + 300)  # the runner stops itself at its budget
@pytest.mark.skipif(os.environ.get("SPARKWAY_COMPAT") != "1", reason="opt-in: set SPARKWAY_COMPAT=1 (~6 min)")
def test_pathway_tests_passed_do_not_drop(tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    command = [
        "-m", "tests.compat.runner", "--share", str(SHARE), "--budget", str(BUDGET), "--timeout", str(TIMEOUT),
        "--report", str(report_path),
    ]
    subprocess.run([sys.executable, *command], cwd=ROOT, check=True)
    report, baseline = json.loads(report_path.read_text()), json.loads(BASELINE.read_text())
    problems = []
    for part in ("tests", "doctests"):
        now, before = report[part], baseline[part]
        unrun = [f for f in now["failures"] if f["category"] == "not run (budget)"]
        selected = sum(now["overall"][k] for k in ("passed", "failed", "error"))
        # a slower machine may not reach every test within the budget; one that reaches too
        # few shows nothing
        if len(unrun) > 0.15 * selected:
            problems.append(f"{part}: {len(unrun)} of {selected} not run within the budget")
        passed_before = set(before["passed_ids"])
        lost = [f for f in now["failures"] if f["id"] in passed_before and f not in unrun]
        ran_before = len(passed_before & {*now["passed_ids"], *(f["id"] for f in lost)})
        # 1% of slack: a test that times out on a busy machine is not a regression
        if len(lost) > 0.01 * ran_before:
            problems.append(
                f"{part}: {len(lost)} of the {ran_before} tests run that passed in the baseline fail now:\n"
                + "\n".join(f"  {f['id']}  ({f['category']}: {f['reason']})" for f in lost)
            )
    assert not problems, "\n".join(problems)
