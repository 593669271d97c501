#!/usr/bin/env bash
# Quick start 2: install everything (scripts/setup.sh, with the test servers), then run the whole
# pytest suite on the newest Spark, and its `releases` share on Spark 3.5 and 4.0.
# Arguments are passed to pytest, e.g. ./scripts/test.sh -k sessions -x (then no older
# release runs unless SPARKWAY_RELEASES names it, e.g. SPARKWAY_RELEASES=3.5).
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
PYTEST=(-m pytest -q -n 2 --dist worksteal)
rc=0
"$ROOT/.venv/bin/python" "${PYTEST[@]}" "$@" || rc=$?
if [ "$rc" -eq 5 ]; then
    echo "test.sh: pytest collected no tests; that counts as a failure" >&2
fi

# The older Spark releases sparkway supports run the tests marked `releases` (seeds,
# oracle, corpus, crashes and restarts, local-cluster, Spark Connect), each in a virtual
# environment of its own (scripts/release-venv.sh). By default after the whole suite;
# with arguments (a narrower run), only when SPARKWAY_RELEASES names them.
if [ $# -eq 0 ]; then RELEASES="${SPARKWAY_RELEASES-3.5 4.0}"; else RELEASES="${SPARKWAY_RELEASES-}"; fi
for release in $RELEASES; do
    venv="$(bash "$ROOT/scripts/release-venv.sh" "$release")"
    echo "test.sh: the tests marked 'releases' on pyspark $("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)')"
    release_rc=0
    PYTHONPATH="$ROOT" PYSPARK_PYTHON="$venv/bin/python" SPARKWAY_COMPAT=0 \
        "$venv/bin/python" "${PYTEST[@]}" -m releases "$@" || release_rc=$?
    if [ "$release_rc" -ne 0 ]; then
        echo "test.sh: the tests on pyspark $release failed (pytest exit code $release_rc)" >&2
        [ "$rc" -ne 0 ] || rc="$release_rc"
    fi
done
exit "$rc"
