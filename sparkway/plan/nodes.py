"""The logical plan: immutable nodes, each knowing its inputs and output columns.

Expressions inside a node refer to the node's inputs through ``InputRef(i)``: input 0 for
single-input nodes, 0 and 1 (left, right) for joins.  Every table has unique row ids
(the hidden column ``_id``, visible as ``id``); each node says how its output ids are made.
The engine compiles one node kind with one function (``sparkway.engine.operators``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sparkway.core.dtypes import DType
from sparkway.core.expression import Apply, Expr, walk
from sparkway.errors import user_frame, user_trace

#: the error logs of ``pw.local_error_log()`` blocks being built, innermost last
_local_error_logs: list["ErrorLog"] = []


@dataclass(frozen=True)
class InputRef:
    """Which input of a node a ``ColumnRef`` reads."""

    index: int
    _label: str = "input"


@dataclass(frozen=True, eq=False)
class Node:
    columns: dict[str, DType]
    #: ``file:line`` of the program that built this node, named in errors about it
    origin: str = field(default="", init=False, compare=False, repr=False)
    #: the user's line, as the error log's ``trace`` column shows it
    trace: str = field(default="", init=False, compare=False, repr=False)
    #: where Error values this node makes are logged: a local log, or None for the global one
    error_log: "ErrorLog | None" = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "origin", user_frame())
        object.__setattr__(self, "trace", user_trace())
        object.__setattr__(self, "error_log", _local_error_logs[-1] if _local_error_logs else None)

    @property
    def label(self) -> str:
        """How errors name this node: its kind and where the program built it."""
        return f"{self.kind.lower()} at {self.origin}" if self.origin else self.kind.lower()

    @property
    def inputs(self) -> tuple["Node", ...]:
        return ()

    @property
    def kind(self) -> str:
        return type(self).__name__

    @property
    def is_stateful(self) -> bool:
        return False

    def describe(self) -> dict[str, Any]:
        """Parameters that identify this node for the plan fingerprint (not its inputs)."""
        return {"columns": {k: stored_type(v) for k, v in self.columns.items()}}


# types whose stored form changed: state written before holds them as microseconds
_NANOSECOND_TYPES = re.compile(r"DateTimeNaive|DateTimeUtc|Duration")


def stored_type(kind: DType) -> str:
    """A column type as the plan fingerprint records it: its name, marked where its
    values are stored as nanoseconds, so that state written by a sparkway that stored
    them as microseconds is seen as another program's (and refused or rebuilt).

    >>> from sparkway.core import dtypes
    >>> stored_type(dtypes.INT), stored_type(dtypes.DType("list", (dtypes.DURATION,)))
    ('int', 'list[Duration] (nanoseconds)')
    """
    text = str(kind)
    return f"{text} (nanoseconds)" if _NANOSECOND_TYPES.search(text) else text


@dataclass(frozen=True, eq=False)
class Input(Node):
    source: Any  # sparkway.connectors.base.Source

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "source": self.source.name, "key": list(self.source.key_columns)}


@dataclass(frozen=True, eq=False)
class _Unary(Node):
    input: Node

    @property
    def inputs(self) -> tuple[Node, ...]:
        return (self.input,)


@dataclass(frozen=True, eq=False)
class Select(_Unary):
    """Computes every output column from the input row; keeps ids.

    Columns calling a non-deterministic function (``Apply.deterministic`` False: user
    functions by default, as in Pathway) are ``stored``: each row's values are kept until
    its deletion, which retracts them as they were inserted (the function is not called
    again).  Not when the input only ever inserts rows (nothing to retract)."""

    exprs: tuple[tuple[str, Expr], ...]

    @functools.cached_property
    def stored(self) -> tuple[str, ...]:
        if is_append_only(self.input):
            return ()
        return tuple(
            name for name, e in self.exprs
            if any(isinstance(x, Apply) and not x.deterministic for x in walk(e))
        )

    @property
    def is_stateful(self) -> bool:
        return bool(self.stored)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "stored": list(self.stored)} if self.stored else super().describe()


@dataclass(frozen=True, eq=False)
class Filter(_Unary):
    predicate: Expr


@dataclass(frozen=True, eq=False)
class RemoveErrors(_Unary):
    """Drops the rows that hold an Error value in any column; keeps ids."""


@dataclass(frozen=True, eq=False)
class AppendOnly(_Unary):
    """The insertions of the input: retractions are dropped, or with ``check`` they fail
    the run (``assert_append_only``; the failure says ``why`` the rows must only be
    inserted, when another operation needs it).  Keeps ids."""

    check: bool = False
    why: str = ""

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "check": self.check}


@dataclass(frozen=True, eq=False)
class ErrorLog(Node):
    """The errors logged while the program runs (``pw.global_error_log()``, or with
    ``local`` the errors of the nodes built in one ``pw.local_error_log()`` block):
    one row per error, never retracted.  Errors of nodes that read an error log are not
    logged in one (only in Python's log), so that a log never feeds itself."""

    local: bool = False

    @contextmanager
    def collecting(self) -> Iterator["ErrorLog"]:
        """Nodes built inside the block log their errors here."""
        _local_error_logs.append(self)
        try:
            yield self
        finally:
            _local_error_logs.remove(self)


@dataclass(frozen=True, eq=False)
class Flatten(_Unary):
    """One row per element of a list column; ids from (row id, position).

    ``origin_id`` names an added column holding the id of the flattened row."""

    column: str
    origin_id: str | None = None


@dataclass(frozen=True, eq=False)
class Reindex(_Unary):
    """New ids computed from values (``with_id_from``); ``keys`` empty keeps values' order.
    With ``use_pointer``, the one key is a pointer that becomes the id as it is (``with_id``)."""

    keys: tuple[Expr, ...]
    use_pointer: bool = False


@dataclass(frozen=True, eq=False)
class Concat(Node):
    tables: tuple[Node, ...]
    reindex: bool  # concat_reindex: ids from (position of the table, id)

    @property
    def inputs(self) -> tuple[Node, ...]:
        return self.tables


@dataclass(frozen=True)
class Aggregate:
    """One reducer column of a ``Reduce`` node."""

    kind: str  # count, sum, min, ... (see sparkway.engine.kernels.reduce)
    args: tuple[Expr, ...]
    params: tuple[Any, ...] = ()


class _Stateful:
    @property
    def is_stateful(self) -> bool:
        return True


@dataclass(frozen=True, eq=False)
class Reduce(_Stateful, _Unary):
    """Group by ``keys`` and aggregate; output columns are the keys then the aggregates.

    Output ids are the ids a row with the same key values gets from ``pointer_from``.
    """

    keys: tuple[tuple[str, Expr], ...]
    aggregates: tuple[tuple[str, Aggregate], ...]
    #: in a run keeping Error values: reducers leave Error values out (else give an Error)
    skip_errors: bool = True

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "keys": [k for k, _ in self.keys],
            "aggregates": {n: a.kind for n, a in self.aggregates},
        }


@dataclass(frozen=True, eq=False)
class Join(_Stateful, Node):
    """Rows of ``left`` and ``right`` with equal keys; outer kinds pad with nulls.

    Output columns are the left columns then the right columns (``columns`` names
    them ``l.<name>``/``r.<name>`` plus ``l.id``/``r.id``); a Select follows.
    """

    left: Node
    right: Node
    left_keys: tuple[Expr, ...]
    right_keys: tuple[Expr, ...]
    how: str  # inner, left, right, outer
    id_from: str | None = None  # "left" or "right": keep that side's ids
    # an interval join's (left time, right time, lower bound, upper bound): pairs match
    # when also lower <= right time - left time <= upper
    interval: tuple[Expr, Expr, Any, Any] | None = None
    # False (asof_now_join): a left row is joined once, with the right rows of the step
    # it arrives in, and is not kept; so its output rows never change.  This cannot be
    # built from the other operators: they are functions of the rows a table holds now,
    # and the answer depends on right rows that may have been deleted since
    keep_left: bool = True
    # per side (left, right): a row of that side joins at most once, ever (Pathway's
    # left_exactly_once / right_exactly_once): once matched it leaves the state, and the
    # pairs it made are never retracted; that side must be append-only
    exactly_once: tuple[bool, bool] = (False, False)

    @property
    def inputs(self) -> tuple[Node, ...]:
        return (self.left, self.right)

    def describe(self) -> dict[str, Any]:
        bounds = {"interval": [repr(b) for b in self.interval[2:]]} if self.interval is not None else {}
        once = {} if self.keep_left else {"keep_left": False}
        if any(self.exactly_once):
            once["exactly_once"] = list(self.exactly_once)
        return {**super().describe(), "how": self.how, "keys": len(self.left_keys), **bounds, **once}


@dataclass(frozen=True, eq=False)
class SessionWindow(_Stateful, _Unary):
    """Assigns each row to its session: adds ``_pw_instance``, ``_pw_window_start``,
    ``_pw_window_end``; a session is a maximal run of rows of one instance whose
    consecutive times are less than ``max_gap`` apart (Pathway: ``b - a < max_gap``).  Keeps ids."""

    time: Expr
    instance: Expr | None
    max_gap: Any

    def describe(self) -> dict[str, Any]:
        gap = getattr(self.max_gap, "__qualname__", None) or repr(self.max_gap)  # a predicate: by name
        return {**super().describe(), "max_gap": gap}


@dataclass(frozen=True, eq=False)
class Deduplicate(_Stateful, _Unary):
    """Per instance, keeps the last accepted row (``acceptor(new, old)`` decides)."""

    value: Expr
    instance: Expr | None
    acceptor: Any  # its code may change between runs: the state is kept (as in Pathway)


@dataclass(frozen=True, eq=False)
class TimeGate(_Stateful, _Unary):
    """Lets changes through by event time, against the operator's current time: the
    largest ``time`` its input has held so far (per ``instance``).  Keeps ids and columns.

    * ``ignore_late``: drops the changes whose ``threshold`` is at most the current time
      before their step;
    * ``forget``: as ``ignore_late``, and retracts each row once the current time before a
      step reaches its ``threshold`` (at the first step with input after that);
    * ``late_forget``: ``ignore_late`` followed by ``forget``, in one: it forgets only at
      steps with changes on time;
    * ``buffer``: holds each change until the current time, this step's included,
      reaches its ``threshold`` (the rest when the input ends);
    * ``forget_marked`` (``forget(..., mark_forgetting_records=True)``): lets every change
      through, and retracts each row whose ``threshold`` the time before a step reached
      in a step of its own right after it (a *forgetting step*, whose changes
      ``FilterOutForgetting`` drops).

    A step's changes all meet the time of the steps before it (Pathway: "the current time
    is updated after the operator processes all the data that arrived").  The whole
    state is one group, touched at every step with input: its rows are those within
    the threshold of the current time, few by design."""

    mode: str  # ignore_late, forget, late_forget, buffer, forget_marked
    threshold: Expr
    time: Expr
    instance: Expr | None

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "mode": self.mode}


@dataclass(frozen=True, eq=False)
class ToStream(_Unary):
    """The changes of the input as rows (``Table.to_stream``): at each time, per changed
    id, one row with its new values and ``upsert`` True, or (deleted) its last values and
    ``upsert`` False.  Keeps ids, so an id that changes at several times has several rows;
    the rows are never retracted."""

    upsert: str

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "upsert": self.upsert}


@dataclass(frozen=True, eq=False)
class StreamToTable(_Stateful, Node):
    """The table streams of changes describe, per id: the values of its latest upsert, no
    row after a deletion (``stream_to_table``: one stream, ``is_upsert`` tells upserts
    from deletions; ``from_streams``: a stream of upserts, then one of deletions, whose
    columns do not count).  Ids are the streams' ids."""

    tables: tuple[Node, ...]
    is_upsert: Expr | None = None

    @property
    def inputs(self) -> tuple[Node, ...]:
        return self.tables


@dataclass(frozen=True, eq=False)
class Snapshots(_Stateful, _Unary):
    """``unpack_snapshots``: at each time the input changes, every row it holds then,
    inserted under an id made of the row's id and the time; never retracted."""


@dataclass(frozen=True, eq=False)
class FilterOutForgetting(_Unary):
    """The input without the changes made by forgetting (``forget`` with
    ``mark_forgetting_records``): those of the steps that forget.  With ``consistent``
    (stateful), the rows it let through are kept per id, so that a later insertion first
    retracts the row shown under its id, and a retraction of a row not shown is dropped."""

    consistent: bool = False

    @property
    def is_stateful(self) -> bool:
        return self.consistent

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "consistent": self.consistent}


@dataclass(frozen=True, eq=False)
class Sort(_Stateful, _Unary):
    """Adds ``prev`` and ``next``: the ids of the neighbours in key order per instance."""

    key: Expr
    instance: Expr | None


@dataclass(frozen=True, eq=False)
class KeyedMerge(_Stateful, Node):
    """Combines tables by row id: ``update_rows``, ``update_cells``, ``difference``,
    ``intersect``, ``restrict`` (by the ids of ``tables[1]``, which must all be in
    ``tables[0]``), and ``ix`` (where ids come from a pointer column).

    ``ix`` gives, per row of the pointer holder (``tables[0]``), the looked-up row of
    ``tables[1]``.  With ``prefix`` set (``other.ix(t.p)`` read inside ``t``'s own
    ``select``), the holder's columns come along and the looked-up ones get the prefix.
    """

    tables: tuple[Node, ...]
    mode: str  # update_rows, update_cells, difference, intersect, restrict, ix
    keys: tuple[Expr | None, ...] = ()  # per table: the pointer to match on (None: its id)
    optional: bool = False  # ix(..., optional=True)
    prefix: str | None = None  # ix only: see above

    @property
    def inputs(self) -> tuple[Node, ...]:
        return self.tables

    def describe(self) -> dict[str, Any]:
        extra = {"prefix": self.prefix} if self.prefix is not None else {}
        return {**super().describe(), "mode": self.mode, **extra}


@dataclass(frozen=True, eq=False)
class IterationInput(Node):
    """Inside the body of an ``Iterate``: the current value of its input ``index``."""

    index: int

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "index": self.index}


@dataclass(frozen=True, eq=False)
class Iterate(_Stateful, Node):
    """The fixpoint of a body of nodes (``pw.iterate``): the body reads its inputs'
    current values through ``IterationInput`` nodes, and its ``results`` replace the
    inputs named by ``iterated`` until nothing changes, or ``limit`` times.  Inputs that
    no result replaces stay as they are.

    Its rows are the rows of every result, tagged: ``_input`` is the result's number and
    its columns are ``_<number>_<column>``; ``IterateResult`` nodes take them apart.
    """

    tables: tuple[Node, ...]
    results: tuple[Node, ...]
    iterated: tuple[int, ...]  # per result: the input it replaces
    limit: int | None

    @property
    def inputs(self) -> tuple[Node, ...]:
        return self.tables

    @property
    def body(self) -> list[Node]:
        """The nodes of the body, inputs first."""
        return topological(self.results)

    def describe(self) -> dict[str, Any]:
        body = [{"kind": x.kind, **x.describe()} for x in self.body]
        return {**super().describe(), "iterated": list(self.iterated), "limit": self.limit, "body": body}


@dataclass(frozen=True, eq=False)
class IterateResult(_Unary):
    """Result ``index`` of an ``Iterate``."""

    index: int


def is_append_only(node: Node) -> bool:
    """Whether the node's rows are only ever inserted, never retracted, as far as the plan
    can tell (Pathway's ``Table.is_append_only``): from sources that only insert, through
    operators that map each change to insertions."""
    match node:
        case Input(source=source):
            return bool(getattr(source, "append_only", False))
        case AppendOnly():
            return True
        case Select() | Filter() | Flatten() | Reindex():
            return is_append_only(node.input)
        case TimeGate(mode="ignore_late" | "buffer") | FilterOutForgetting():
            return is_append_only(node.input)
        case ToStream() | Snapshots():
            return True
        case Concat(tables=tables):
            return all(is_append_only(t) for t in tables)
        case Join(how="inner"):  # an outer join retracts a padded row when its match comes
            # a pair with an exactly-once row is never retracted
            return any(node.exactly_once) or (is_append_only(node.left) and is_append_only(node.right))
    return False


def is_bounded(node: Node) -> bool:
    """Whether every source the node reads is finite by construction (static mode), so
    that its whole contents can be computed before ``pw.run``."""
    seen, todo = set(), [node]
    while todo:  # a walk, not a recursion: plans share nodes and may be deep
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, Input) and not current.source.bounded:
            return False
        todo.extend(current.inputs)
    return True


@dataclass(frozen=True, eq=False)
class Output(_Unary):
    sink: Any  # sparkway.connectors.base.Sink, or a callback sink

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "sink": type(self.sink).__name__}


@dataclass
class Plan:
    """All nodes reachable from the outputs, in an order where inputs come first."""

    outputs: list[Output]
    nodes: list[Node] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.nodes = topological(self.outputs)

    def consumers(self) -> dict[int, int]:
        """How many nodes read each node (by ``id(node)``)."""
        counts: dict[int, int] = {}
        for node in self.nodes:
            for child in node.inputs:
                counts[id(child)] = counts.get(id(child), 0) + 1
        return counts


def topological(roots: "list[Node] | tuple[Node, ...]") -> list[Node]:
    """Every node reachable from ``roots``, each after its inputs."""
    ordered: list[Node] = []
    seen: set[int] = set()

    def visit(node: Node) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        for child in node.inputs:
            visit(child)
        ordered.append(node)

    for root in roots:
        visit(root)
    return ordered
