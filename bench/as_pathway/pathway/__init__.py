"""``import pathway`` answered by sparkway, so that bench/time_to_result.py runs the same
program files under Pathway and under sparkway (this folder is on sparkway's runs'
``PYTHONPATH`` only)."""

import sys

import sparkway

sys.modules[__name__] = sparkway
