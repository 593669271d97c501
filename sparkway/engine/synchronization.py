"""Input synchronization groups (``pw.io.register_input_synchronization_group``).

The step loop reads a synchronized source's input as usual, then hands its transactions
to the ``Synchronizer``, which decides which rows reach the engine in this step; the
others stay *held*, in order, until the group lets them through.  The rules are
Pathway's: per group there is a bound, and a source's next row passes when its value is
at most the bound and no active source of higher priority is behind that value.  The
bound is the smallest, over the active sources, of "the largest value read from it plus
``max_difference``, or its next held value if larger", never below the largest value
read so far; when every active source waits and none fits, the smallest next value of
the sources of the highest priority becomes the bound (a gap all sources jump over is a
new baseline, not a deadlock).  A source is *idle*, and left out, when it holds no rows
and has had no input for its ``idle_duration`` or is finished.

A source's rows pass in the order they were read, a transaction at a time: rows the
group let through count as read (they move the bound) but reach the engine with the
rest of their transaction.  Everything is vectorised per source: the running maximum
of the held values tells, by a binary search, how many rows fit under a bound.

Held rows belong to the committed state: a persistent run writes them (an Arrow file per
source, named by the step) before the step's commit, whose record names the files and
holds the groups' bounds, so a restart continues with exactly the held rows, and a
replayed step, given the idle sources its log recorded, decides as the first run did.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkway.connectors.base import Source
from sparkway.core.changes import conform
from sparkway.errors import PlanError
from sparkway.persistence.storage import BlobStorage

log = logging.getLogger("sparkway")

#: the column of a stored file of held rows numbering their transactions
_TRANSACTION = "_pw_sync_transaction"
_LOWEST = np.iinfo(np.int64).min  # a null value (an Error value) is never held back


@dataclass
class _Held:
    """A source's rows read but not yet handed to the engine, in reading order."""

    rows: pa.Table | None = None
    values: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    #: where each held transaction ends (row offsets, increasing)
    ends: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    #: leading rows the group let through, waiting for the rest of their transaction
    approved: int = 0
    #: the step whose file holds these rows (persistent runs), None: no file
    stored_at: int | None = None
    changed: bool = False
    _running_max: tuple[int, np.ndarray] | None = None  # (from row, running maximum from it)

    @property
    def count(self) -> int:
        return len(self.values)

    def head(self) -> int | None:
        """The next value waiting for the group's approval."""
        return int(self.values[self.approved]) if self.approved < self.count else None

    def append(self, transactions: Iterable[pa.Table], column: str) -> None:
        """Holds the rows of these transactions after the ones held."""
        new = [t for t in transactions if t.num_rows]
        if not new:
            return
        names = (self.rows if self.rows is not None else new[0]).column_names
        new = [t.select(names) for t in new]
        ends = self.count + np.cumsum([t.num_rows for t in new], dtype=np.int64)
        self.ends = np.concatenate([self.ends, ends])
        self.values = np.concatenate([self.values, *(_values(t, column) for t in new)])
        self.rows = pa.concat_tables(new if self.rows is None else [self.rows, *new])
        self.changed, self._running_max = True, None

    def fitting(self, bound: int) -> int:
        """How many rows after the approved ones have no value above ``bound`` before them."""
        start = self.approved
        cached = self._running_max
        if cached is None or cached[0] > start or (start > cached[0] and cached[1][start - cached[0] - 1] > bound):
            cached = (start, np.maximum.accumulate(self.values[start:]))
            self._running_max = cached
        base, running = cached
        return int(np.searchsorted(running, bound, side="right")) - (start - base)

    def release(self) -> pa.Table | None:
        """The rows of the transactions approved in full, taken out of the held ones."""
        complete = int(np.searchsorted(self.ends, self.approved, side="right"))
        done = int(self.ends[complete - 1]) if complete else 0
        if done == 0:
            return None
        assert self.rows is not None
        released, self.rows = self.rows.slice(0, done), self.rows.slice(done)
        self.values, self.ends, self.approved = self.values[done:], self.ends[self.ends > done] - done, self.approved - done
        self.changed, self._running_max = True, None
        if self.count == 0:
            self.rows = None
        return released

    def stored(self) -> pa.Table:
        """The held rows with their transaction numbers, as a file keeps them."""
        assert self.rows is not None
        numbers = np.repeat(np.arange(len(self.ends)), np.diff(self.ends, prepend=0))
        return self.rows.append_column(_TRANSACTION, pa.array(numbers, pa.int64()))

    @classmethod
    def of_stored(cls, table: pa.Table, column: str | None, approved: int, stored_at: int) -> "_Held":
        """Held rows read back from their file; ``column`` None: a source no longer
        synchronized, whose values do not matter."""
        numbers = table.column(_TRANSACTION).to_numpy()
        rows = table.drop_columns([_TRANSACTION])
        values = np.zeros(rows.num_rows, np.int64) if column is None else _values(rows, column)
        ends = np.append(np.flatnonzero(np.diff(numbers)) + 1, len(numbers)).astype(np.int64)
        return cls(rows, values, ends, approved, stored_at)


@dataclass
class _Member:
    """A source in a group, with what the group knows of it."""

    name: str
    column: str
    priority: int
    idle_s: float | None
    held: _Held = field(default_factory=_Held)
    last: int | None = None  # the largest value let through
    input_at: float = 0.0  # time.monotonic() of its last input (for idleness)


@dataclass
class _Group:
    name: str
    max_difference: int
    members: list[_Member]
    bound: int | None = None


class Synchronizer:
    """The synchronization groups of a run, and the rows they hold."""

    def __init__(self, groups: list[_Group]) -> None:
        self.groups = groups
        self.members = {m.name: m for g in groups for m in g.members}
        #: rows held by sources no longer in a group (a restart after the program changed): let through
        self.orphans: dict[str, _Held] = {}

    @classmethod
    def of(cls, sources: list[Source], now: float) -> "Synchronizer | None":
        """The groups the sources were registered in; None when there are none."""
        by_name: dict[str, list[Source]] = {}
        for source in sources:
            if source.synchronization is not None:
                by_name.setdefault(source.synchronization.group, []).append(source)
        groups = []
        for name, members in by_name.items():
            differences = {s.synchronization.max_difference for s in members if s.synchronization}
            if len(differences) > 1:
                raise PlanError(
                    f"window length differs for two definitions of the same synchronization group: group {name!r} "
                    f"is registered with max_difference {sorted(differences)}; give every call naming this group "
                    "the same max_difference, or another name="
                )
            groups.append(_Group(name, differences.pop(), [
                _Member(s.name or "", s.synchronization.column, s.synchronization.priority,
                        s.synchronization.idle_duration_s, input_at=now)
                for s in members if s.synchronization
            ]))
        return cls(groups) if groups else None

    def holds(self, source: str) -> bool:
        """Whether the source's rows go through this synchronizer."""
        return source in self.members or source in self.orphans

    # -- a step ---------------------------------------------------------------------------
    def idle(self, now: float, finished: set[str], arriving: set[str]) -> list[str]:
        """The sources that hold nobody back while they hold no rows: finished ones, and
        those without input for their idle duration (not those with input now)."""
        return sorted(
            m.name for m in self.members.values()
            if m.name not in arriving and (m.name in finished or (m.idle_s is not None and now - m.input_at >= m.idle_s))
        )

    def step(self, read: dict[str, list[pa.Table]], idle: list[str], now: float) -> dict[str, pa.Table | None]:
        """The rows each source hands the engine in this step (None: none), given the
        transactions read from it now; the rest is held."""
        released: dict[str, pa.Table | None] = {}
        for name, held in self.orphans.items():
            released[name] = _concat([held.rows, *read.get(name, [])])
        self.orphans = {}
        for name, transactions in read.items():
            member = self.members.get(name)
            if member is None:
                continue
            if any(t.num_rows for t in transactions):
                member.input_at = now
            member.held.append(transactions, member.column)
        for group in self.groups:
            _settle(group, set(idle))
        released.update({m.name: m.held.release() for m in self.members.values()})
        return released

    def would_release(self, idle: list[str]) -> bool:
        """Whether a step without new input would hand the engine rows (a source became
        idle or finished, or rows of sources no longer synchronized wait)."""
        if any(h.count for h in self.orphans.values()):
            return True
        for group in self.groups:
            saved = (group.bound, [(m.held.approved, m.last) for m in group.members])
            _settle(group, set(idle))
            releases = any(m.held.approved and m.held.approved >= m.held.ends[0] for m in group.members)
            group.bound = saved[0]
            for member, (approved, last) in zip(group.members, saved[1]):
                member.held.approved, member.last = approved, last
            if releases:
                return True
        return False

    @property
    def holding(self) -> int:
        """How many rows are held."""
        return sum(m.held.count for m in self.members.values()) + sum(h.count for h in self.orphans.values())

    # -- persistence ------------------------------------------------------------------------
    def save(self, storage: BlobStorage, step: int) -> dict[str, Any]:
        """Writes the held rows that changed in ``step``; returns the state the step's
        commit records."""
        members: dict[str, Any] = {}
        for member in self.members.values():
            held = member.held
            if held.changed:
                held.stored_at = None
                if held.count:
                    storage.write_arrow(_held_file(member.name, step), held.stored())
                    held.stored_at = step
                held.changed = False
            members[member.name] = {"last": member.last, "approved": held.approved, "stored_at": held.stored_at}
        return {"bounds": {g.name: g.bound for g in self.groups}, "members": members}

    def restore(self, storage: BlobStorage, state: dict[str, Any], schemas: dict[str, pa.Schema]) -> None:
        """Continues from the state a commit recorded; ``schemas``: what each source's
        ``read`` gives in this run."""
        bounds = state.get("bounds", {})
        for group in self.groups:
            group.bound = bounds.get(group.name)
        for name, record in state.get("members", {}).items():
            member = self.members.get(name)
            if member is None and name not in schemas:
                continue  # the source is gone from the program
            held = _Held()
            if record["stored_at"] is not None:
                table = storage.read_arrow(_held_file(name, record["stored_at"]))
                if name in schemas:
                    table = conform(table, schemas[name].append(pa.field(_TRANSACTION, pa.int64())))
                column = member.column if member is not None else None
                held = _Held.of_stored(table, column, record["approved"], record["stored_at"])
            if member is None:
                if held.count:
                    log.info("%s: %d held row(s) of a source no longer synchronized are let through", name, held.count)
                    self.orphans[name] = held
                continue
            member.held, member.last = held, record["last"]
            if held.count:
                log.info("%s: %d row(s) held by the synchronization group %r", name, held.count, _group_of(self, name))

    def clean(self, storage: BlobStorage) -> None:
        """Deletes the files of held rows no committed state names (after a commit)."""
        for folder in storage.list():
            member = self.members.get(_unsafe(folder))
            keep = None if member is None else member.held.stored_at
            for name in storage.list(folder):
                if keep is None or name != f"{keep:016d}.arrow":
                    storage.delete(f"{folder}/{name}")


def _settle(group: _Group, idle: set[str]) -> None:
    """Lets rows of the group's sources through, round after round, until none more fits."""
    while True:
        bound = _bound(group, idle)
        if bound is not None:
            group.bound = bound
        moved = False
        for member in sorted(group.members, key=lambda m: -m.priority):
            limit = _limit(group, member, idle)
            if limit is None or member.held.head() is None:
                continue
            fitting = member.held.fitting(limit)
            if fitting > 0:
                held = member.held
                top = int(held.values[held.approved:held.approved + fitting].max())
                held.approved += fitting
                if top != _LOWEST:
                    member.last = top if member.last is None else max(member.last, top)
                moved = True
        if not moved:
            return


def _is_idle(member: _Member, idle: set[str]) -> bool:
    return member.name in idle and member.held.head() is None


def _bound(group: _Group, idle: set[str]) -> int | None:
    """The group's bound now: None when it cannot be told (an active source has not read
    anything yet), and then the previous bound holds."""
    active = [m for m in group.members if not _is_idle(m, idle)]
    if not active:
        return None
    lowest: int | None = None
    for member in active:
        reach = [v for v in (member.last + group.max_difference if member.last is not None else None,
                             member.held.head()) if v is not None]
        if not reach:
            return None
        lowest = max(reach) if lowest is None else min(lowest, max(reach))
    assert lowest is not None
    lasts = [m.last for m in group.members if m.last is not None]
    bound = max(lowest, *lasts) if lasts else lowest
    heads = [(m, h) for m in active if (h := m.held.head()) is not None]
    if len(heads) == len(active) and not any(h <= bound and not _behind(group, h, m.priority, idle) for m, h in heads):
        top = max(m.priority for m in active)
        bound = max(bound, min(h for m, h in heads if m.priority == top))
    return bound


def _behind(group: _Group, value: int, priority: int, idle: set[str]) -> bool:
    """Whether an active source of higher priority has not yet read up to ``value``."""
    return any(
        m.priority > priority and not _is_idle(m, idle) and (m.last is None or m.last < value) for m in group.members
    )


def _limit(group: _Group, member: _Member, idle: set[str]) -> int | None:
    """The largest value of ``member`` that may pass now: the bound, and no more than
    the sources of higher priority have read."""
    limit = group.bound
    for other in group.members:
        if other.priority > member.priority and not _is_idle(other, idle):
            if other.last is None:
                return None
            limit = other.last if limit is None else min(limit, other.last)
    return limit


def _values(rows: pa.Table, column: str) -> np.ndarray:
    """The synchronized column's values as int64 (date-times and durations are
    nanoseconds already); a null (an Error value) is never held back."""
    values = pc.fill_null(rows.column(column).combine_chunks(), _LOWEST)
    return values.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def _concat(tables: list[pa.Table | None]) -> pa.Table | None:
    present = [t for t in tables if t is not None and t.num_rows]
    if not present:
        return None
    return pa.concat_tables([t.select(present[0].column_names) for t in present])


def _group_of(synchronizer: Synchronizer, name: str) -> str:
    return next(g.name for g in synchronizer.groups if any(m.name == name for m in g.members))


def _held_file(source: str, step: int) -> str:
    return f"{_safe(source)}/{step:016d}.arrow"


def _safe(name: str) -> str:
    """A source name as a folder name, reversibly."""
    return "".join(c if c.isalnum() or c in "-_" else f"~{ord(c):04x}" for c in name)


def _unsafe(folder: str) -> str:
    parts = folder.split("~")
    return parts[0] + "".join(chr(int(p[:4], 16)) + p[4:] for p in parts[1:])
