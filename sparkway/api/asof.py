"""As-of joins: each row of one table with the row of the other table that is nearest in
time (``t.asof_join(other, t.time, other.time, *on, how=..., direction=...)``).

They are built from the general operators, so they are incremental and persistent like
them: per output row's side, a left join on the ``on`` keys pairs each row with every row
of the other table (its candidates); a reduce per row picks the latest candidate before it
and the earliest after it; a join brings the chosen one's columns.  A step costs in
proportion to the candidates of the touched keys, so rows with many rows of the other
table under one key (or a join without ``on``) are costly.

Which row is a row's peer, as in Pathway 0.33 (where both tables are sorted by
``(time, side, id)`` and a row's peer is the nearest row of the other table in that order):

* ``BACKWARD``: the other table's latest row at or before the row's time, ``FORWARD``: its
  earliest at or after, ``NEAREST``: the closer of these two, the later one on a tie;
* a row of the other table at the very same time counts when the other table sorts first
  at equal times: the right table in a backward left join and in a forward right join,
  the left table otherwise (so in outer joins an equal time pairs a right row with the
  left one, in the direction of the join, and not the other way round);
* among rows of the other table with the same time, one is chosen by id (ids are not
  Pathway's, so with such ties the chosen row may differ from Pathway's).
"""

from __future__ import annotations

from typing import Any

from sparkway.api import reducers
from sparkway.api.functions import if_else
from sparkway.api.table import JoinResult, Table, _join_sides, _placeholders_as_this, bind, join_keys
from sparkway.api.temporal import Direction, asof_behavior, check_time_types
from sparkway.api.thisclass import this
from sparkway.core.expression import Coalesce, ColumnRef, Const, Expr, MakeTuple, transform, wrap
from sparkway.errors import PlanError
from sparkway.plan import nodes as n

__all__ = ["AsofJoinResult", "Direction", "asof_join"]

# columns of an as-of join's result that ``pw.this`` reads besides the tables' columns:
# the key values the rows were matched on, the row's own time, and which table the row
# comes from (False: the left one)
RESULT_COLUMNS = ("instance", "t", "side")
# the input position the result's own columns are bound to while a select is bound
_RESULT_INPUT = 2


def asof_join(
    left: Table, right: Table, left_time: Any, right_time: Any, on: tuple, how: Any,
    defaults: dict | None, direction: Direction, left_instance: Any, right_instance: Any,
    behavior: Any = None,
) -> "AsofJoinResult":
    """The rows of ``left`` (left join), of ``right`` (right join) or of both (outer join),
    each with its peer of the other table (see the module's docstring), each table
    through the gates of ``behavior`` (``pw.temporal.common_behavior``)."""
    mode = getattr(how, "value", how)
    if mode not in ("left", "right", "outer"):
        raise PlanError(f"an asof join is a left, right or outer join, not {mode!r}: use how=pw.JoinMode.LEFT, RIGHT or OUTER")
    if not isinstance(direction, Direction):
        raise PlanError(f"direction= takes pw.temporal.Direction.BACKWARD, FORWARD or NEAREST, not {direction!r}")
    if (left_instance is None) != (right_instance is None):
        raise PlanError("give both left_instance= and right_instance=, or neither")
    if left_instance is not None:
        on = (*on, left_instance == right_instance)
    left_time, right_time = _placeholders_as_this(left_time), _placeholders_as_this(right_time)
    check_time_types({"t_left": (left, left_time), "t_right": (right, right_time)})
    left_keys, right_keys = join_keys(left, right, on)
    gated = (asof_behavior(left, left_time, behavior), asof_behavior(right, right_time, behavior))
    right_first = (direction == Direction.BACKWARD and mode == "left") or (direction == Direction.FORWARD and mode == "right")
    peer_defaults = _defaults_by_side(left, right, defaults or {})
    sides = (
        _Side(gated[0], left_time, left_keys, "_l_", False, not right_first),
        _Side(gated[1], right_time, right_keys, "_r_", True, right_first),
    )
    parts = []
    if mode in ("left", "outer"):
        parts.append(_rows_with_peers(sides[0], sides[1], direction, peer_defaults[1]))
    if mode in ("right", "outer"):
        parts.append(_rows_with_peers(sides[1], sides[0], direction, peer_defaults[0]))
    merged = parts[0] if len(parts) == 1 else parts[0].concat_reindex(parts[1])
    if behavior is not None and behavior.cutoff is not None and behavior.keep_results:
        merged = merged.filter_out_results_of_forgetting()
    return AsofJoinResult(left, right, merged, mode)


class _Side:
    """One table of the join: its time, its keys, and how its columns are named in the result."""

    def __init__(self, table: Table, time: Expr, keys: list[Expr], prefix: str, flag: bool, first: bool) -> None:
        self.table, self.time, self.keys, self.prefix = table, time, keys, prefix
        self.flag = flag  # the result's ``side`` column
        self.first = first  # sorts before the other table's rows of the same time

    def columns(self) -> list[str]:
        return list(self.table._node.columns)


def _defaults_by_side(left: Table, right: Table, defaults: dict) -> tuple[dict[str, Any], dict[str, Any]]:
    """``defaults`` ({column: value}) as {column name: value} per side."""
    sides = _join_sides(left, right)
    cols = [left._node.columns, right._node.columns]
    found: tuple[dict[str, Any], dict[str, Any]] = ({}, {})
    for column, value in defaults.items():
        bound = bind(wrap(column), sides, None, cols)
        if not (isinstance(bound, ColumnRef) and isinstance(bound.table, n.InputRef)):
            raise PlanError(f"defaults= maps columns of the joined tables to values, not {column!r}")
        found[bound.table.index][bound.name] = value
    return found


def _rows_with_peers(own: _Side, other: _Side, direction: Direction, defaults: dict[str, Any]) -> Table:
    """``own``'s rows, each with its peer's columns (None, or the default, without a
    peer), in the result's columns.  Three stateful steps: the pairs of a row and its
    candidates (a left join), the best candidate per row (a reduce), its columns (a join)."""
    keys = {f"_pw_k{i}": k for i, k in enumerate(own.keys)}
    instance = Const(None) if not own.keys else own.keys[0] if len(own.keys) == 1 else MakeTuple(tuple(own.keys))
    own_columns = [own.prefix + c for c in own.columns()]
    peer_columns = [other.prefix + c for c in other.columns()]
    rows = own.table.select(
        instance=instance, t=own.time, side=Const(own.flag), **keys,
        **{name: ColumnRef(this, c) for name, c in zip(own_columns, own.columns())},
    )
    candidates = other.table.select(
        _pw_t=other.time, **{f"_pw_k{i}": k for i, k in enumerate(other.keys)},
        **{name: ColumnRef(this, c) for name, c in zip(peer_columns, other.columns())},
    )
    # a row without candidates under its keys still has a pair (with a None candidate)
    pairs = rows.join_left(candidates, *(ColumnRef(rows, k) == ColumnRef(candidates, k) for k in keys)).select(
        *(ColumnRef(rows, c) for c in ("instance", "t", "side", *own_columns)),
        _pw_row=ColumnRef(rows, "id"), _pw_t=ColumnRef(candidates, "_pw_t"), _pw_peer=ColumnRef(candidates, "id"),
        **{c: ColumnRef(candidates, c) for c in peer_columns},
    )
    chosen = _pick_pair(pairs, own.first, direction)
    found = ColumnRef(chosen, "_pw_found")
    peer = {
        c: Coalesce((if_else(found, ColumnRef(pairs, c), Const(None)), Const(defaults[name]))) if name in defaults
        else if_else(found, ColumnRef(pairs, c), Const(None))
        for c, name in zip(peer_columns, other.columns())
    }
    result = {
        **{c: ColumnRef(pairs, c) for c in ("instance", "t", "side", *own_columns)},
        **peer,
        own.prefix + "id": ColumnRef(pairs, "_pw_row"),
        other.prefix + "id": if_else(found, ColumnRef(pairs, "_pw_peer"), Const(None)),
    }
    order = ["instance", "t", "side", *sorted([*own_columns, *peer_columns], key=lambda c: c[:3]), "_l_id", "_r_id"]
    joined = chosen.join(pairs, ColumnRef(chosen, "_pw_pair") == ColumnRef(pairs, "id"), id=ColumnRef(chosen, "id"))
    return joined.select(**{c: result[c] for c in order})


def _pick_pair(pairs: Table, own_first: bool, direction: Direction) -> Table:
    """Per row (ids: ``pointer_from`` of its id), ``_pw_pair``: one of its pairs, the one
    with its peer when ``_pw_found``."""
    own_t, peer_t = ColumnRef(this, "t"), ColumnRef(this, "_pw_t")
    # a candidate at the row's own time is before the row when the other table sorts first
    before = peer_t < own_t if own_first else peer_t <= own_t
    after = peer_t >= own_t if own_first else peer_t > own_t
    # a pair without a peer has no time (the type rules compare times that are never None)
    peer_if = lambda holds: if_else(peer_t.is_not_none(), if_else(holds, peer_t, Const(None)), Const(None))  # noqa: E731
    scored = pairs.select(
        ColumnRef(this, "_pw_row"), ColumnRef(this, "t"), _pw_before=peer_if(before), _pw_after=peer_if(after),
    )
    row, t = ColumnRef(scored, "_pw_row"), ColumnRef(scored, "t")
    before_t, after_t = ColumnRef(scored, "_pw_before"), ColumnRef(scored, "_pw_after")
    # argmax/argmin put None last: they give a pair of the row even without candidates
    best = scored.groupby(row, t).reduce(
        _pw_prev=reducers.argmax(before_t), _pw_prev_t=reducers.max(before_t),
        _pw_next=reducers.argmin(after_t), _pw_next_t=reducers.min(after_t), t=t,
    )
    prev, prev_t = ColumnRef(this, "_pw_prev"), ColumnRef(this, "_pw_prev_t")
    nxt, next_t = ColumnRef(this, "_pw_next"), ColumnRef(this, "_pw_next_t")
    if direction == Direction.BACKWARD:
        return best.select(_pw_pair=prev, _pw_found=prev_t.is_not_none())
    if direction == Direction.FORWARD:
        return best.select(_pw_pair=nxt, _pw_found=next_t.is_not_none())
    closer_before = ColumnRef(this, "t") - prev_t < next_t - ColumnRef(this, "t")
    pair = if_else(next_t.is_none(), prev, if_else(prev_t.is_none(), nxt, if_else(closer_before, prev, nxt)))
    return best.select(_pw_pair=pair, _pw_found=prev_t.is_not_none() | next_t.is_not_none())


class AsofJoinResult(JoinResult):
    """The result of an as-of join; ``select`` reads the left and right tables' columns
    (``pw.left``, ``pw.right``, the tables), and ``pw.this.instance``, ``pw.this.t`` and
    ``pw.this.side``: the row's key values, its own time, and False for rows of the left
    table, True for rows of the right one."""

    def __init__(self, left: Table, right: Table, merged: Table, how: str) -> None:
        self._left, self._right = left, right
        self._shared: set[str] = set()
        self._aliases = {}  # no tables joined before (JoinResult's chains)
        self._how = how
        self._node = merged._node
        self._universe = merged._universe
        self._id_type = merged._id_type

    def _bind_pair(self, expr: Any) -> Expr:
        def result_column(e: Expr) -> Expr | None:
            if isinstance(e, ColumnRef) and e.table is this and e.name in RESULT_COLUMNS:
                return ColumnRef(n.InputRef(_RESULT_INPUT), e.name)
            return None

        def to_merged(e: Expr) -> Expr | None:
            if isinstance(e, ColumnRef) and isinstance(e.table, n.InputRef) and e.table.index == _RESULT_INPUT:
                return ColumnRef(n.InputRef(0), e.name)
            return None

        return transform(super()._bind_pair(transform(wrap(expr), result_column)), to_merged)
