"""How many of Pathway 0.33.0's own tests pass when ``pathway`` is sparkway.

Usage (from the repository root)::

    .venv/bin/python -m tests.compat.runner [--budget 3600] [--timeout 15] [--share 100] [--jobs 2] [-k FILE_REGEX]
    .venv/bin/python -m tests.compat.runner --tests pathway/tests/test_common.py::test_select ...

Steps: download the ``pathway==0.33.0`` wheel once (``pip download``, cached in
``$SPARKWAY_COMPAT_CACHE`` or ``~/.cache/sparkway/compat``); extract its tests and, as
``*.py.pysrc``, its modules (for their docstring examples) into a temporary folder, with
a stub ``pathway/__init__.py`` that makes ``import pathway`` give sparkway
(``shim.py``); run the selected tests and examples with pytest in ``--jobs`` subprocesses
at once (2 by default), each on a shard of them (by a hash of the test's id, so that a
file's slow tests are spread) with one SparkSession for all its tests (a test that times
out ends its process, and a fresh one runs the rest of the shard); write the report.
Nothing from the wheel is written inside the repository.  Exclusions are in
``exclusions.txt``; ``SAMPLE`` trims files that repeat one test many times.  A whole run
takes about 15 minutes on 2 cores (36 in one process); ``--share 25`` runs a fixed 25% of
every file (the regression check of ``test_compat.py``).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VERSION = "0.33.0"
# Files whose tests run only in part (percent of their test ids, chosen by a hash of the
# id, so the subset is the same on every run), to stay within the time budget: they repeat
# one test over many time zones, formats, windows or values (with them whole, a run took
# about 700 s).
SAMPLE: dict[str, int] = {
    "pathway/tests/expressions/test_non_existing_date_time_conversion.py": 25,
    "pathway/tests/expressions/test_datetimes.py": 50,
    "pathway/tests/temporal/test_window_joins.py": 40,
    "pathway/tests/temporal/test_interval_joins.py": 60,
    "pathway/tests/test_json.py": 60,
    "pathway/tests/ml/test_index.py": 15,  # ~10 s per test (many times, each a Spark step)
}


def _plugin() -> Any:
    """``compat.plugin`` (its selection rules), importable however this file was started."""
    if str(HERE.parent) not in sys.path:
        sys.path.insert(0, str(HERE.parent))
    from compat import plugin

    return plugin


def cache_dir() -> Path:
    path = Path(os.environ.get("SPARKWAY_COMPAT_CACHE") or Path.home() / ".cache" / "sparkway" / "compat")
    path.mkdir(parents=True, exist_ok=True)
    return path


def obtain_wheel() -> Path:
    """The Pathway wheel, downloaded on first use only (it is never installed)."""
    found = sorted(cache_dir().glob(f"pathway-{VERSION}-*.whl"))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", f"pathway=={VERSION}", "--no-deps",
             "--only-binary=:all:", "-q", "-d", str(cache_dir())],
            check=True,
        )
        found = sorted(cache_dir().glob(f"pathway-{VERSION}-*.whl"))
    return found[-1]


def read_exclusions() -> list[str]:
    """Patterns of ``exclusions.txt``: ``pattern | reason`` per line."""
    lines = (HERE / "exclusions.txt").read_text().splitlines()
    return [ln.split("|")[0].strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def prepare(wheel: Path, work: Path, exclusions: list[str], file_regex: str | None) -> list[str]:
    """Extracts the wheel's tests and module sources; returns the pytest arguments (paths)."""
    excluded = _plugin().excluded

    paths: set[str] = set()
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if not name.startswith("pathway/") or name == "pathway/tests/utils.py":  # ours stands for it
                continue
            if name.startswith("pathway/tests/"):
                archive.extract(name, work)
                selectable = Path(name).name.startswith("test_") and name.endswith(".py")
                key = name
            elif name.endswith(".py"):  # a module: only its docstrings are used
                (work / "docsrc" / name).parent.mkdir(parents=True, exist_ok=True)
                (work / "docsrc" / (name + ".pysrc")).write_bytes(archive.read(name))
                selectable, key = True, "doctest:" + name
            else:
                continue
            if selectable and not excluded(key, exclusions) and (not file_regex or re.search(file_regex, key)):
                paths.add(str(work / "docsrc" / (name + ".pysrc")) if key.startswith("doctest:") else name)
    (work / "pathway" / "__init__.py").write_text(
        "# Written by sparkway's compat runner: `import pathway` gives sparkway.\n"
        "from compat.shim import become_pathway\n\nbecome_pathway(globals())\n"
    )
    return sorted(paths)


def run_pytest(
    work: Path, paths: list[str], exclusions: list[str], budget: float, timeout: float, share: int = 100, jobs: int = 2
) -> tuple[list[dict], list[str], float]:
    """Runs the tests in ``jobs`` subprocesses at once, each a shard of the tests (a fresh
    process after a timeout), stopped at ``budget`` seconds; returns the results."""
    start = time.monotonic()
    shards = [work / f"shard-{k}" for k in range(jobs)]
    failures: list[BaseException] = []

    def run_shard(k: int) -> None:
        try:
            _run_shard(work, shards[k], (k, jobs), paths, exclusions, timeout, budget, share)
        except BaseException as e:  # re-raised below, in the caller's thread
            failures.append(e)

    runs = [threading.Thread(target=run_shard, args=(k,), daemon=True) for k in range(jobs)]
    for thread in runs:
        thread.start()
    try:
        for thread in runs:
            thread.join()
    except BaseException:  # ^C: the shards' processes run in sessions of their own
        for process in list(_RUNNING):
            _stop(process)
        raise
    if failures:
        raise failures[0]
    elapsed = time.monotonic() - start
    if elapsed > 0.8 * budget:
        print(f"warning: the run took {elapsed:.0f} s of its {budget:.0f} s budget: sample big files (SAMPLE)", file=sys.stderr)
    records, chosen = [], []
    for shard in shards:
        results, selected = shard / "results.jsonl", shard / "selected.json"
        records += [json.loads(ln) for ln in results.read_text().splitlines()] if results.exists() else []
        chosen += json.loads(selected.read_text()) if selected.exists() else []
    if not chosen and not records:
        logs = "\n".join((shard / "pytest.log").read_text()[-3000:] for shard in shards)
        raise RuntimeError("pytest selected nothing:\n" + logs)
    return records, chosen, elapsed


def _run_shard(work: Path, shard: Path, part: tuple[int, int], paths: list[str], exclusions: list[str],
               timeout: float, budget: float, share: int) -> None:
    """One process after another on the tests of shard ``part`` (k of n), until one ends
    without a timeout (the plugin leaves ``resume`` when a timeout ends its process)."""
    shard.mkdir(exist_ok=True)
    command, env = _pytest_command(work, paths, exclusions, timeout, budget, share, shard, part)
    start = time.monotonic()
    resume = shard / "resume"
    with open(shard / "pytest.log", "w") as log:
        while time.monotonic() - start < budget - 30:
            resume.unlink(missing_ok=True)
            _run_until(command, work, env, log, budget - (time.monotonic() - start))
            if not resume.exists():
                break


def _pytest_command(
    work: Path, paths: list[str], exclusions: list[str], timeout: float, budget: float, share: int = 100,
    shard: Path | None = None, part: tuple[int, int] = (0, 1),
) -> tuple[list[str], dict[str, str]]:
    """The pytest command line and environment of a run in ``work`` (its files in
    ``shard``, by default ``work`` itself), on shard ``part`` of the tests."""
    shard = shard or work
    config = {
        # tests stop starting 30 s before the budget's end (killing the run would kill the
        # JVM under the test running, and count the tests after it as failed)
        "exclusions": exclusions, "sample": SAMPLE, "share": share, "timeout": timeout, "deadline": time.time() + budget - 30,
        "results": str(shard / "results.jsonl"), "selected": str(shard / "selected.json"), "shard": list(part),
    }
    (shard / "compat.json").write_text(json.dumps(config))
    (work / "pytest.ini").write_text("[pytest]\n")
    venv_python = ROOT / ".venv" / "bin" / "python"
    python = str(venv_python if venv_python.exists() else sys.executable)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": python,
        "SPARKWAY_COMPAT_CONFIG": str(shard / "compat.json"),
        "SPARKWAY_STATE_CACHE": str(shard / "state-cache"),
    }
    command = [
        python, "-m", "pytest", "-c", str(work / "pytest.ini"), "--rootdir", str(work), "-q", "--no-header",
        "-p", "no:cacheprovider", "-p", "compat.plugin", "--timeout", str(timeout), "--timeout-method", "signal",
        "--tb=no", "-rN", "-W", "ignore", "--continue-on-collection-errors", *paths,
    ]
    return command, env


def _run_until(command: list[str], work: Path, env: dict[str, str], log: Any, seconds: float) -> None:
    """Runs pytest; stops it (and its JVM) when ``seconds`` are spent."""
    process = subprocess.Popen(command, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    _RUNNING.add(process)
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        print("budget spent: stopping the run", file=sys.stderr)
        _stop(process)
    finally:
        _RUNNING.discard(process)


#: the pytest processes running (one per shard)
_RUNNING: set[subprocess.Popen] = set()


def _stop(process: subprocess.Popen) -> None:
    """Stops pytest and its JVM (its session), by force after 15 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def summarize(records: list[dict], selected: list[str], elapsed: float) -> dict[str, Any]:
    """Counts per file, for the tests and for the docstring examples."""
    report_key = _plugin().report_key

    seen = {r["id"] for r in records}
    records = records + [
        {"id": i, "file": report_key(i), "outcome": "error", "category": "not run (budget)", "reason": ""}
        for i in selected if i not in seen
    ]
    report: dict[str, Any] = {"pathway": VERSION, "seconds": round(elapsed, 1), "sample": SAMPLE}
    for part, is_doc in (("tests", False), ("doctests", True)):
        mine = [r for r in records if r["file"].startswith("doctest:") == is_doc]
        files: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        for r in mine:
            files[r["file"]][r["outcome"]] += 1
            files[r["file"]]["seconds"] += r.get("duration", 0)
        total = sum(files.values(), collections.Counter())
        report[part] = {
            "overall": _counts(total),
            "files": {f: _counts(c) for f, c in sorted(files.items())},
            "categories": dict(collections.Counter(r["category"] for r in mine if "category" in r).most_common()),
            "missing_names": dict(collections.Counter(n for r in mine if (n := missing_name(r))).most_common(40)),
            "failures": sorted(({k: r.get(k) for k in ("id", "category", "reason")} for r in mine if "category" in r), key=lambda r: r["id"]),
            "passed_ids": sorted(r["id"] for r in mine if r["outcome"] == "passed"),
        }
    return report


def _counts(c: collections.Counter) -> dict[str, Any]:
    ran = c["passed"] + c["failed"] + c["error"]
    counts = {k: c[k] for k in ("passed", "failed", "error", "skipped", "xfailed")}
    return {**counts, "rate": round(c["passed"] / ran, 3) if ran else 0.0, "seconds": round(c["seconds"], 1)}


# "missing API" reasons -> the name they are about (format fields are the regex groups)
MISSING_PATTERNS = [
    (r"^MissingAPI: (\S+?)(?:\(\.\.\.\))?: not in sparkway", "{0}"),
    (r"^AttributeError: '(\w+)' object has no attribute '(\w+)'", "{0}.{1}"),
    (r"^AttributeError: table has no column '(\w+)'", "Table.{0}"),  # sparkway's Table.__getattr__
    (r"^AttributeError: module '([\w.]+)' has no attribute '(\w+)'", "{0}.{1}"),
    (r"^AttributeError: type object '(\w+)' has no attribute '(\w+)'", "{0}.{1}"),
    (r"^ImportError: cannot import name '(\w+)' from '([\w.]+)'", "{1}.{0}"),
    (r"^ModuleNotFoundError: No module named '([\w.]+)'", "{0}"),
    (r"^TypeError: ([\w.]+)\(\) got an unexpected keyword argument '(\w+)'", "{0}({1}=)"),
    (r"^TypeError: .*argument after \*\* must be a mapping, not (\w+)", "**{0} (mapping protocol)"),
    (r"^TypeError: '(\w+)' object is not callable", "{0}(...) (a method there)"),
    (r"^TypeError: unsupported operand type\(s\) for (\S+): '(\w+)' and '(\w+)'", "{1} {0} {2}"),
]


def missing_name(record: dict) -> str | None:
    """The API name a "missing API" failure is about, e.g. ``Table.asof_join``."""
    if record.get("category") != "missing API":
        return None
    reason = record.get("reason") or "?"
    for pattern, name in MISSING_PATTERNS:
        if m := re.match(pattern, reason):
            return name.format(*m.groups())
    return reason[:80]


def print_summary(report: dict[str, Any]) -> None:
    for part in ("tests", "doctests"):
        data = report[part]
        print(f"\n== Pathway {report['pathway']} {part} with pathway = sparkway ==")
        print(f"{'file':60} {'pass':>5} {'fail':>5} {'err':>5} {'skip':>5} {'rate':>6} {'sec':>5}")
        for name, c in [*data["files"].items(), ("TOTAL", data["overall"])]:
            skipped = c["skipped"] + c["xfailed"]
            print(f"{name[-60:]:60} {c['passed']:5} {c['failed']:5} {c['error']:5} {skipped:5} {c['rate']:6.1%} {c['seconds']:5.0f}")
        print("failure categories:", ", ".join(f"{k} {v}" for k, v in data["categories"].items()) or "none")
        print("most common missing names:", ", ".join(f"{k} {v}" for k, v in list(data["missing_names"].items())[:15]) or "none")
    print(f"\nruntime: {report['seconds']} s")


def debug(test_ids: list[str], timeout: float, workdir: str | None = None) -> int:
    """Runs the given Pathway tests (``pathway/tests/x.py::test_y``, or a docstring's
    ``docsrc/pathway/m.py.pysrc::Name``) with tracebacks on the terminal; returns pytest's
    exit code.  For working on a failure; no report is written."""
    files = {i.split("::")[0].removeprefix("docsrc/").removesuffix(".pysrc") for i in test_ids}
    with tempfile.TemporaryDirectory(prefix="sparkway-compat-") as tmp:
        work = Path(workdir or tmp)
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        regex = "|".join(re.escape(f) + "$" for f in files)
        exclusions = read_exclusions()
        prepare(obtain_wheel(), work, exclusions, regex)
        command, env = _pytest_command(work, [], exclusions, timeout, 3600)
        command = [c for c in command if c not in ("--tb=no", "-rN")] + ["--tb=short", *test_ids]
        return subprocess.run(command, cwd=work, env=env).returncode


def run(
    budget: float = 3600, timeout: float = 15, file_regex: str | None = None, workdir: str | None = None, share: int = 100,
    jobs: int = 2,
) -> dict[str, Any]:
    """Runs the whole measurement (or ``share`` percent of each file) and returns the report
    (also written to the cache).

    ``workdir`` (outside the repository) keeps the extracted tests and pytest's log, to
    rerun a test by hand; by default a temporary folder is used and removed."""
    wheel = obtain_wheel()
    with tempfile.TemporaryDirectory(prefix="sparkway-compat-") as tmp:
        work = Path(workdir or tmp)
        if workdir:
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
        exclusions = read_exclusions()
        paths = prepare(wheel, work, exclusions, file_regex)
        records, selected, elapsed = run_pytest(work, paths, exclusions, budget, timeout, share, jobs)
    report = summarize(records, selected, elapsed)
    report["share"] = share
    (cache_dir() / "report.json").write_text(json.dumps(report, indent=1))
    lines = [f"{f['category']} | {f['id']} | {f['reason']}" for part in ("tests", "doctests") for f in report[part]["failures"]]
    (cache_dir() / "failures.txt").write_text("\n".join(lines) + "\n")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=float, default=3600, help="seconds for the whole pytest run")
    parser.add_argument("--timeout", type=float, default=15, help="seconds per test")
    parser.add_argument("--share", type=int, default=100, help="percent of each file's tests to run (a fixed subset): a quicker regression check")
    parser.add_argument("--jobs", type=int, default=2, help="test processes at once, each with its own Spark (a shard of the tests)")
    parser.add_argument("-k", dest="file_regex", help="regex: only files whose path matches")
    parser.add_argument("--workdir", help="keep the extracted files and pytest.log here (outside the repository)")
    parser.add_argument("--report", help="also write the report (JSON) to this file")
    parser.add_argument("--write-baseline", action="store_true", help="record this run's numbers in baseline.json")
    parser.add_argument("--tests", nargs="+", metavar="ID", help="only run these tests, with tracebacks (no report), e.g. pathway/tests/test_common.py::test_select")
    args = parser.parse_args(argv)
    if args.workdir and Path(args.workdir).resolve().is_relative_to(ROOT):
        parser.error("--workdir must be outside the repository")
    if args.write_baseline and (args.share < 100 or args.file_regex):
        parser.error("--write-baseline records a whole run: drop --share and -k")
    if args.tests:
        return debug(args.tests, args.timeout, args.workdir)
    report = run(args.budget, args.timeout, args.file_regex, args.workdir, args.share, args.jobs)
    print_summary(report)
    print(f"full report: {cache_dir() / 'report.json'}; failing tests: {cache_dir() / 'failures.txt'}")
    if args.report:
        Path(args.report).write_text(json.dumps(report, indent=1))
    if args.write_baseline:
        (HERE / "baseline.json").write_text(json.dumps(baseline(report), indent=1) + "\n")
    return 0


def baseline(report: dict[str, Any]) -> dict[str, Any]:
    """What ``baseline.json`` keeps of a report: passed counts and rates, and the passed ids."""
    def counts(c: dict[str, Any]) -> dict[str, Any]:
        return {"passed": c["passed"], "rate": c["rate"]}

    out: dict[str, Any] = {k: report[k] for k in ("pathway", "seconds", "sample")}
    for part in ("tests", "doctests"):
        data = report[part]
        out[part] = {
            "overall": counts(data["overall"]),
            "files": {f: counts(c) for f, c in data["files"].items()},
            "passed_ids": data["passed_ids"],
        }
    return out


if __name__ == "__main__":
    sys.exit(main())
