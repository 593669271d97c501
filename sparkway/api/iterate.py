"""``pw.iterate``: apply a function of tables to its own result until nothing changes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Callable

from sparkway.api.table import Table, Universe
from sparkway.core import dtypes as dt
from sparkway.errors import PlanError
from sparkway.plan import nodes as n


class iterate_universe:  # noqa: N801 - Pathway's name
    """Marks an argument of ``pw.iterate`` whose rows may come and go between rounds
    (without it, an iterated table must keep its rows: only their values change).

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("x\\n1\\n2\\n3")
    >>> def drop_smallest(t):
    ...     smallest = t.reduce(x=pw.reducers.min(t.x))
    ...     return t.filter(t.x != smallest.ix_ref().x)
    >>> pw.debug.compute_and_print(pw.iterate(drop_smallest, t=pw.iterate_universe(t)), include_id=False)
    x
    """

    def __init__(self, table: Table) -> None:
        self.table = table


def iterate(func: Callable[..., Any], iteration_limit: int | None = None, **kwargs: Table | iterate_universe) -> Any:
    """The fixpoint of ``func``: called on the tables given as keyword arguments, it
    returns new values for some of them (a table, a tuple of tables matched to the first
    arguments in order, or a dict of tables by argument name); these replace the
    arguments and ``func``'s computation runs again, until nothing changes or
    ``iteration_limit`` rounds ran.  Returns the final values in the shape ``func`` returns.

    >>> import sparkway as pw
    >>> def halve(t):
    ...     return t.select(v=pw.if_else(t.v % 2 == 0, t.v // 2, t.v))
    >>> t = pw.debug.table_from_markdown("v\\n12\\n7\\n40")
    >>> pw.debug.compute_and_print(pw.iterate(halve, t=t), include_id=False)
    v
    3
    5
    7
    """
    if iteration_limit is not None and iteration_limit < 1:
        raise ValueError(f"iteration_limit must be at least 1, not {iteration_limit}")
    tables, free = _arguments(kwargs)
    names = list(tables)
    copies = _copies(tables, free)
    returned = func(**copies)
    results = _results(returned, names)
    missing = free - results.keys()
    if missing:
        raise ValueError(f"not all arguments marked as iterated returned from iteration: {sorted(missing)}")
    for name, result in results.items():
        results[name] = _checked(name, result, tables[name], copies[name], name in free)
    _check_reads_only_arguments(results)
    node = n.Iterate(
        _tagged_columns(results), tuple(t._node for t in tables.values()),
        tuple(r._node for r in results.values()), tuple(names.index(k) for k in results), iteration_limit,
    )
    outputs = {
        name: Table(n.IterateResult(dict(result._node.columns), node, k),
                    universe=Universe() if name in free else tables[name]._universe)
        for k, (name, result) in enumerate(results.items())
    }
    if isinstance(returned, Table):
        return outputs[names[0]]
    if isinstance(returned, Mapping):
        return outputs
    return tuple(outputs.values())


def _arguments(kwargs: dict[str, Any]) -> tuple[dict[str, Table], set[str]]:
    tables, free = {}, set()
    for name, arg in kwargs.items():
        if isinstance(arg, iterate_universe):
            arg, _ = arg.table, free.add(name)
        if not isinstance(arg, Table):
            raise TypeError(f"{name} has to be a Table instead of {type(arg).__name__}")
        tables[name] = arg
    return tables, free


def _copies(tables: dict[str, Table], free: set[str]) -> dict[str, Table]:
    """What ``func`` sees: the current value of each argument.  Arguments that share
    their rows outside share them inside, unless their rows may change."""
    universes: dict[int, Universe] = {}
    copies = {}
    for index, (name, table) in enumerate(tables.items()):
        universe = Universe() if name in free else universes.setdefault(id(table._universe), Universe())
        copies[name] = Table(n.IterationInput(dict(table._node.columns), index), table._label, universe=universe)
    return copies


def _results(returned: Any, names: list[str]) -> dict[str, Table]:
    if isinstance(returned, Table):
        return {names[0]: returned}
    if isinstance(returned, Mapping):
        unknown = returned.keys() - set(names)
        if unknown:
            raise ValueError(f"pw.iterate: the function returned tables for {sorted(unknown)}, which are not its arguments")
        return {k: returned[k] for k in names if k in returned}
    if isinstance(returned, Sequence) and len(returned) <= len(names):
        return dict(zip(names, returned))
    raise TypeError("the function given to pw.iterate has to return a Table, a tuple of Tables or a dict of Tables")


def _checked(name: str, result: Table, table: Table, copy: Table, free: bool) -> Table:
    """The result with the argument's columns in the argument's order."""
    if not isinstance(result, Table):
        raise TypeError(f"pw.iterate: the function returned {type(result).__name__} for {name!r}, not a Table")
    expected, got = dict(table._node.columns), dict(result._node.columns)
    if expected != got:
        raise ValueError(
            f"output: {got} of the iterated function does not correspond to the input {name!r}: {expected}"
        )
    same_rows = result._universe.is_subset_of(copy._universe) and copy._universe.is_subset_of(result._universe)
    if not free and not same_rows:
        raise ValueError(
            f"iterated table {name!r} not marked as 'iterate_universe' changed its universe: pass "
            f"{name}=pw.iterate_universe(table) when rows may be added or removed between rounds"
        )
    return result.select(*[result[c] for c in table._node.columns])


def _check_reads_only_arguments(results: dict[str, Table]) -> None:
    outside = [x for x in n.topological([r._node for r in results.values()])
               if not x.inputs and not isinstance(x, n.IterationInput)]
    if outside:
        raise PlanError(
            f"the function given to pw.iterate reads a table built outside it (at {outside[0].origin}): "
            "pass that table to pw.iterate as a keyword argument and use the function's argument"
        )


def _tagged_columns(results: dict[str, Table]) -> dict[str, dt.DType]:
    """The ``Iterate`` node's columns: the result's number, and every result's columns."""
    columns = {"_input": dt.INT}
    for k, result in enumerate(results.values()):
        columns |= {f"_{k}_{c}": kind for c, kind in result._node.columns.items()}
    return columns
