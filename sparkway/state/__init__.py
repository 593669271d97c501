"""Versioned keyed state of stateful operators, per partition."""
