#!/usr/bin/env bash
# A virtual environment with an older Spark release, for the tests scripts/test.sh also
# runs there: ./scripts/release-venv.sh 3.5 prints its folder, made if missing.
# It holds pyspark[connect]==RELEASE.* and the requirements of the project and of its
# tests (pyproject.toml), not sparkway itself: the tests run the checkout's, from
# PYTHONPATH. Kept in the machine's cache between runs (a clean clone reuses it), keyed
# by the release and those requirements; older keys of the release are deleted.
set -euo pipefail

RELEASE="${1:?usage: release-venv.sh RELEASE (e.g. 3.5)}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${SPARKWAY_PYTHON:-python3}"
CACHE="${SPARKWAY_CACHE:-$HOME/.cache/sparkway}/venvs"

# the project's and the tests' requirements, with this release's pyspark in place of the
# project's range
requirements="$("$PY" - "$ROOT/pyproject.toml" "$RELEASE" <<'PYTHON'
import sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
for requirement in project["dependencies"] + project["optional-dependencies"]["test"]:
    if not requirement.startswith("pyspark"):
        print(requirement)
print(f"pyspark[connect]=={sys.argv[2]}.*")
PYTHON
)"
KEY="$(printf '%s\n' "$requirements" | sha1sum | cut -c1-12)"
VENV="$CACHE/pyspark-$RELEASE-$KEY"

if [ ! -f "$VENV/.complete" ]; then
    echo "release-venv: making $VENV (pyspark $RELEASE; the first time downloads it, a few minutes)" >&2
    rm -rf "$VENV"
    mkdir -p "$CACHE"
    "$PY" -m venv "$VENV"
    printf '%s\n' "$requirements" > "$VENV/requirements.txt"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$VENV/requirements.txt"
    touch "$VENV/.complete"
    for old in "$CACHE"/pyspark-"$RELEASE"-*; do
        [ "$old" = "$VENV" ] || rm -rf "$old"
    done
fi
echo "$VENV"
