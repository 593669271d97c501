"""Sources and sinks, and the interfaces the step loop drives them through."""
