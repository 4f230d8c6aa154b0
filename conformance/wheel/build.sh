#!/usr/bin/env bash
# Build the wheel of the conformance runners: stconform, stwrite (and stcorpus, the stcheck
# adapters and writers), with the corpus bundled as a checked release, by maturin's binary
# bindings. Output: target/wheels/stcheck_conformance-VERSION-py3-none-PLATFORM.whl, which
# `pip install` / `pipx run` install with no Rust toolchain.
#
# Usage: conformance/wheel/build.sh [--dev]
#   --dev  build in the dev profile (reuses the test build: what CI does; the wheel is
#          larger and slower); default: the release profile, stripped
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
MATURIN_VERSION="1.16.0"   # the pin
profile=release
for arg in "$@"; do
  case "$arg" in
    --dev) profile=dev ;;
    *) echo "build.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done
VENV="$ROOT/target/wheel-venv"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
have="$("$VENV/bin/python" -m pip show maturin 2>/dev/null | sed -n 's/^Version: //p' || true)"
if [ "$have" != "$MATURIN_VERSION" ]; then
  "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet "maturin==$MATURIN_VERSION"
fi
# The bundled corpus: the release archive of `stcorpus pack` (the runner unpacks it into its
# cache and checks it on first use; an archive because a wheel cannot hold the symbolic link
# one case is made of). maturin installs `data/` under the environment's prefix:
# PREFIX/share/stcheck-conformance/stcheck-corpus.tar.gz, beside PREFIX/bin.
cargo build --quiet -p stcheck-conformance --bin stcorpus
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
DATA="$ROOT/target/wheel-data"
rm -rf "$DATA"
"$TARGET/debug/stcorpus" pack --out "$DATA/data/share/stcheck-conformance/stcheck-corpus.tar.gz" > /dev/null
rm -f "$ROOT"/target/wheels/stcheck_conformance-*.whl
(cd conformance/wheel && "$VENV/bin/maturin" build --quiet --profile "$profile" --strip \
  -o "$ROOT/target/wheels" > /dev/null)
ls "$ROOT"/target/wheels/stcheck_conformance-*.whl
