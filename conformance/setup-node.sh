#!/usr/bin/env bash
# Install the Hub's JavaScript parser for the `hub-js` adapter into target/conformance-node.
# Idempotent: an install that already has the pinned version is left as it is.
# Usage: conformance/setup-node.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/target/conformance-node"
HUB_VERSION="2.17.5"   # the pin: change it here and re-run

command -v node >/dev/null || { echo "setup-node.sh: node not found (Node 20 or newer needed)" >&2; exit 2; }
command -v npm >/dev/null || { echo "setup-node.sh: npm not found" >&2; exit 2; }

mkdir -p "$DIR"
have="$(node -e 'try { console.log(require(process.argv[1]).version) } catch { console.log("") }' \
  "$DIR/node_modules/@huggingface/hub/package.json" 2>/dev/null || true)"
if [ "$have" != "$HUB_VERSION" ]; then
  if [ ! -f "$DIR/package.json" ]; then
    printf '{ "name": "stcheck-conformance-node", "private": true, "type": "module" }\n' > "$DIR/package.json"
  fi
  (cd "$DIR" && npm install --no-audit --no-fund --silent --save-exact "@huggingface/hub@$HUB_VERSION")
fi
echo "@huggingface/hub $(node -e 'console.log(require(process.argv[1]).version)' "$DIR/node_modules/@huggingface/hub/package.json") (node $(node --version))"
