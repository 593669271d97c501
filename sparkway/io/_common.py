"""What every ``pw.io`` connector shares."""

from __future__ import annotations

from sparkway.errors import PlanError


def persistent_name(name: str | None, persistent_id: str | None) -> str | None:
    """The source's persistent id: ``name=``, or its older spelling ``persistent_id=``."""
    if persistent_id is not None and name is not None and persistent_id != name:
        raise PlanError("give name= or its older spelling persistent_id=, not both")
    return name if name is not None else persistent_id
