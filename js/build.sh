#!/usr/bin/env bash
# Build the npm package of stcheck (js/) into target/js-pkg/: the core compiled to
# wasm32-unknown-unknown with Debian's rustc-web (std rebuilt with -Zbuild-std; a panic traps),
# wasm-bindgen's ES-module glue and TypeScript types, and the hand-written wrapper (js/lib/):
# core.js and its three entries, stcheck.js (browsers, bundlers), node.js (Node's `import`)
# and node.cjs (Node's `require`: node.js bundled by esbuild). Installs what is missing: the
# Debian packages rustc-web, rust-web-src and lld-22 (as root, through apt-get),
# wasm-bindgen-cli at exactly the version of the wasm-bindgen crate in js/Cargo.lock, under
# target/tools, and esbuild (npm, pinned) under target/tools/npm. Needs crates.io, npm and
# the Debian mirror the first time.
#
# Usage: js/build.sh [--pack]   --pack: also `npm pack` the package into target/js-pack/
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
out="$root/target/js-pkg"
tools="$root/target/tools"
ESBUILD_VERSION="0.28.2"   # the pin
t0=$(date +%s)
pack=0
for arg in "$@"; do
  case "$arg" in
    --pack) pack=1 ;;
    *) echo "build.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

if ! [ -x /usr/bin/rustc ] || ! [ -d /usr/lib/rustlib/src/rust/library ] || ! command -v rust-lld >/dev/null; then
  echo "build.sh: installing rustc-web rust-web-src lld-22 (apt-get)"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq rustc-web rust-web-src lld-22 >/dev/null
fi

# The wasm-bindgen version the crate is locked to; the CLI must be the same.
bindgen_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' js/Cargo.lock)
[ -n "$bindgen_version" ] || { echo "build.sh: no wasm-bindgen in js/Cargo.lock" >&2; exit 1; }
if ! [ -x "$tools/bin/wasm-bindgen" ] || ! "$tools/bin/wasm-bindgen" --version | grep -qx "wasm-bindgen $bindgen_version"; then
  echo "build.sh: installing wasm-bindgen-cli $bindgen_version under target/tools"
  # Not --locked: its published lock file names a webpki-roots the registry may not serve;
  # the version that matters (the CLI's own, matching the crate's) is pinned exactly.
  # Only the wasm-bindgen binary, without TLS (its test runner downloads; we do not).
  cargo install --quiet --root "$tools" --no-default-features --bin wasm-bindgen \
    wasm-bindgen-cli --version "=$bindgen_version"
fi

echo "build.sh: compiling for wasm32-unknown-unknown (rustc $(/usr/bin/rustc --version | cut -d' ' -f2))"
# The host toolchain (rustup) cargo drives Debian's rustc, which has the standard library's
# source for -Zbuild-std; RUSTC_BOOTSTRAP lets that stable rustc take the unstable flags.
# Smaller, the same behaviour (js/README.md, Benchmark): a panic (none is known; the module is
# built with panic = "abort", a panic ends it) traps at once, without formatting a message that
# nothing in wasm32-unknown-unknown prints (-Cpanic=immediate-abort), and panics name no source
# file and line (-Zlocation-detail=none): 25 KB raw, 9 KB gzipped less (3.2%).
RUSTFLAGS="-Zlocation-detail=none -Cpanic=immediate-abort -Zunstable-options" \
RUSTC_BOOTSTRAP=1 RUSTC=/usr/bin/rustc CARGO_TARGET_DIR="$root/target/js-wasm" \
  cargo build --quiet --locked --release --manifest-path js/Cargo.toml \
  -Zbuild-std=std,panic_abort --target wasm32-unknown-unknown
wasm="$root/target/js-wasm/wasm32-unknown-unknown/release/stcheck_js.wasm"

rm -rf "$out"
mkdir -p "$out"
# (Debian's binaryen 108 saves 8% more with wasm-opt -Os, but breaks wasm-bindgen's externref
# table: not used.)
"$tools/bin/wasm-bindgen" --target web --remove-name-section --remove-producers-section \
  --out-dir "$out/wasm" --out-name stcheck_native "$wasm"
cp js/lib/core.js js/lib/stcheck.js js/lib/node.js js/lib/stcheck.d.ts "$out/"
# The same declarations for `require` (TypeScript reads a .d.cts as a CommonJS module's).
cp js/lib/stcheck.d.ts "$out/stcheck.d.cts"
cp js/README.md "$out/README.md"
cp LICENSE-MIT LICENSE-APACHE "$out/"

# node.cjs: node.js, core.js and the glue in one CommonJS file (the .wasm stays beside it);
# `import.meta.url` is the file's URL, from __filename.
esbuild="$tools/npm/node_modules/.bin/esbuild"
if ! [ -x "$esbuild" ] || [ "$("$esbuild" --version)" != "$ESBUILD_VERSION" ]; then
  echo "build.sh: installing esbuild $ESBUILD_VERSION under target/tools/npm"
  mkdir -p "$tools/npm"
  npm install --silent --no-audit --no-fund --prefix "$tools/npm" "esbuild@$ESBUILD_VERSION"
fi
"$esbuild" "$out/node.js" --bundle --platform=node --format=cjs --target=node18 \
  --define:import.meta.url=__stcheck_module_url \
  --banner:js='const __stcheck_module_url = require("node:url").pathToFileURL(__filename).href;' \
  --log-level=warning --outfile="$out/node.cjs"
# The demo page (not part of the npm package's files): serve target/js-pkg and open /demo/.
mkdir -p "$out/demo"
cp js/demo/index.html "$out/demo/"
cat > "$out/package.json" <<JSON
{
  "name": "stcheck",
  "version": "$(sed -n 's/^version = "\(.*\)"/\1/p' js/Cargo.toml | head -1)",
  "description": "A strict validator for safetensors files, in WebAssembly: check a header in the browser before upload, or a file or URL in Node",
  "type": "module",
  "main": "./node.cjs",
  "module": "./stcheck.js",
  "browser": "./stcheck.js",
  "types": "./stcheck.d.ts",
  "exports": {
    ".": {
      "node": {
        "import": { "types": "./stcheck.d.ts", "default": "./node.js" },
        "require": { "types": "./stcheck.d.cts", "default": "./node.cjs" }
      },
      "browser": { "types": "./stcheck.d.ts", "default": "./stcheck.js" },
      "types": "./stcheck.d.ts",
      "default": "./stcheck.js"
    },
    "./package.json": "./package.json"
  },
  "files": ["core.js", "stcheck.js", "node.js", "node.cjs", "stcheck.d.ts", "stcheck.d.cts", "wasm/", "README.md", "LICENSE-MIT", "LICENSE-APACHE"],
  "engines": { "node": ">=18" },
  "license": "MIT OR Apache-2.0",
  "sideEffects": ["./stcheck.js", "./node.js", "./node.cjs"]
}
JSON
raw=$(stat -c %s "$out/wasm/stcheck_native_bg.wasm")
gz=$(gzip -9 -c "$out/wasm/stcheck_native_bg.wasm" | wc -c)
if [ "$pack" = 1 ]; then
  # The tarball a user installs (`npm install ./stcheck-V.tgz`); its files' times are npm's
  # fixed 1985 date, so the same build gives the same bytes.
  rm -rf "$root/target/js-pack"
  mkdir -p "$root/target/js-pack"
  (cd "$out" && npm pack --silent --pack-destination "$root/target/js-pack" >/dev/null)
  ls "$root"/target/js-pack/*.tgz
fi
echo "build.sh: target/js-pkg built in $(( $(date +%s) - t0 )) s; stcheck_native_bg.wasm $raw bytes raw, $gz gzipped"
