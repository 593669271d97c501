"""pytest plugin of the compatibility run (``-p compat.plugin`` in the runner's subprocess).

It deselects excluded tests, gives every test a fresh program, collects Pathway's
docstring examples (``*.py.pysrc`` copies of its modules, never imported), and writes one
JSON line per test with its outcome and, for a failure, its category, as the test ends,
so that a run stopped by the time budget still reports what it did.
Settings come from the JSON file named by ``$SPARKWAY_COMPAT_CONFIG``.
"""

from __future__ import annotations

import ast
import doctest
import fnmatch
import functools
import json
import os
import re
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SPARKWAY_FRAMES = ("/sparkway/", "/pyspark/", "/py4j/")
# TypeErrors that mean an API is absent: a keyword or argument sparkway's function does
# not take, a method that is a column reference there, an operator or the mapping
# protocol (``**table``) it does not define, or a placeholder of a missing name used as a type
TYPE_ERROR_API = re.compile(
    r"unexpected keyword argument|positional argument|takes \d+|takes from|got multiple values"
    r"|object is not callable|unsupported operand type|must be a mapping|'Missing'|compat\.shim\.Missing"
)
DOCTEST_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@functools.cache
def _config() -> dict[str, Any]:
    return json.loads(Path(os.environ["SPARKWAY_COMPAT_CONFIG"]).read_text())


def _write(record: dict[str, Any]) -> None:
    with open(_config()["results"], "a") as f:
        f.write(json.dumps(record) + "\n")


def report_key(nodeid: str) -> str:
    """The file a test id belongs to: ``pathway/tests/x.py``, or ``doctest:pathway/m.py``."""
    path = nodeid.split("::")[0]
    if path.startswith("docsrc/"):
        return "doctest:" + path[len("docsrc/") :].removesuffix(".pysrc")
    return path


def excluded(nodeid: str, patterns: list[str]) -> bool:
    key = report_key(nodeid)
    test_id = key + nodeid[len(nodeid.split("::")[0]) :]
    return any(fnmatch.fnmatchcase(key, p) or fnmatch.fnmatchcase(test_id, p) for p in patterns)


def sampled(nodeid: str, sample: dict[str, int], share: int = 100) -> bool:
    """A deterministic share of a file's tests: ``crc32(id) % 100 < percent``; ``share``
    keeps that percent of every file on top (a second hash, so that it does not pick the
    same tests as ``sample``)."""
    percent = sample.get(report_key(nodeid), 100)
    in_share = zlib.crc32(b"share:" + nodeid.encode()) % 100 < share
    return zlib.crc32(nodeid.encode()) % 100 < percent and in_share


def in_shard(nodeid: str, part: tuple[int, int]) -> bool:
    """Whether the test belongs to shard ``k`` of ``n`` (a hash of its id: a file's tests
    are spread over the shards, so that its slow ones are too)."""
    k, n = part
    return zlib.crc32(b"shard:" + nodeid.encode()) % n == k


def categorize(excinfo: pytest.ExceptionInfo) -> str:
    """Why a test failed, from its exception (the report's categories)."""
    e, text = excinfo.value, str(excinfo.value)
    if isinstance(e, pytest.fail.Exception):
        if "Timeout" in text:
            return "timeout"
        if "DID NOT RAISE" in text or "DID NOT WARN" in text:
            return "expected error not raised"
        return "wrong result"
    if isinstance(e, AssertionError) and "Regex pattern did not match" in text:
        return "wrong error message"
    if isinstance(e, (AttributeError, ImportError, NotImplementedError)) or (
        isinstance(e, TypeError) and TYPE_ERROR_API.search(text)
    ) or "compat.shim.Missing" in text:
        return "missing API"
    if isinstance(e, AssertionError):
        return "wrong result"
    if any(marker in str(excinfo.traceback[-1].path) for marker in SPARKWAY_FRAMES):
        return "crash inside sparkway"
    return "error in test code"


def _reason(excinfo: pytest.ExceptionInfo) -> str:
    lines = str(excinfo.value).strip().splitlines() or [""]
    return f"{excinfo.type.__name__}: {lines[0][:300]}"


def pytest_configure(config: pytest.Config) -> None:
    import pathway  # noqa: F401 - the stub in the temporary folder: installs the shim

    import pathway.tests  # noqa: F401


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    from compat import shim

    settings = _config()
    part = tuple(settings.get("shard", (0, 1)))
    keep = [
        i for i in items
        if not excluded(i.nodeid, settings["exclusions"]) and sampled(i.nodeid, settings["sample"], settings["share"])
        and in_shard(i.nodeid, part)
    ]
    selected = Path(settings["selected"])
    if not selected.exists():  # a resumed run (after a timeout) keeps the first run's selection
        selected.write_text(json.dumps([i.nodeid for i in keep]))
    done = _recorded()
    keep = [i for i in keep if i.nodeid not in done]
    config.hook.pytest_deselected(items=[i for i in items if i not in keep])
    items[:] = keep
    shim.STRICT["on"] = True  # collection is over: using a missing name now fails
    if keep:  # start the JVM now, not within the first test's timeout
        from sparkway.engine.spark import get_spark

        get_spark()


def _recorded() -> set[str]:
    """Ids of the tests (and files) with a result already, from an earlier process of this run."""
    results = Path(_config()["results"])
    return {json.loads(line)["id"] for line in results.read_text().splitlines()} if results.exists() else set()


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A file that cannot be imported counts as one error (its tests are unknown)."""
    if report.failed and report.nodeid not in _recorded():
        last = [ln[4:] for ln in str(report.longrepr).splitlines() if ln.startswith("E   ")][-1:] or ["?"]
        _write({"id": report.nodeid, "file": report_key(report.nodeid), "outcome": "error",
                "category": "collection error", "reason": last[0][:300], "duration": 0})


@pytest.fixture(autouse=True)
def _fresh_program() -> Iterator[None]:
    """Each test builds its own program (as Pathway's ``parse_graph.G.clear()``)."""
    from sparkway.api import graph

    graph.clear()
    yield
    graph.clear()


_RESULTS: dict[str, dict[str, Any]] = {}
_TIMED_OUT: set[str] = set()


def _timeout_of(item: pytest.Item) -> float:
    """Seconds the item may run: the run's limit per test, five times that for a
    docstring's examples (those of the as-of joins run about 40 steps)."""
    return _config()["timeout"] * (5 if isinstance(item, DocExample) else 1)


def _cancel_spark_jobs(nodeid: str) -> None:
    """pytest-timeout's SIGALRM cannot end a test blocked on a Spark job (pyspark waits
    for the job's result in a ``finally``); cancelling the jobs can."""
    from pyspark import SparkContext

    _TIMED_OUT.add(nodeid)
    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.cancelAllJobs()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    watchdog = threading.Timer(_timeout_of(item) + 1, _cancel_spark_jobs, [item.nodeid])
    watchdog.daemon = True
    watchdog.start()
    try:
        return (yield)
    finally:
        watchdog.cancel()
        if time.time() > _config().get("deadline", float("inf")):  # the runner's budget: the rest count as not run
            item.session.shouldstop = "the time budget of the compatibility run is spent"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    from compat import shim

    if call.when == "setup":
        shim.USED.clear()
    report = yield
    record = _RESULTS.setdefault(item.nodeid, {"id": item.nodeid, "file": report_key(item.nodeid), "outcome": "passed", "duration": 0.0})
    record["duration"] += report.duration
    if report.skipped and hasattr(report, "wasxfail"):
        record["outcome"] = "xfailed"
    elif report.skipped:
        record["outcome"] = "skipped"
    elif report.failed and record["outcome"] == "passed":
        record["outcome"] = "failed" if call.when == "call" else "error"
        if call.excinfo is not None:
            record["category"], record["reason"] = categorize(call.excinfo), _reason(call.excinfo)
            # the watchdog cancelled its jobs, or pytest-timeout's signal ended it (inside a
            # Py4J call, the signal's exception can come out as another error)
            if item.nodeid in _TIMED_OUT or call.duration >= _timeout_of(item):
                record["category"] = "timeout"
            if record["category"] == "timeout":
                _TIMED_OUT.add(item.nodeid)
        else:  # e.g. a strict xfail that passed
            record["category"], record["reason"] = "wrong result", str(report.longrepr)[:300]
    if call.when == "call" and report.passed and shim.USED:  # it caught a MissingAPI
        record.update(outcome="failed", category="missing API", reason=f"MissingAPI: {shim.USED[0]}: not in sparkway (caught by the test)")
    if call.when == "teardown":
        _write(_RESULTS.pop(item.nodeid))
        if item.nodeid in _TIMED_OUT:
            _hand_over(item.session)
    return report


def _hand_over(session: pytest.Session) -> None:
    """A timeout can fire in the middle of a Py4J call and leave the gateway's socket out
    of step, so that later calls fail or get other calls' answers, even from a new JVM in
    this process: the process stops here and the runner starts a fresh one, which skips
    the tests recorded so far."""
    Path(_config()["results"]).with_name("resume").touch()
    session.shouldstop = "a test timed out: a fresh process runs the rest"


# -- Pathway's docstring examples --------------------------------------------------------


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name.endswith(".py.pysrc"):
        return DocFile.from_parent(parent, path=file_path)
    return None


def _docstrings(tree: ast.Module) -> Iterator[tuple[str, str, int]]:
    """(qualified name, docstring, line) of the module, its classes and functions."""
    kinds = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, kinds):
                name = f"{prefix}{child.name}"
                doc = ast.get_docstring(child, clean=False)
                if doc:
                    yield name, doc, child.body[0].lineno - 1
                yield from walk(child, name + ".")

    doc = ast.get_docstring(tree, clean=False)
    if doc:
        yield "<module>", doc, 0
    yield from walk(tree, "")


class DocFile(pytest.File):
    """A Pathway module's source; each docstring with examples is one test, as in pytest."""

    def collect(self) -> Iterator[pytest.Item]:
        relative = report_key(str(self.path.relative_to(self.config.rootpath))).removeprefix("doctest:")
        module = relative.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        parser = doctest.DocTestParser()
        tree = ast.parse(self.path.read_text())
        # not ``from __future__ import annotations``: doctest would compile the examples
        # with it, making their annotations strings that cannot be resolved later
        imports = [
            node for node in tree.body
            if isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and node.module != "__future__")
        ]
        package = module if relative.endswith("__init__.py") else module.rpartition(".")[0]
        for name, doc, line in _docstrings(tree):
            # __main__: functions defined in examples are pickled by value for Spark's
            # workers (they cannot import Pathway's module), and `sys.modules[__name__]`
            # (used by Pathway's examples) exists
            globs = {"__name__": "__main__", "__package__": package}
            test = parser.get_doctest(doc, globs, f"{module}.{name}", str(self.path), line)
            if test.examples:
                yield DocExample.from_parent(self, name=name, test=test, imports=imports)


class DocExample(pytest.Item):
    """One docstring's examples, run in order with shared globals (stops at the first failure)."""

    def __init__(self, *, test: doctest.DocTest, imports: list[ast.stmt], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.test, self.imports = test, imports
        # one docstring often runs several programs (Pathway's as-of join examples run six)
        self.add_marker(pytest.mark.timeout(_timeout_of(self)))

    def _module_globals(self) -> None:
        """The module's own imports (``np``, ``pw``...), as pytest's doctests run in the
        module's globals; an import that fails (a missing name) is left out."""
        for node in self.imports:
            try:
                exec(compile(ast.Module([node], []), str(self.path), "exec"), self.test.globs)
            except Exception:  # noqa: BLE001 - an example using the name will fail
                pass

    def runtest(self) -> None:
        from sparkway.api import graph

        if all(e.options.get(doctest.SKIP) for e in self.test.examples):
            pytest.skip("every example is marked +SKIP")
        graph.clear()
        self._module_globals()
        try:
            doctest.DebugRunner(optionflags=DOCTEST_FLAGS, verbose=False).run(self.test, out=lambda _: None)
        except doctest.UnexpectedException as e:
            raise e.exc_info[1].with_traceback(e.exc_info[2]) from None
        except doctest.DocTestFailure as f:
            raise AssertionError(
                f"line {f.test.lineno + f.example.lineno + 1}: {f.example.source.strip()}\n"
                f"expected:\n{f.example.want}got:\n{f.got}"
            ) from None
        finally:
            graph.clear()

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.test.lineno, self.name
