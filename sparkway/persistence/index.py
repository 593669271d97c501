"""Source positions that grow with the input's history, stored as an index of layers.

A file source's position maps every file it has read to where it stopped: at 20,000
files a commit record holding it whole wrote (and fsynced) 5 MB at every step, however
little the step read.  Such a map (an ``IndexedPosition``) is stored in *layers*
instead, JSON files under ``positions/<source>/<first step>-<last step>.json``:

* a *base*: every entry as of its last step (its first step is 0);
* *deltas*: the entries that the steps from first to last changed (null: removed).

The commit record names the layers of each such source (``"indexes"``), base first;
the map is the base with the deltas applied in order.  A layer is written and fsynced
before the commit that names it: until that commit is durable the previous one, whose
layers are untouched, is the one a restart reads, so the commit record is the one
pointer switched.  A layer is deleted only once a durable commit no longer names it
(``prune``).

A step that changed entries writes one layer, so that what it writes is proportional to
what it changed, amortized:

* its changes merged with the newest deltas as long as these are at most twice as
  large: each delta is then more than twice the size of the next one, so there are at
  most log2(base) of them to read at a restart, and an entry is rewritten a logarithmic
  number of times;
* or a new base, once the deltas (with the step's changes) hold more entries than the
  base: the base is rewritten after at least as many entries as it holds were written.

Spark's CompactibleFileStreamLog compacts its file log every N batches instead, which
rewrites the whole log every N batches however little they changed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

from sparkway.errors import PersistenceError
from sparkway.persistence.faults import fault_point
from sparkway.persistence.storage import BlobStorage, damaged

FOLDER = "positions"


@dataclass
class IndexedPosition:
    """A source's position whose entry ``key`` maps each item read (a file) to where the
    source stopped in it: ``rest`` is the position without that entry, ``changes`` the
    items changed since the last commit (None: removed), ``whole()`` the whole map
    (read when a new base is written; not modified)."""

    rest: dict[str, Any]
    key: str
    changes: dict[str, Any]
    whole: Callable[[], dict[str, Any]]


@dataclass(frozen=True)
class Layer:
    first: int  # the first step whose changes it holds; 0: a base, every entry
    last: int  # the step that wrote it
    entries: int

    @property
    def name(self) -> str:
        return f"{self.first:016d}-{self.last:016d}.json"

    def record(self) -> dict[str, int]:
        return {"first": self.first, "last": self.last, "entries": self.entries}

    @classmethod
    def of(cls, record: dict[str, Any]) -> "Layer":
        return cls(int(record["first"]), int(record["last"]), int(record["entries"]))


class PositionIndex:
    """The layers of the indexed positions of a storage's sources."""

    def __init__(self, storage: BlobStorage) -> None:
        self.storage = storage

    def write(self, source: str, step: int, position: IndexedPosition, layers: list[Layer] | None) -> list[Layer]:
        """Writes what step ``step`` changed in the source's map, given the layers of the
        last commit (None: it has none, its position was stored whole); returns the layers
        the step's commit names."""
        if layers is None or sum(d.entries for d in layers[1:]) + len(position.changes) > layers[0].entries:
            return [self._write_base(source, step, position.whole())]
        if not position.changes:
            return layers
        deltas, merged, first = layers[1:], dict(position.changes), step
        while deltas and deltas[-1].entries <= 2 * len(merged):
            older = deltas.pop()
            merged = {**self.read_layer(source, older, None), **merged}  # the newer change wins
            first = older.first
        layer = Layer(first, step, len(merged))
        self._put(source, layer, merged)
        fault_point("metadata.index.delta.written")
        return [layers[0], *deltas, layer]

    def _write_base(self, source: str, step: int, entries: dict[str, Any]) -> Layer:
        layer = Layer(0, step, len(entries))
        self._put(source, layer, entries)
        fault_point("metadata.index.base.written")
        return layer

    def _put(self, source: str, layer: Layer, entries: dict[str, Any]) -> None:
        record = {"source": source, **layer.record(), "items": entries}
        self.storage.write_bytes(self._path(source, layer), _dumps(record))

    def read(self, source: str, layers: list[Layer], commit: str) -> dict[str, Any]:
        """The map the layers make, as the commit ``commit`` (a path) names them."""
        whole: dict[str, Any] = {}
        for layer in layers:
            for key, value in self.read_layer(source, layer, commit).items():
                if value is None:
                    whole.pop(key, None)
                else:
                    whole[key] = value
        return whole

    def read_layer(self, source: str, layer: Layer, commit: str | None) -> dict[str, Any]:
        """A layer's entries; a missing or damaged layer is an error naming it (never an
        empty position: the source would read all its input again)."""
        relative = self._path(source, layer)
        try:
            record = self.storage.read_json(relative)
        except FileNotFoundError:
            named = f"the last commit ({commit})" if commit else "the last commit"
            raise PersistenceError(
                f"cannot read {self.storage.path(relative)}: the file is missing, and {named} needs it for the "
                f"position of the source {source!r}; the persisted state was damaged (a file deleted): restore it "
                "from a backup, or delete the persistence folder to compute the state again from the input"
            ) from None
        entries = record.get("items") if isinstance(record, dict) else None
        if not isinstance(entries, dict) or len(entries) != layer.entries or _layer_in(record) != layer:
            raise damaged(self.storage.path(relative), ValueError(f"not the layer {layer.record()} of the position"))
        return entries

    def prune(self, source: str, layers: list[Layer], step: int) -> None:
        """Deletes the source's layers up to step ``step`` that ``layers`` (a durable
        commit's) do not name: replaced ones, and those of a commit a crash prevented."""
        kept = {layer.name for layer in layers}
        folder = f"{FOLDER}/{_folder(source)}"
        for name in self.storage.list(folder):
            if name not in kept and _last_step(name) <= step:
                self.storage.delete(f"{folder}/{name}")

    def _path(self, source: str, layer: Layer) -> str:
        return f"{FOLDER}/{_folder(source)}/{layer.name}"


def layers_of(record: dict[str, Any]) -> list[Layer]:
    """The layers a commit record names for one source (``"indexes"``): a base, then
    deltas; ValueError when they are not."""
    layers = [Layer.of(layer) for layer in record["layers"]]
    if not layers or layers[0].first != 0 or any(layer.first == 0 for layer in layers[1:]):
        raise ValueError(f"the layers of a position are a base, then deltas, not {record['layers']}")
    return layers


def _layer_in(record: dict[str, Any]) -> Layer | None:
    """The layer a file says it is (None when it does not)."""
    try:
        return Layer.of(record)
    except (KeyError, TypeError, ValueError):
        return None


def _dumps(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode()


def _last_step(name: str) -> float:
    """The step that wrote a layer file, from its name; infinite for another file (kept)."""
    stem = name.removesuffix(".json").rpartition("-")[2]
    return int(stem) if stem.isdigit() else float("inf")


def _folder(source: str) -> str:
    """A source's name as a folder name: distinct names give distinct folders."""
    return "".join(c if c.isalnum() or c in "-_" else f"~{ord(c):04x}" for c in source)
