"""The program being built: the outputs ``pw.run`` will compute."""

from __future__ import annotations

import itertools

from sparkway.plan import nodes as n

_outputs: list[n.Output] = []
_source_sequence = itertools.count()


def add_output(output: n.Output) -> None:
    _outputs.append(output)


def outputs() -> list[n.Output]:
    return list(_outputs)


def next_source_sequence() -> int:
    """Sources without a persistent id are named in the order they were created."""
    return next(_source_sequence)


def clear() -> None:
    """Forget every output defined so far (tests build several programs in one process)."""
    _outputs.clear()
