"""Compatibility runner: Pathway 0.33.0's own tests against sparkway (see runner.py)."""
