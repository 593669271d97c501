"""``pw.persistence``: ``Backend``, ``Config`` and ``PersistenceMode``."""

from sparkway.persistence.config import Backend, Config, PersistenceMode
from sparkway.persistence.metadata import PlanChangedError, StorageInUseError

__all__ = ["Backend", "Config", "PersistenceMode", "PlanChangedError", "StorageInUseError"]
