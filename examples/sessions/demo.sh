#!/usr/bin/env bash
# Pathway's user-sessions tutorial ("restart with new data"), end to end.
#
# In a fresh working directory, runs the persistent program script.py four times,
# adding log files between runs, and prints sessions.csv after each run:
#   run 1: logs/part_one.csv + logs/part_two.csv  -> all sessions
#   run 2: adds logs/part_three.csv                -> only bob's new session
#   run 3: adds logs/part_four.csv                 -> alice's session retracted and re-inserted
#   run 4: no new files                            -> no rows
# Each output is compared with the tutorial's expected output (ignoring the `time` column, row order
# and quoting); the script exits non-zero if a run fails or an output differs.
#
# Usage: demo.sh [-v] [DIR]
#   -v   also show each program run's own output (engine and Spark logs)
#   DIR  work in DIR (created if missing, must be empty) and keep it afterwards;
#        by default a temporary directory is used and removed at the end.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PYTHON="$ROOT/.venv/bin/python"
[ -x "$PYTHON" ] || { echo "demo: $PYTHON not found; run scripts/setup.sh first" >&2; exit 1; }
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$PYTHON}"

VERBOSE=0
if [ "${1:-}" = "-v" ]; then VERBOSE=1; shift; fi
if [ $# -gt 0 ]; then
    WORK="$1"
    mkdir -p "$WORK"
    [ -z "$(ls -A "$WORK")" ] || { echo "demo: $WORK is not empty" >&2; exit 1; }
    WORK="$(cd "$WORK" && pwd)"
else
    WORK="$(mktemp -d "${TMPDIR:-/tmp}/sparkway-sessions.XXXXXX")"
    trap 'rm -rf "$WORK"' EXIT
fi

cp "$HERE/script.py" "$WORK/"
mkdir "$WORK/logs"
echo "Working in $WORK"
echo

mismatches=0
run=0

# run_step TITLE [EXPECTED_ROW...]
# EXPECTED_ROW: user_id,session_length,session_start,session_finish,count,diff
run_step() {
    local title="$1" log t0 t1 expected actual header
    shift
    run=$((run + 1))
    log="$WORK/run-$run.log"
    echo "== run $run: $title =="
    t0=$(date +%s%N)
    if ! (cd "$WORK" && "$PYTHON" script.py) >"$log" 2>&1; then
        cat "$log" >&2
        echo "demo: run $run of script.py failed (its output is above)" >&2
        exit 1
    fi
    t1=$(date +%s%N)
    if [ "$VERBOSE" = 1 ]; then sed 's/^/  | /' "$log"; fi
    [ -f "$WORK/sessions.csv" ] || { echo "demo: run $run wrote no sessions.csv" >&2; exit 1; }
    cat "$WORK/sessions.csv"

    # every field is quoted, as Pathway writes CSV; a run with no rows leaves an empty file
    header="$(head -n 1 "$WORK/sessions.csv" | tr -d '"')"
    expected="$(printf '%s\n' "$@" | LC_ALL=C sort)"
    actual="$(tail -n +2 "$WORK/sessions.csv" | tr -d '"' | cut -d, -f1-5,7 | LC_ALL=C sort)"
    printf -- '-- %d.%01d s; ' $(((t1 - t0) / 1000000000)) $(((t1 - t0) / 100000000 % 10))
    if { [ -z "$expected" ] && [ ! -s "$WORK/sessions.csv" ]; } || {
        [ "$header" = "user_id,session_length,session_start,session_finish,count,time,diff" ] \
            && [ "$actual" = "$expected" ]; }; then
        echo "matches the tutorial"
    else
        mismatches=$((mismatches + 1))
        echo "DIFFERS from the tutorial, which has these rows (time column and quotes left out):"
        if [ -n "$expected" ]; then printf '%s\n' "$expected"; else echo "(none)"; fi
    fi
    echo
}

cat >"$WORK/logs/part_one.csv" <<'EOF'
user_id,access_time
alice,1701102730
bob,1701102743
alice,1701103035
bob,1701102774
bob,1701102805
alice,1701103037
EOF
cat >"$WORK/logs/part_two.csv" <<'EOF'
user_id,access_time
alice,1701103040
alice,1701103331
alice,1701103618
EOF
run_step "logs/part_one.csv and logs/part_two.csv, empty ./PStorage" \
    "alice,0,1701102730,1701102730,1,1" \
    "alice,583,1701103035,1701103618,5,1" \
    "bob,62,1701102743,1701102805,3,1"

cat >"$WORK/logs/part_three.csv" <<'EOF'
user_id,access_time
bob,1701104640
bob,1701104931
bob,1701105218
EOF
run_step "added logs/part_three.csv" \
    "bob,578,1701104640,1701105218,3,1"

cat >"$WORK/logs/part_four.csv" <<'EOF'
user_id,access_time
alice,1701103338
alice,1701103629
alice,1701103916
EOF
run_step "added logs/part_four.csv" \
    "alice,583,1701103035,1701103618,5,-1" \
    "alice,881,1701103035,1701103916,8,1"

run_step "no new files (a rerun without new input outputs no rows)"

if [ "$mismatches" -gt 0 ]; then
    echo "demo: $mismatches of $run runs differ from the tutorial" >&2
    exit 1
fi
echo "All $run runs match the tutorial."
