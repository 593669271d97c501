"""``pw.csv``: the old place of ``pw.io.csv``, kept for old programs.

Pathway 0.33 no longer has ``pw.csv``, but the programs of the seed documents (written
for an older Pathway) use it and expect its warning, so it stays, warning as it did.
"""

from __future__ import annotations

import warnings
from typing import Any


def _moved() -> None:
    warnings.warn("pathway.csv has been moved to pathway.io.csv", UserWarning, stacklevel=3)


def read(*args: Any, **kwargs: Any) -> Any:
    """Same as ``pw.io.csv.read``."""
    from sparkway.io import csv

    _moved()
    return csv.read(*args, **kwargs)


def write(*args: Any, **kwargs: Any) -> Any:
    """Same as ``pw.io.csv.write``."""
    from sparkway.io import csv

    _moved()
    return csv.write(*args, **kwargs)
