"""Decoding a hidden Markov model (HMM) over a stream of observations, as a reducer."""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from sparkway.api.reducers import BaseCustomAccumulator


def create_hmm_reducer(graph: Any, beam_size: int | None = None, num_results_kept: int | None = None) -> type:
    """An accumulator for ``pw.reducers.udf_reducer`` that decodes the most likely states
    of the HMM ``graph`` (a ``networkx.DiGraph``) for the observations reduced, in the
    order they arrived (Viterbi's algorithm).

    The graph's nodes are the states, each with ``calc_emission_log_ppb(observation)``
    (the log-probability of the observation in that state); its edges have a
    ``log_transition_ppb``; ``graph.graph["start_nodes"]`` are the possible first states.
    ``beam_size`` keeps only that many most likely states after each observation;
    ``num_results_kept`` limits the decoded path to that many last states. The result is
    the tuple of states. Observations are taken in the order of their times (rows of one
    time in the order of their ids).

    >>> import networkx as nx
    >>> import sparkway as pw
    >>> g = nx.DiGraph()
    >>> g.add_node("A", calc_emission_log_ppb=lambda o: np.log(0.9 if o == "a" else 0.1))
    >>> g.add_node("B", calc_emission_log_ppb=lambda o: np.log(0.9 if o == "b" else 0.1))
    >>> for u in "AB":
    ...     for v in "AB":
    ...         g.add_edge(u, v, log_transition_ppb=np.log(0.5))
    >>> g.graph["start_nodes"] = ["A", "B"]
    >>> seen = pw.debug.table_from_markdown("o | __time__\\na | 2\\nb | 4\\nb | 6")
    >>> decode = pw.reducers.udf_reducer(create_hmm_reducer(g))
    >>> pw.debug.compute_and_print(seen.reduce(states=decode(pw.this.o)), include_id=False)
    states
    ('A', 'B', 'B')
    """
    states = list(graph.nodes())
    number = {state: i for i, state in enumerate(states)}
    emissions = [graph.nodes[state]["calc_emission_log_ppb"] for state in states]
    transitions = [
        [(number[target], graph.get_edge_data(state, target)["log_transition_ppb"]) for target in graph.successors(state)]
        for state in states
    ]
    starts = [number[state] for state in graph.graph["start_nodes"]]
    beam = beam_size if beam_size is not None else len(states) + 1

    class HmmAccumulator(BaseCustomAccumulator):
        """The decoding so far: each state's best log-probability, the states still
        followed, and per observation the best predecessor of each state."""

        def __init__(self, observation: Any) -> None:
            self.observation = observation
            self.scores = np.full(len(states), -np.inf)
            for start in starts:
                self.scores[start] = emissions[start](observation)
            self.followed = list(starts)
            self.predecessors: deque[dict[int, int]] = deque()
            self.path = (states[int(self.scores.argmax())],)

        @classmethod
        def from_row(cls, row: list[Any]) -> "HmmAccumulator":
            return cls(row[0])

        def update(self, other: "HmmAccumulator") -> None:
            best: dict[int, tuple[float, int]] = {}
            for source in self.followed:
                for target, log_transition in transitions[source]:
                    reached = (self.scores[source] + log_transition, source)
                    if target not in best or reached > best[target]:
                        best[target] = reached
            scores = np.full(len(states), -np.inf)
            for target, (score, _) in best.items():
                scores[target] = emissions[target](other.observation) + score
            followed = list(best)
            if len(followed) > beam:
                followed = sorted(followed, key=lambda s: scores[s])[-beam:]
            self.scores, self.followed = scores, followed
            self.predecessors.append({target: source for target, (_, source) in best.items()})
            if num_results_kept is not None and len(self.predecessors) >= num_results_kept:
                self.predecessors.popleft()
            path = [int(scores.argmax())]
            for back in reversed(self.predecessors):
                path.append(back[path[-1]])
            self.path = tuple(states[s] for s in reversed(path))

        def compute_result(self) -> tuple:
            return self.path

    return HmmAccumulator
