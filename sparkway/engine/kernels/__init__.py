"""Vectorized Arrow kernels of the stateful operators.

Each kernel is a pure function of the rows of the groups a step touched: it receives, per
input, an Arrow table whose ``_g`` column numbers the group (the engine passes the old and
the new rows of each group under different ``_g``) and returns the output rows with their
``_g``.  The engine diffs old against new output (``sparkway.engine.stateful``).
"""
