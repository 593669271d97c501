"""The package's layers import one way: each layer only the layers that
docs/architecture.md says it may import (the test reads the table there)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "sparkway"
DOC = ROOT / "docs" / "architecture.md"


def allowed_imports() -> dict[str, set[str]]:
    """Layer -> the layers it may import, from the table under "## Layers" in the doc."""
    section = DOC.read_text().split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    table = {}
    for row in rows:
        layer, _, may_import = [cell.strip() for cell in row.strip("|").split("|")][:3]
        table[layer.strip("`")] = set(re.findall(r"`([a-z_]+)`", may_import))
    return table


def layer_of(module: str) -> str:
    """``sparkway.engine.runner`` -> ``engine``; the package's own ``__init__`` -> ``sparkway``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "sparkway"


def imported_modules(path: Path) -> set[str]:
    """Every sparkway module a file imports, at the top or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("sparkway")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sparkway"):
            found |= {f"{node.module}.{a.name}" if node.module == "sparkway" else node.module for a in node.names}
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_every_layer_is_in_the_table() -> None:
    table = allowed_imports()
    layers = {layer_of(module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert layers <= set(table), f"layers missing from docs/architecture.md: {sorted(layers - set(table))}"
    assert table["errors"] == set() and "sparkway" in table


def test_imports_run_one_way() -> None:
    table = allowed_imports()
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = layer_of(module_name(path))
        for target in sorted(imported_modules(path)):
            there = layer_of(target)
            if there != here and there not in table[here]:
                wrong.append(f"{path.relative_to(ROOT)} ({here}) imports {target} ({there})")
    assert not wrong, "imports against the layers of docs/architecture.md:\n" + "\n".join(wrong)


def test_the_checker_sees_a_wrong_import(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text("def f():\n    from sparkway.api.table import Table\n")
    assert imported_modules(source) == {"sparkway.api.table"}
    assert "api" not in allowed_imports()["core"]


def test_every_reducer_has_one_type_rule_and_one_kernel() -> None:
    import inspect

    import sparkway as pw
    from sparkway.core.expression import ReducerExpr
    from sparkway.core.type_rules import REDUCER_TYPES
    from sparkway.engine.kernels.reduce import _AGGREGATORS

    assert set(REDUCER_TYPES) == set(_AGGREGATORS)
    public = [
        f for name, f in vars(pw.reducers).items()
        if inspect.isfunction(f) and f.__module__ == pw.reducers.__name__ and not name.startswith("_")
    ]
    kinds = set()
    for reducer in public:
        made = reducer(pw.this.a)
        if not isinstance(made, ReducerExpr):  # a decorator (stateful_many...) makes the reducer
            made = made(pw.this.a)
        kinds.add(made.kind)
    assert kinds == set(REDUCER_TYPES)
