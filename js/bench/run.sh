#!/usr/bin/env bash
# Run the header benchmark (js/bench/header.mjs) once: builds the package if needed and
# installs @huggingface/hub from npm under target/js-bench (never committed) for the comparison.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
[ -f target/js-pkg/stcheck.js ] || bash js/build.sh
if ! [ -d target/js-bench/node_modules/@huggingface/hub ]; then
  mkdir -p target/js-bench
  npm install --silent --no-audit --no-fund --prefix target/js-bench @huggingface/hub >/dev/null || echo "run.sh: @huggingface/hub could not be installed; compared with JSON.parse only"
fi
node js/bench/header.mjs
