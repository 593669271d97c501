"""Fixtures of the end-to-end tests (helpers are in helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import Program


@pytest.fixture
def programs():
    """Background programs of one test; any still running at the end are killed."""
    started: list[Program] = []

    def start(script: Path, cwd: Path, env: dict[str, str], tag: str = "run") -> Program:
        program = Program(script, cwd, env, tag)
        started.append(program)
        return program

    yield start
    for program in started:
        program.kill()
