"""``pw.run``: computes every output defined so far."""

from __future__ import annotations

import contextlib
import enum
import inspect
import logging
import os
import sys
from typing import Any

from sparkway.api.graph import mark_ran, outputs, outputs_and_unused_tables
from sparkway.engine.runner import Runner, RunOptions
from sparkway.errors import traced
from sparkway.monitoring.http import MonitoringServer
from sparkway.persistence.config import Config
from sparkway.plan import nodes as n


class MonitoringLevel(enum.Enum):
    """What ``pw.run`` shows while it runs: a live view in the terminal with the rows of
    every source and output, the steps' durations and the running step's Spark tasks.

    ``AUTO`` (the default) and ``AUTO_ALL`` show it when standard output is a terminal;
    ``IN_OUT`` and ``ALL`` always (the last picture only, when it is not a terminal);
    ``ALL`` lists every running Spark stage; ``NONE`` shows nothing but the log.

    >>> import sparkway as pw
    >>> pw.run(monitoring_level=pw.MonitoringLevel.IN_OUT)  # doctest: +SKIP
    """

    AUTO = "auto"
    AUTO_ALL = "auto_all"
    NONE = "none"
    IN_OUT = "in_out"
    ALL = "all"

    def shows_view(self) -> bool:
        """Whether a run at this level shows the live view."""
        if self in (MonitoringLevel.AUTO, MonitoringLevel.AUTO_ALL):
            return sys.stdout.isatty() and os.environ.get("TERM", "") != "dumb"
        return self is not MonitoringLevel.NONE


def _configure_logging() -> None:
    """Log in the seeds' style, unless the program configured logging itself."""
    logger = logging.getLogger("sparkway")
    if logging.getLogger().handlers or logger.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[%(asctime)s]:%(levelname)s:%(message)s", "%Y-%m-%dT%H:%M:%S"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def run_outputs(
    selected: list[n.Output],
    *,
    persistence_config: Config | None = None,
    spark_master: str | None = None,
    terminate_on_error: bool | None = None,
    monitoring_level: MonitoringLevel = MonitoringLevel.NONE,
    with_http_server: bool = False,
    spark_ui: bool = False,
) -> None:
    _configure_logging()
    run_options = RunOptions(spark_master=spark_master, persistence=persistence_config, spark_ui=spark_ui)
    if terminate_on_error is None:  # Pathway's environment variable sets the default
        terminate_on_error = os.environ.get("PATHWAY_TERMINATE_ON_ERROR", "true").lower() not in ("0", "false", "no", "off")
    run_options.terminate_on_error = bool(terminate_on_error)
    mark_ran(selected)
    runner = Runner(selected, run_options)
    with contextlib.ExitStack() as watching:
        if with_http_server:
            watching.enter_context(MonitoringServer(runner.stats))
        if monitoring_level.shows_view():
            from sparkway.monitoring.dashboard import Dashboard  # rich: only for the view

            stages = monitoring_level in (MonitoringLevel.ALL, MonitoringLevel.AUTO_ALL)
            watching.enter_context(Dashboard(runner.stats, _program(), stages=stages))
        runner.run()


def _program() -> str:
    """The program's file name, as the live view's title shows it."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return os.path.basename(path) if path else "python"


@traced
def run(
    *,
    debug: bool = False,
    monitoring_level: MonitoringLevel = MonitoringLevel.AUTO,
    with_http_server: bool = False,
    default_logging: bool = True,
    persistence_config: Config | None = None,
    runtime_typechecking: bool | None = None,
    terminate_on_error: bool | None = None,
    max_expression_batch_size: int = 1024,
    event_loop: Any = None,
    udf_cache_directory: str | None = None,
    spark_master: str | None = None,
    spark_ui: bool = False,
) -> None:
    """Runs the program: reads the sources, computes, writes every output.

    Static sources finish after reading what they found; streaming ones poll until the
    process gets SIGINT or SIGTERM, which ends the run after the current step.
    ``terminate_on_error=False`` (or ``$PATHWAY_TERMINATE_ON_ERROR=0``) makes a value that
    breaks an operation an Error value (see ``pw.fill_error``, ``pw.global_error_log``)
    instead of stopping the run.
    ``monitoring_level`` chooses the live view (see ``pw.MonitoringLevel``);
    ``with_http_server=True`` serves the run's metrics for Prometheus on ``/metrics`` and
    ``/status`` (as Pathway) and as JSON on ``/status.json``, at port 20000
    (``$PATHWAY_MONITORING_HTTP_PORT``).
    ``spark_master`` (or ``$SPARKWAY_SPARK_MASTER``) selects Spark's master; an active
    SparkSession is used as it is.  ``spark_ui=True`` (or ``$SPARKWAY_SPARK_UI=1``) turns
    on Spark's web UI in the session sparkway starts, and logs its address.  The other
    parameters are Pathway's; sparkway takes them so that Pathway programs run, and a
    misspelled one is a TypeError, as in Pathway.

    >>> import sparkway as pw
    >>> pw.run(monitoring_level=pw.MonitoringLevel.NONE)  # doctest: +SKIP
    """
    _run(outputs(), persistence_config=persistence_config, spark_master=spark_master,
         terminate_on_error=terminate_on_error, monitoring_level=monitoring_level,
         with_http_server=with_http_server, spark_ui=spark_ui)


@traced
def run_all(**kwargs: Any) -> None:
    """``pw.run`` (with the same parameters) that also computes every table no output
    reads (their changes are discarded; a failure in them still stops the run).

    >>> import sparkway as pw
    >>> t = pw.debug.table_from_markdown("a\\n2\\n0")
    >>> unused = t.select(inverse=1 // pw.this.a)
    >>> try:
    ...     pw.run_all(monitoring_level=pw.MonitoringLevel.NONE)
    ... except ZeroDivisionError:
    ...     print("a row divides by zero")
    a row divides by zero
    """
    bound = inspect.signature(run).bind(**kwargs)  # a TypeError names a wrong one
    bound.apply_defaults()  # run's defaults (the live view in a terminal), not run_outputs'
    given = bound.arguments
    keep = ("persistence_config", "spark_master", "terminate_on_error", "monitoring_level", "with_http_server", "spark_ui")
    _run(outputs_and_unused_tables(), **{k: v for k, v in given.items() if k in keep})


run_all.__signature__ = inspect.signature(run)  # type: ignore[attr-defined]


def _run(selected: list[n.Output], **kwargs: Any) -> None:
    if not selected:  # as Pathway: nothing to compute is not an error, but likely a mistake
        _configure_logging()
        logging.getLogger("sparkway").warning(
            "nothing to run: no output is defined (e.g. pw.io.csv.write(table, 'out.csv'))"
        )
        return
    run_outputs(selected, **kwargs)
