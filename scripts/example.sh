#!/usr/bin/env bash
# Quick start 1: install everything (scripts/setup.sh), then run the sessions
# example of seeds 002/003 end to end: four runs of one persistent program,
# printing its output file after each run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"

export SPARK_LOCAL_IP=127.0.0.1
export PYSPARK_PYTHON="$ROOT/.venv/bin/python"
exec bash "$ROOT/examples/sessions/demo.sh" "$@"
