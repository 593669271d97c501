"""Runs one corpus program and turns what it wrote into comparable text.

Shared by the recorder (which runs under real Pathway 0.33.0, in its own virtual
environment) and by ``tests/test_corpus.py`` (sparkway): it imports neither.

A program is a module in ``programs/`` that does ``import pathway as pw`` and defines
``run(workdir, step)``; it may also take ``postgres`` (connection settings of a fresh,
empty database) and set ``STEPS`` (how many runs, for persistence; default 1). Each run
builds its own pipeline, writes outputs under ``workdir / "out"`` and calls ``pw.run``.
After each run, the harness keeps every file in ``out/``, what the program printed, and
the name of the exception it raised, if any.

Outputs are compared byte for byte after two normalizations that keep their meaning:
time values become their rank (0, 1, 2... in order of value) because engines number their
times differently, and the lines of one time are sorted because the order of rows within
a time is the engine's.
"""

from __future__ import annotations

import contextlib
import csv
import importlib.util
import inspect
import io
import json
import re
import sys
import traceback
import types
from pathlib import Path
from typing import Any, Callable

PROGRAMS = Path(__file__).parent / "programs"
EXPECTED = Path(__file__).parent / "expected"


def programs() -> list[Path]:
    """All corpus programs, in name order."""
    return sorted(p for p in PROGRAMS.glob("*.py") if not p.name.startswith("_"))


def load(path: Path, pathway: types.ModuleType) -> types.ModuleType:
    """Imports a program with ``import pathway`` answered by ``pathway``."""
    saved = sys.modules.get("pathway")
    sys.modules["pathway"] = pathway
    try:
        spec = importlib.util.spec_from_file_location(f"corpus_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        if saved is None:
            sys.modules.pop("pathway", None)
        else:
            sys.modules["pathway"] = saved


def execute(
    program: types.ModuleType,
    workdir: Path,
    clear_graph: Callable[[], None],
    postgres: Callable[[], dict[str, Any]] | None = None,
) -> dict[str, str]:
    """Runs every step of a program; returns ``{"<step>/<file>": normalized text}``."""
    out = workdir / "out"
    out.mkdir(parents=True, exist_ok=True)
    wanted = inspect.signature(program.run).parameters
    settings = postgres() if "postgres" in wanted else None
    results: dict[str, str] = {}
    for step in range(getattr(program, "STEPS", 1)):
        clear_graph()
        printed = io.StringIO()
        kwargs: dict[str, Any] = {"workdir": workdir, "step": step}
        if settings is not None:
            kwargs["postgres"] = settings
        try:
            with contextlib.redirect_stdout(printed):
                program.run(**kwargs)
        except Exception as error:  # noqa: BLE001 - the error's kind is an output too
            results[f"{step}/error.txt"] = error_kinds(error)
            traceback.print_exception(error, file=sys.stderr)  # shown when a test fails
        finally:
            clear_graph()
        if printed.getvalue():
            results[f"{step}/stdout.txt"] = normalize_lines(printed.getvalue())
        for path in sorted(out.rglob("*")):
            if path.is_file():
                results[f"{step}/{path.relative_to(out)}"] = normalize(path)
    return results


def error_kinds(error: BaseException) -> str:
    """The exception's class and the standard Python error classes it is, one per line.

    Pathway and sparkway name their own classes differently; what a program can catch
    (``ValueError``, ``ZeroDivisionError``, ...) must agree, so the recorder writes the
    builtin classes only and the test checks that sparkway's error is each of them.
    """
    builtin = [c.__name__ for c in type(error).__mro__ if c.__module__ == "builtins" and c not in (object, BaseException)]
    return "\n".join(builtin) + "\n"


def normalize(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="backslashreplace")
    if path.suffix == ".csv":
        return normalize_csv(text)
    if path.suffix in (".jsonl", ".jsonlines"):
        return normalize_jsonlines(text)
    return normalize_lines(text)


def normalize_lines(text: str) -> str:
    """Lines sorted (the order of rows printed in one go is the engine's)."""
    return "".join(sorted(text.splitlines(keepends=True)))


def _time_ranks(times: list[str]) -> dict[str, str]:
    ordered = sorted(set(times), key=lambda t: (len(t.strip('"')), t.strip('"')))
    return {t: str(rank) for rank, t in enumerate(ordered)}


def normalize_csv(text: str) -> str:
    """The header, then the records grouped by time (as ranks), sorted within a time."""
    records = raw_csv_records(text)
    if not records:
        return ""
    header, rows = records[0], records[1:]
    names = [next(csv.reader([field]))[0] if field else "" for field in header]
    if "time" not in names:
        return _join(header) + "".join(sorted(_join(r) for r in rows))
    at = names.index("time")
    ranks = _time_ranks([r[at] for r in rows if len(r) > at])
    keyed = []
    for row in rows:
        if len(row) > at:
            raw = row[at]
            rank = ranks[raw]
            row = row[:at] + [f'"{rank}"' if raw.startswith('"') else rank] + row[at + 1:]
            keyed.append((int(rank), _join(row)))
        else:
            keyed.append((-1, _join(row)))
    return _join(header) + "".join(line for _, line in sorted(keyed))


def _join(fields: list[str]) -> str:
    return ",".join(fields) + "\n"


def raw_csv_records(text: str) -> list[list[str]]:
    """CSV records as the raw text of their fields (quotes kept), split at commas and
    line ends outside quotes."""
    records: list[list[str]] = []
    fields: list[str] = []
    field: list[str] = []
    quoted = False
    for char in text:
        if quoted:
            field.append(char)
            if char == '"':
                quoted = False  # a doubled quote reopens at once, below
        elif char == '"':
            field.append(char)
            quoted = True
        elif char == ",":
            fields.append("".join(field))
            field = []
        elif char == "\n":
            fields.append("".join(field).removesuffix("\r"))
            records.append(fields)
            fields, field = [], []
        else:
            field.append(char)
    if field or fields:
        fields.append("".join(field))
        records.append(fields)
    return records


_TIME = re.compile(r'"time":\s*(\d+)')


def normalize_jsonlines(text: str) -> str:
    """Lines grouped by their ``"time"`` (as ranks), sorted within a time."""
    lines = text.splitlines(keepends=True)
    times = []
    for line in lines:
        found = list(_TIME.finditer(line)) if line.strip() and "time" in json.loads(line) else []
        times.append(found[-1] if found else None)
    ranks = _time_ranks([m.group(1) for m in times if m is not None])
    keyed = []
    for line, match in zip(lines, times):
        if match is None:
            keyed.append((-1, line))
        else:
            rank = ranks[match.group(1)]
            keyed.append((int(rank), line[: match.start(1)] + rank + line[match.end(1):]))
    return "".join(line for _, line in sorted(keyed))
