"""Pathway's process-wide settings: ``pw.set_license_key`` and ``pw.set_monitoring_config``."""

from __future__ import annotations

import os
from dataclasses import dataclass

from sparkway.errors import warn_user


@dataclass
class Settings:
    """What the program set; sparkway reads none of it (see the functions)."""

    license_key: str | None = None
    monitoring_server: str | None = None
    detailed_metrics_dir: str | None = None


settings = Settings()


def set_license_key(key: str | None) -> None:
    """Keeps a Pathway licence key, so that Pathway programs run unchanged; sparkway has no
    features behind a licence, so the key changes nothing.

    >>> import sparkway as pw
    >>> pw.set_license_key("demo-license-key-with-telemetry")
    """
    settings.license_key = key


def set_monitoring_config(*, server_endpoint: str | None = None, detailed_metrics_dir: str | os.PathLike | None = None) -> None:
    """Pathway's OpenTelemetry export of metrics.  sparkway does not export metrics this
    way: a given endpoint or directory is kept and a warning says it is not used.

    >>> import sparkway as pw
    >>> pw.set_monitoring_config()  # clears the settings
    """
    settings.monitoring_server = server_endpoint
    settings.detailed_metrics_dir = None if detailed_metrics_dir is None else str(detailed_metrics_dir)
    if server_endpoint is not None or detailed_metrics_dir is not None:
        warn_user("sparkway does not export metrics to an OTLP endpoint or a metrics directory; the monitoring configuration is not used")
