"""The public API layer: schemas, expressions, tables, reducers, windows, run."""
