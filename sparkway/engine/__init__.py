"""Execution on Spark: the step loop, expression and operator compilation, Arrow kernels."""

from sparkway.engine import iterate  # noqa: E402,F401 - registers the compiler of Iterate nodes
