"""Execution on Spark: the step loop, expression and operator compilation, Arrow kernels."""
