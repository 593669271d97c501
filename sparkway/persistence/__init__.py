"""``pw.persistence``: ``Backend`` and ``Config``."""

from sparkway.persistence.config import Backend, Config
from sparkway.persistence.metadata import PlanChangedError, StorageInUseError

__all__ = ["Backend", "Config", "PlanChangedError", "StorageInUseError"]
