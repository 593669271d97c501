"""``pw.pandas_transformer``: a function of pandas DataFrames applied to whole tables.

Each input table is gathered into one row (a ``reduce`` into a tuple of its rows), the
function runs in a Spark UDF on the DataFrames made of these rows, and its result is
flattened back into rows whose ids are the result's index. So the transformer is part of
the plan like any other operator (incremental: a change of an input recomputes the whole
result, and only the rows that changed are output), but every change costs the whole
tables, which is what it means to apply a pandas function.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sparkway.api import reducers
from sparkway.api.debug import table_from_pandas
from sparkway.api.functions import apply_with_type, make_tuple
from sparkway.api.schema import Schema
from sparkway.api.table import Table
from sparkway.api.thisclass import this
from sparkway.core import dtypes as dt
from sparkway.stdlib.utils.col import _rows_by_id

PandasFunction = Callable[..., pd.DataFrame | pd.Series]


def _universe_argument(parameters: list[str], output_universe: str | int | None) -> int | None:
    """The position of the argument whose ids the output has (``output_universe``)."""
    if isinstance(output_universe, str):
        if output_universe not in parameters:
            raise ValueError(f"pandas_transformer: output_universe {output_universe!r} names no argument of {parameters}")
        return parameters.index(output_universe)
    if output_universe is not None and not 0 <= output_universe < len(parameters):
        raise ValueError(
            f"pandas_transformer: output_universe {output_universe} is no argument's position (0 to {len(parameters) - 1})"
        )
    return output_universe


def _checked_output(
    result: pd.DataFrame | pd.Series, names: list[str], universe_of: pd.DataFrame | None
) -> pd.DataFrame:
    """The function's result as a DataFrame with the output's column names, after
    checking that its index can be the output's ids."""
    frame = pd.DataFrame(result) if isinstance(result, pd.Series) else result.copy()
    frame.columns = names
    if not frame.index.is_unique:
        raise ValueError("pandas_transformer: the index of the resulting DataFrame (the output's ids) must be unique")
    if universe_of is not None and set(frame.index) != set(universe_of.index):
        raise ValueError(
            "pandas_transformer: the resulting DataFrame's index does not match the ids of the argument "
            "named by output_universe"
        )
    return frame


def _python_value(value: Any) -> Any:
    """A pandas cell as the plain Python value the output column stores."""
    if isinstance(value, np.generic):
        return value.item()
    return None if value is pd.NA or value is pd.NaT else value


def _gathered(tables: Sequence[Table]) -> Table:
    """One row holding, per table, the tuple of its rows ``(id, *values)`` (column
    ``_pw_<i>``; None for an empty table but the first, whose emptiness leaves no row)."""
    gathered = []
    for position, table in enumerate(tables):
        rows = table.select(_pw_row=make_tuple(table.id, *(table[name] for name in table.column_names())))
        gathered.append(rows.reduce(**{f"_pw_{position}": reducers.sorted_tuple(rows._pw_row)}))
    first, *others = gathered
    for other in others:  # reduce() gives every table's row the same id
        joined = first.join_left(other, first.id == other.id)
        first = joined.select(*(first[name] for name in first.column_names()), *(other[n] for n in other.column_names()))
    return first


def _transform(
    func: PandasFunction, tables: Sequence[Table], schema: type[Schema], universe_argument: int | None
) -> Table:
    """The output table of ``func`` applied to ``tables``, computed in the engine."""
    names = [t.column_names() for t in tables]
    output_names = schema.column_names()  # the function runs on executors: no schema class in it

    def apply_to_frames(*all_rows: Sequence[tuple]):  # unannotated: its type is given to apply_with_type
        frames = [
            pd.DataFrame([row[1:] for row in rows or ()], index=[row[0] for row in rows or ()], columns=columns)
            for rows, columns in zip(all_rows, names)
        ]
        universe_of = frames[universe_argument] if universe_argument is not None else None
        frame = _checked_output(func(*frames), output_names, universe_of)
        if len(frame.index) and not pd.api.types.is_integer_dtype(frame.index):
            raise ValueError(
                "pandas_transformer: the index of the resulting DataFrame holds the output's ids: keep "
                f"the input's index or use integers, not {frame.index.dtype} values"
            )
        return [tuple(_python_value(v) for v in (key, *row)) for key, row in zip(frame.index, frame.itertuples(index=False))]

    gathered = _gathered(tables)
    row_type = list[tuple[(dt.Pointer, *schema._dtypes().values())]]  # type: ignore[misc]
    columns = [gathered[f"_pw_{i}"] for i in range(len(tables))]
    applied = gathered.select(_pw_rows=apply_with_type(apply_to_frames, row_type, *columns))
    output = _rows_by_id(applied.flatten(this._pw_rows)._pw_rows, output_names)
    return output.with_universe_of(tables[universe_argument]) if universe_argument is not None else output


def pandas_transformer(
    output_schema: type[Schema], output_universe: str | int | None = None
) -> Callable[[PandasFunction], Callable[..., Table]]:
    """Turns a function of pandas DataFrames into a function of tables.

    Each argument table becomes a DataFrame indexed by the rows' ids; the result (a
    DataFrame or a Series, whose columns are given the names of ``output_schema``)
    becomes a table whose ids are its index, which must be unique integers: the ids of
    input rows, or any integers. ``output_universe`` (an argument's name or position)
    says that the result has exactly that argument's ids. The function runs again on
    the whole tables whenever one of them changes. A function without arguments runs
    once, when the table is built.

    >>> import pandas as pd
    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown('''
    ...   | foo | bar
    ... 0 | 10  | 100
    ... 1 | 20  | 200
    ... ''')
    >>> class Output(pw.Schema):
    ...     total: int
    >>> @pw.pandas_transformer(output_schema=Output)
    ... def sum_cols(df: pd.DataFrame) -> pd.DataFrame:
    ...     return pd.DataFrame(df.sum(axis=1))
    >>> pw.debug.compute_and_print(sum_cols(t), include_id=False)
    total
    110
    220
    """

    def decorator(func: PandasFunction) -> Callable[..., Table]:
        parameters = list(inspect.signature(func).parameters)

        @functools.wraps(func)
        def transformer(*tables: Table) -> Table:
            universe_argument = _universe_argument(parameters, output_universe)
            if tables:
                output = _transform(func, tables, output_schema, universe_argument)
            else:  # a generator: its constant result is a table of its own
                output = table_from_pandas(_checked_output(func(), output_schema.column_names(), None), schema=output_schema)
            return output.update_types(**output_schema._dtypes())

        return transformer

    return decorator
