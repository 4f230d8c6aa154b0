#!/usr/bin/env bash
# Install the JavaScript readers of the adapters into target/conformance-node: the Hub's parser
# (`hub-js`) and the npm package `safetensors` (`npm-safetensors`).
# Idempotent: an install that already has the pinned versions is left as it is.
# Usage: conformance/setup-node.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/target/conformance-node"
HUB_VERSION="2.17.5"         # the pins: change them here and re-run
SAFETENSORS_JS_VERSION="0.0.1"

command -v node >/dev/null || { echo "setup-node.sh: node not found (Node 20 or newer needed)" >&2; exit 2; }
command -v npm >/dev/null || { echo "setup-node.sh: npm not found" >&2; exit 2; }

mkdir -p "$DIR"
version_of() {
  node -e 'try { console.log(require(process.argv[1]).version) } catch { console.log("") }' \
    "$DIR/node_modules/$1/package.json" 2>/dev/null || true
}
if [ "$(version_of @huggingface/hub)" != "$HUB_VERSION" ] || [ "$(version_of safetensors)" != "$SAFETENSORS_JS_VERSION" ]; then
  if [ ! -f "$DIR/package.json" ]; then
    printf '{ "name": "stcheck-conformance-node", "private": true, "type": "module" }\n' > "$DIR/package.json"
  fi
  (cd "$DIR" && npm install --no-audit --no-fund --silent --save-exact \
    "@huggingface/hub@$HUB_VERSION" "safetensors@$SAFETENSORS_JS_VERSION")
fi
echo "@huggingface/hub $(version_of @huggingface/hub), safetensors $(version_of safetensors) (node $(node --version))"
