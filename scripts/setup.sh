#!/usr/bin/env bash
# Install what sparkway needs, idempotently:
#   - a Java runtime (17+) for Spark, from apt if `java` is missing;
#   - .venv at the repo root with the project installed: pip install -e . (what a
#     program needs; scripts/example.sh);
#   - with --test-services (scripts/test.sh passes it): also the test extras
#     (pip install -e ".[test]") and the servers the tests start, i.e. PostgreSQL
#     (apt package postgresql) when no initdb can be found.
# Silent when everything is already in place. Run it from any directory;
# the other scripts call it (they do not source it), so it exports nothing.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

PY="${SPARKWAY_PYTHON:-python3}"
VENV=.venv

say() { echo "setup: $*" >&2; }
die() { echo "setup: error: $*" >&2; exit 1; }

TEST_SERVICES=0
for arg in "$@"; do
    case "$arg" in
        --test-services) TEST_SERVICES=1 ;;
        *) die "unknown argument '$arg' (known: --test-services)" ;;
    esac
done

# Run as root directly, otherwise through sudo.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "need root (or sudo) to run: $*"
    fi
}

apt_install() {
    command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install $* by hand"
    say "installing $* with apt-get"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# --- Java ---------------------------------------------------------------------
if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
    JAVA="$JAVA_HOME/bin/java"
else
    if ! command -v java >/dev/null 2>&1; then
        apt_install openjdk-17-jre-headless
        command -v java >/dev/null 2>&1 || die "java still not on PATH after installing openjdk-17-jre-headless"
    fi
    JAVA=java
fi
# `java -version` prints e.g. 'openjdk version "17.0.15" ...' or '"1.8.0_392"'.
java_major="$("$JAVA" -version 2>&1 | sed -nE '1s/.*version "(1\.)?([0-9]+).*/\2/p')"
if [ -z "$java_major" ] || [ "$java_major" -lt 17 ]; then
    die "Spark 4 needs Java 17 or newer; '$JAVA' is version '${java_major:-unknown}'. Install openjdk-17-jre-headless and make it the default java, or set JAVA_HOME."
fi

# --- Servers the tests start -------------------------------------------------------
# tests/services/postgres.py runs initdb and pg_ctl from PATH or /usr/lib/postgresql/*/bin.
if [ "$TEST_SERVICES" -eq 1 ] && ! command -v initdb >/dev/null 2>&1 \
        && ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
    apt_install postgresql
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || die "initdb still not found after installing postgresql"
fi

# --- Python -------------------------------------------------------------------
command -v "$PY" >/dev/null 2>&1 || die "'$PY' not found; sparkway needs Python 3.11 or newer"
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || die "sparkway needs Python 3.11 or newer; '$PY' is $("$PY" -c 'import platform; print(platform.python_version())')"

# sparkway's bytecode, as pip writes it for an installed package: the editable install
# has none, and where PYTHONDONTWRITEBYTECODE is set (this machine kind sets it), every
# process, Spark's Python workers too, would compile the engine again (a second per run).
# Quick when up to date; a stale file is only ignored, never wrong.
compile_bytecode() { "$VENV/bin/python" -m compileall -q sparkway >/dev/null; }

# What to install, and the stamps that say it is installed: the test extras include
# the project's own dependencies, so an install for the tests serves a program too.
if [ "$TEST_SERVICES" -eq 1 ]; then
    TARGET=".[test]"; STAMP="$VENV/.sparkway-installed-test"; FRESH_STAMPS=("$STAMP")
else
    TARGET="."; STAMP="$VENV/.sparkway-installed"; FRESH_STAMPS=("$STAMP" "$VENV/.sparkway-installed-test")
fi

# Already installed and pyproject.toml unchanged since: nothing else to do.
for stamp in "${FRESH_STAMPS[@]}"; do
    if [ -x "$VENV/bin/python" ] && [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ]; then
        compile_bytecode
        exit 0
    fi
done

if [ ! -x "$VENV/bin/python" ]; then
    # Debian's own python3 needs the python3-venv package for `-m venv` (ensurepip).
    if ! "$PY" -c 'import ensurepip, venv' >/dev/null 2>&1; then
        apt_install python3-venv
    fi
    say "creating $VENV with $("$PY" -c 'import sys; print(sys.executable)')"
    "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || die "$VENV uses Python < 3.11; remove $VENV and run again"

say "installing sparkway into $VENV (pip install -e \"$TARGET\"); the first time downloads PySpark and takes a few minutes"
rm -f "$STAMP"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$TARGET"
compile_bytecode
touch "$STAMP"
say "done"
