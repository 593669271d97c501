"""The immutable logical plan built by the API and compiled by the engine."""
