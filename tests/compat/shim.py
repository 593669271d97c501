"""Makes ``import pathway`` give sparkway, inside the compatibility run only.

Pathway's tests import ``pathway`` and many of its submodules (``pathway.debug``,
``pathway.internals.dtype``, ``pathway.stdlib...``).  ``become_pathway`` turns the
``pathway`` package (a stub ``__init__.py`` the runner writes into its temporary folder,
next to Pathway's extracted tests) into a forwarding module, and installs an import hook
that answers every other ``pathway.*`` import with a forwarding module:

* a name sparkway has is sparkway's own object (``pw.Table is sparkway.Table``);
* a name sparkway lacks is a ``Missing`` placeholder.  Importing or decorating with it
  works, so one missing name does not hide a whole test file; *using* it in a test raises
  ``MissingAPI`` (an ``AttributeError``), which the report counts as "missing API" with
  the Pathway name.

Nothing happens at import time: the main test suite imports this module for its doctests.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.util
import sys
import types
from typing import Any, Callable

# While pytest imports test modules, placeholders may be called (decorators, module-level
# constants) without failing; the plugin makes calls strict once collection is over.
STRICT = {"on": False}
# Missing names a test used, even if it caught the error (pytest.raises(Exception)): the
# plugin does not count such a test as passed.
USED: list[str] = []

# Pathway module -> sparkway module whose names it offers (checked before the default
# rule, which tries ``sparkway.<same path>``).  ``None``: nothing in sparkway matches.
ALIASES: dict[str, str | None] = {
    "pathway.internals": "sparkway",  # Pathway's internals re-export the public API
    "pathway.internals.dtype": "sparkway.core.dtypes",
    "pathway.internals.schema": "sparkway.api.schema",
    "pathway.internals.table": "sparkway.api.table",
    "pathway.internals.joins": "sparkway.api.table",
    "pathway.internals.join_mode": "sparkway.api.table",
    "pathway.internals.monitoring": "sparkway.api.run",
    "pathway.internals.reducers": "sparkway.api.reducers",
    "pathway.internals.table_io": "compat.pathway_utils",
    "pathway.internals.yaml_loader": "sparkway.api.yaml_config",  # empty_from_schema, for tests
    # Pathway's module of asof joins, read by its tests for Direction
    "pathway.temporal._asof_join": "sparkway.api.asof",
    "pathway.stdlib.temporal._asof_join": "sparkway.api.asof",
    # Pathway's modules of temporal behaviors and windows
    "pathway.stdlib.temporal": "sparkway.api.temporal",
    "pathway.stdlib.temporal.temporal_behavior": "sparkway.api.temporal",
    "pathway.internals.api": None,  # the Rust engine's API (a few names: ENGINE_NAMES)
    # Pathway's UDF modules: executors, caches, retries and async helpers are in one here
    "pathway.internals.udfs": "sparkway.api.udfs",
    "pathway.internals.udfs.utils": "sparkway.api.udfs",
    "pathway.internals.udfs.caches": "sparkway.api.udfs",
    "pathway.internals.udfs.executors": "sparkway.api.udfs",
    "pathway.internals.udfs.retries": "sparkway.api.udfs",
    "pathway.engine": None,  # the Rust engine (not sparkway.engine, which is internal)
}


# Pathway modules whose functions tests replace (``unittest.mock.patch``) to be seen by
# the functions of the same module: such a name is sparkway's module itself, not a
# forwarding module
SAME_MODULES: dict[str, str] = {
    "pathway.stdlib.temporal.time_utils": "sparkway.stdlib.time_utils",
}


# names pytest looks up on modules: never placeholders
PYTEST_NAMES = {"setup_module", "setUpModule", "teardown_module", "tearDownModule", "setup", "teardown", "pytestmark"}


def placeholder_allowed(name: str) -> bool:
    """Whether a module may answer ``name`` with a placeholder (not dunders or pytest's)."""
    return not (name.startswith("__") or name.startswith("pytest_") or name in PYTEST_NAMES)


class MissingAPI(AttributeError):
    """A Pathway name sparkway does not provide was used."""


class Missing:
    """Stands for a Pathway name that sparkway lacks; fails when a test uses it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def _fail(self) -> MissingAPI:
        USED.append(self._name)
        return MissingAPI(f"{self._name}: not in sparkway")

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):  # also what pytest and inspect probe for
            raise AttributeError(f"{self._name}.{attr}: not in sparkway")
        return Missing(f"{self._name}.{attr}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if STRICT["on"]:
            raise self._fail()
        if len(args) == 1 and not kwargs and callable(args[0]):  # used as a decorator
            decorated = args[0]

            @functools.wraps(decorated)
            def unavailable(*_: Any, **__: Any) -> Any:
                raise self._fail()

            return unavailable
        return Missing(f"{self._name}(...)")

    def __mro_entries__(self, bases: tuple) -> tuple[type]:
        """A class deriving from a missing class can be defined, not instantiated."""
        fail = self._fail

        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            raise fail()

        def __init_subclass__(cls, **kwargs: Any) -> None:
            pass

        return (type(f"Missing[{self._name}]", (), {"__new__": __new__, "__init_subclass__": classmethod(__init_subclass__)}),)

    def __getitem__(self, item: Any) -> Any:
        return Missing(f"{self._name}[...]")

    def __or__(self, other: Any) -> Any:  # type unions such as ``int | pw.X``
        return self

    __ror__ = __or__

    def __iter__(self) -> Any:
        raise self._fail()

    def __repr__(self) -> str:
        return f"<missing {self._name}>"


def _forward(module: types.ModuleType, target: Any) -> None:
    """Gives ``module`` a PEP 562 ``__getattr__``: ``target``'s names, then submodules,
    then placeholders."""

    def __getattr__(name: str) -> Any:
        if not placeholder_allowed(name):
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
        found = getattr(target, name, None) if target is not None else None
        if found is not None and not isinstance(found, types.ModuleType):
            return found
        if found is not None or _sparkway_module(f"{module.__name__}.{name}") is not None:
            return importlib.import_module(f"{module.__name__}.{name}")
        return Missing(f"{module.__name__}.{name}")

    module.__getattr__ = __getattr__  # type: ignore[attr-defined]


def _sparkway_module(pathway_name: str) -> types.ModuleType | None:
    """The sparkway module that plays ``pathway_name``, if any."""
    if pathway_name in ALIASES:
        target = ALIASES[pathway_name]
        try:  # sparkway's internal modules move: a stale alias gives placeholders
            return importlib.import_module(target) if target else None
        except ImportError:
            return None
    parts = pathway_name.split(".")[1:]
    obj: Any = importlib.import_module("sparkway")
    for part in parts:  # attributes first: sparkway.debug is sparkway.api.debug
        obj = getattr(obj, part, None)
        if obj is None:
            break
    if isinstance(obj, types.ModuleType):
        return obj
    try:
        return importlib.import_module(".".join(["sparkway", *parts]))
    except ImportError:
        return None


class _ParseGraph:
    """``pathway.internals.parse_graph.G``: tests call ``G.clear()`` to start a new program."""

    def clear(self) -> None:
        from sparkway.api import graph

        graph.clear()

    @property
    def universe_solver(self) -> "_UniverseSolver":
        return _UniverseSolver()

    def __getattr__(self, name: str) -> Any:
        return Missing(f"pathway.internals.parse_graph.G.{name}")


class _UniverseSolver:
    """``G.universe_solver``: what is known of tables' ids, answered by sparkway's universes."""

    @staticmethod
    def query_is_subset(a: Any, b: Any) -> bool:
        return a.is_subset_of(b)

    @staticmethod
    def query_are_equal(a: Any, b: Any) -> bool:
        return a.is_subset_of(b) and b.is_subset_of(a)


def _parse_graph_extras() -> dict[str, Any]:
    from sparkway.api.graph import ErrorLogSchema, warn_if_some_operators_unused

    return {"G": _ParseGraph(), "ErrorLogSchema": ErrorLogSchema, "warn_if_some_operators_unused": warn_if_some_operators_unused}


def _engine_names() -> dict[str, Any]:
    """Names of Pathway's engine module its tests use, played by sparkway's: the error
    of a failed computation is a ``ComputationError``; persistence modes; the metrics of
    the nearest-neighbour indexes; the Python connector's session types; ``ref_scalar``,
    the id made from values."""
    from sparkway.connectors.python import SessionType
    from sparkway.engine.expressions import python_pointer_of
    from sparkway.errors import ComputationError
    from sparkway.persistence import PersistenceMode
    from sparkway.stdlib.indexing import metric_kinds

    names = {k: v for k, v in vars(metric_kinds).items() if k.endswith("MetricKind")}
    return {"EngineError": ComputationError, "PersistenceMode": PersistenceMode, "SessionType": SessionType,
            "ref_scalar": lambda *values: python_pointer_of(values), **names}


# names a shim module offers besides its sparkway module's
EXTRAS: dict[str, Callable[[], dict[str, Any]]] = {
    # Pathway's tests import Python's operator module through Pathway's own shadows module
    "pathway.internals.shadows.operator": lambda: {
        k: v for k, v in vars(importlib.import_module("operator")).items() if not k.startswith("__")
    },
    "pathway.internals.api": _engine_names,
    "pathway.engine": _engine_names,
    "pathway.internals.parse_graph": _parse_graph_extras,
    "pathway.internals.column": lambda: {"G": _ParseGraph()},  # tests import G from there too
}


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: Any) -> types.ModuleType:
        module = types.ModuleType(spec.name, f"pathway shim for {spec.name}")
        module.__path__ = []  # a package: any submodule may be imported
        _forward(module, _sparkway_module(spec.name))
        module.__dict__.update(EXTRAS[spec.name]() if spec.name in EXTRAS else {})
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class _SameModule(importlib.abc.Loader):
    """Loads a ``SAME_MODULES`` name as the sparkway module itself."""

    def create_module(self, spec: Any) -> types.ModuleType:
        return importlib.import_module(SAME_MODULES[spec.name])

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class _Finder(importlib.abc.MetaPathFinder):
    """Answers ``pathway.*`` imports, except Pathway's test files on disk."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if not fullname.startswith("pathway.") or fullname.split(".")[1] == "tests":
            return None
        if fullname in SAME_MODULES:
            return importlib.util.spec_from_loader(fullname, _SameModule())
        return importlib.util.spec_from_loader(fullname, _Loader(), is_package=True)


def become_pathway(namespace: dict[str, Any]) -> None:
    """Called by the stub ``pathway/__init__.py``: ``pathway`` forwards to sparkway."""
    import sparkway

    module = sys.modules[namespace["__name__"]]
    namespace.setdefault("__version__", "0.33.0")  # the Pathway version whose tests run
    _forward(module, sparkway)
    # our own helpers stand for Pathway's pathway/tests/utils.py, which is not extracted
    from compat import pathway_utils

    sys.modules["pathway.tests.utils"] = pathway_utils
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
