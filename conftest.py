"""Fixtures for every test, the package's docstring examples included."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _fresh_program():
    """Each test (and each docstring example) defines its own outputs: ``pw.run`` must not
    also run what an earlier example built and left unrun."""
    from sparkway.api import graph

    graph.clear()
    yield
    graph.clear()
