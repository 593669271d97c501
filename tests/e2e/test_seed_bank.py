"""Seed 004: the shipped bank-transfer example, run as a user would run it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .helpers import check_ok, run_program

pytestmark = [pytest.mark.subprocess, pytest.mark.releases]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bank" / "transfers.py"


def test_bank_transfers_total_is_zero_at_every_time(tmp_path: Path, python_env) -> None:
    proc = run_program(EXAMPLE, tmp_path, python_env)
    check_ok(proc)
    log = proc.stderr

    totals = [int(x) for x in re.findall(r"INFO:root:Total: (-?\d+)", log)]
    assert totals and set(totals) == {0}, log[-3000:]

    # replay the callbacks' messages: a removal always names the balance shown last
    balances: dict[int, int] = {}
    for kind, account, balance in re.findall(r"INFO:root:(Account|Removing account) (\d+) balance: (-?\d+)", log):
        if kind == "Account":
            assert int(account) not in balances, f"account {account} added twice without a removal"
            balances[int(account)] = int(balance)
        else:
            assert balances.pop(int(account)) == int(balance)
    assert balances and sum(balances.values()) == 0

    # the seed's connector log lines: every entry sent once, then the source closes
    sent = [int(x) for x in re.findall(r"PythonReader-0: (\d+) entries \(\d+ minibatch\(es\)\) have been sent", log)]
    assert sum(sent) == 10, log[-3000:]
    assert "PythonReader-0: Closing the data source" in log
