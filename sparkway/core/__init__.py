"""What every layer shares: column types, expression nodes, type rules, schema columns,
the change shape and exact durations.  It imports no other layer but ``errors``."""
