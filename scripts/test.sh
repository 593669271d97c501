#!/usr/bin/env bash
# Quick start 2: install everything (scripts/setup.sh, with the test servers), then run the whole
# pytest suite. Arguments are passed to pytest, e.g. ./scripts/test.sh -k sessions -x
# Exits non-zero when a test fails and also when no test ran (pytest exit code 5).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh" --test-services  # also the servers the tests start
cd "$ROOT"

export SPARK_LOCAL_IP=127.0.0.1
export PYSPARK_PYTHON="$ROOT/.venv/bin/python"
# Pathway's own tests against sparkway (tests/compat): fail below the recorded pass count
export SPARKWAY_COMPAT="${SPARKWAY_COMPAT:-1}"

# two test processes, each with its own SparkSession: most end-to-end tests wait on the
# programs they run, which the other process's tests use the time of (-n 0: one process);
# an idle one takes tests queued for the other (worksteal), so that the long crash tests
# do not end the run alone
rc=0
"$ROOT/.venv/bin/python" -m pytest -q -n 2 --dist worksteal "$@" || rc=$?
if [ "$rc" -eq 5 ]; then
    echo "test.sh: pytest collected no tests; that counts as a failure" >&2
fi
exit "$rc"
