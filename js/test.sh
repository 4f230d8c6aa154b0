#!/usr/bin/env bash
# CI for the JavaScript package (js/): build it from a clean clone, installing what it needs
# (Debian's rustc-web, rust-web-src, lld-22 and chromium; the pinned wasm-bindgen-cli), build
# the CLI that is the tests' oracle, then run the Node tests (corpus, sets, deep, URLs over
# loopback servers, the API), the real-browser test of the demo page, and the packed tarball
# installed into a fresh project (import, require, an esbuild bundle in Chromium). Ends with a line
# `N passed, N failed`. From a clean clone (Debian packages already installed): 15.7 min
# wall, 7.8 min of CPU, on a 2-core machine shared with other builds (wasm-bindgen-cli
# 8.5 min of that, the wasm build with std 4, the CLI 3); 20 s once built.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
t0=$(date +%s)

if ! [ -x /usr/bin/chromium ]; then
  echo "test.sh: installing chromium (apt-get)"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq chromium >/dev/null
fi
bash js/build.sh --pack
echo "test.sh: building the CLI (the oracle; the debug build CI's test stage already made)"
cargo build --quiet -p stcheck-cli

echo "test.sh: node $(node --version), $(/usr/bin/chromium --version 2>/dev/null | head -1)"
status=0
# A hang guard only (the tests take a few minutes): a test file whose process does not end
# (an open server, a browser left running) fails the stage instead of holding CI.
STCHECK_BIN="${CARGO_TARGET_DIR:-$root/target}/debug/stcheck" STCHECK_JS_PKG="$root/target/js-pkg" \
  STCHECK_JS_TARBALL="$(ls "$root"/target/js-pack/stcheck-*.tgz)" \
  timeout --kill-after=30 1800 node --experimental-websocket --no-warnings --test \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$root/target/js-test.tap" \
  js/test/*.test.mjs || status=$?
passed=$(awk '/^# pass / { print $3 }' target/js-test.tap | tail -1)
failed=$(awk '/^# fail / { print $3 }' target/js-test.tap | tail -1)
[ "$status" -eq 124 ] && echo "test.sh: the tests did not end within 30 minutes (killed)"
echo "test.sh: $(( $(date +%s) - t0 )) s"
echo "${passed:-0} passed, ${failed:-0} failed"
if [ "$status" -ne 0 ] || [ "${failed:-1}" != "0" ] || [ "${passed:-0}" = "0" ]; then exit 1; fi
