#!/usr/bin/env bash
# Records the expected outputs of tests/corpus/programs by running them under real
# Pathway 0.33.0, the oracle. Pathway lives in its own virtual environment (.venv-pathway),
# never in the project's. Arguments: program names (or parts of names); all by default.
#   ./scripts/record-corpus.sh                 # every program
#   ./scripts/record-corpus.sh csv_output      # the programs whose name contains csv_output
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-pathway"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import pathway" 2>/dev/null; then
    python3 -m venv "$VENV"
    # psycopg and pytest: the programs that write to PostgreSQL start the tests' server
    "$VENV/bin/pip" install --quiet "pathway==0.33.0" "psycopg[binary]" pytest
fi
cd "$ROOT"
exec "$VENV/bin/python" tests/corpus/record.py "$@"
