#!/usr/bin/env bash
# Install the tools the integration checks (.ci/integrations.sh) run, under target/integrations:
#   - pre-commit, from PyPI, in a virtual environment (venv/);
#   - the SARIF SDK's Multitool for Linux, from npm (node/), a self-contained binary that needs
#     no .NET: the SARIF consumer that validates stcheck's logs, GitHub's ingestion rules
#     included.
# Idempotent: what is already installed at the pinned version is left as it is. Only the
# package registries are used; once installed, the checks run offline.
# Usage: .ci/setup-integrations.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/target/integrations"
PRE_COMMIT_VERSION="4.7.0"      # the pins: change them here and re-run
MULTITOOL_VERSION="5.7.0"

command -v python3 >/dev/null || { echo "setup-integrations.sh: python3 not found" >&2; exit 2; }
command -v npm >/dev/null || { echo "setup-integrations.sh: npm not found" >&2; exit 2; }
mkdir -p "$DIR"

VENV="$DIR/venv"
have="$("$VENV/bin/pre-commit" --version 2>/dev/null || true)"
if [ "$have" != "pre-commit $PRE_COMMIT_VERSION" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "pre-commit==$PRE_COMMIT_VERSION"
fi

NODE="$DIR/node"
mkdir -p "$NODE"
pkg="$NODE/node_modules/@microsoft/sarif-multitool-linux/package.json"
have="$(node -e 'try { console.log(require(process.argv[1]).version) } catch { console.log("") }' "$pkg" 2>/dev/null || true)"
if [ "$have" != "$MULTITOOL_VERSION" ]; then
  if [ ! -f "$NODE/package.json" ]; then
    printf '{ "name": "stcheck-integrations", "private": true }\n' > "$NODE/package.json"
  fi
  (cd "$NODE" && npm install --no-audit --no-fund --silent --save-exact \
    "@microsoft/sarif-multitool-linux@$MULTITOOL_VERSION")
fi
chmod u+x "$NODE/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool"
echo "$("$VENV/bin/pre-commit" --version); SARIF Multitool $MULTITOOL_VERSION"
