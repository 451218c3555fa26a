#!/usr/bin/env bash
# Property-based fuzzing of the API from its own /openapi.json with schemathesis (pinned, installed
# from PyPI into a git-ignored virtual environment on first use), then scripts/fuzz.ts runs it
# against the real service. Exits non-zero on any server error or contract violation.
set -euo pipefail

SCHEMATHESIS_VERSION="4.32.5"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${FUZZ_VENV:-$root/.bench/fuzz-venv}"
python="${PYTHON:-python3}"

installed="$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('schemathesis'))" 2>/dev/null || true)"
if [ "$installed" != "$SCHEMATHESIS_VERSION" ]; then
  echo "fuzz: installing schemathesis==$SCHEMATHESIS_VERSION into $venv"
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

cd "$root"
exec node_modules/.bin/tsx scripts/fuzz.ts --schemathesis "$venv/bin/schemathesis" "$@"
