#!/usr/bin/env bash
# Build every release artifact of stcheck into target/release-artifacts/:
#   stcheck_cli-V-py3-none-manylinux_2_17_x86_64...whl   the command line in a wheel (no Rust to install)
#   stcheck-V-cp39-abi3-manylinux_2_17_x86_64...whl      the Python package, CPython >= 3.9
#   stcheck-V.tar.gz                                     its sdist (builds with a Rust toolchain)
#   stcheck_conformance-V-py3-none-manylinux_2_17...whl  stconform, stwrite, stcorpus and the corpus
#   stcheck-corpus-C.tar.gz                              the corpus release (`stcorpus pack`)
#   stcheck-V.tgz                                        the npm package (`npm pack` of js/build.sh's)
#   stcheck-V-x86_64-unknown-linux-gnu.tar.gz            the stcheck binary, statically linked
#   stcheck.cdx.json                                     CycloneDX SBOM of the shipped crates (cargo-cyclonedx)
#   RELEASE-NOTES.md                                     CHANGELOG.md's entry for V
#   SHA256SUMS                                           sha256sum of all of the above
# The wheels are built by maturin with zig as the linker against glibc 2.17 (manylinux2014),
# so they install on any Linux x86_64 of the last ten years; `auditwheel show` of each is in
# target/release-auditwheel.txt. Then `cargo publish --dry-run` of the crates meant for
# crates.io, in dependency order (log in target/release-publish.log).
#
# Reproducible: timestamps come from SOURCE_DATE_EPOCH (the last commit's time), archives are
# written sorted with fixed owners, no path of the build machine is compiled in, and two runs
# give the same bytes (checked by CI). Needs
# cargo, python3 and PyPI (maturin, ziglang, auditwheel into target/dist-venv) and crates.io
# (cargo-cyclonedx under target/tools) the first time.
#
# Usage: bash scripts/release.sh [--no-publish-check]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
MATURIN_VERSION="1.16.0"          # the pins
ZIGLANG_VERSION="0.17.1"
AUDITWHEEL_VERSION="6.8.2"
CYCLONEDX_VERSION="0.5.9"
TRIPLE="x86_64-unknown-linux-gnu"
publish_check=1
for arg in "$@"; do
  case "$arg" in
    --no-publish-check) publish_check=0 ;;
    *) echo "release.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done
t0=$(date +%s)
step() { echo "== release.sh: $1 ($(( $(date +%s) - t0 )) s)"; }

bash scripts/version.sh check
version="$(bash scripts/version.sh)"
out="$root/target/release-artifacts"
target="${CARGO_TARGET_DIR:-$root/target}"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}"
# Paths of the build machine are not part of the artifacts: the checkout and cargo's registry
# are written as fixed prefixes in panic locations and debug strings, so a clone in another
# directory, or another user's cargo home, builds the same bytes.
remap="--remap-path-prefix=$root=/build/stcheck --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/build/cargo"

step "tools: maturin $MATURIN_VERSION, ziglang $ZIGLANG_VERSION, auditwheel $AUDITWHEEL_VERSION"
venv="$root/target/dist-venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
want="maturin==$MATURIN_VERSION ziglang==$ZIGLANG_VERSION auditwheel==$AUDITWHEEL_VERSION"
have="$("$venv/bin/python" -m pip freeze 2>/dev/null | grep -iE '^(maturin|ziglang|auditwheel)==' | sort -f | tr '\n' ' ' || true)"
if [ "$have" != "auditwheel==$AUDITWHEEL_VERSION maturin==$MATURIN_VERSION ziglang==$ZIGLANG_VERSION " ]; then
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $want
fi
export PATH="$venv/bin:$PATH"

rm -rf "$out"
mkdir -p "$out"
zig=(--release --strip --zig --compatibility manylinux2014 --target "$TRIPLE")

step "the stcheck-cli wheel (cli/wheel)"
(cd cli/wheel && RUSTFLAGS="$remap" maturin build --quiet "${zig[@]}" -o "$out")

step "the Python package's wheel and sdist (python/)"
RUSTFLAGS="$remap" maturin build --quiet "${zig[@]}" -m python/Cargo.toml -o "$out"
maturin sdist -m python/Cargo.toml -o "$out" > /dev/null

step "the corpus release and the conformance wheel (conformance/wheel)"
cargo build --quiet -p stcheck-conformance --bin stcorpus
data="$root/target/wheel-data"
rm -rf "$data"
"$target/debug/stcorpus" pack --out "$data/data/share/stcheck-conformance/stcheck-corpus.tar.gz" > /dev/null
corpus_version="$(sed -n 's/^## \([0-9][0-9.]*\)$/\1/p' corpus/CHANGELOG.md | head -1)"
cp "$data/data/share/stcheck-conformance/stcheck-corpus.tar.gz" "$out/stcheck-corpus-$corpus_version.tar.gz"
(cd conformance/wheel && RUSTFLAGS="$remap" maturin build --quiet "${zig[@]}" -o "$out")

step "the npm tarball (js/build.sh --pack)"
bash js/build.sh --pack
cp "$root"/target/js-pack/stcheck-"$version".tgz "$out/"

step "the static stcheck binary"
# crt-static links glibc into the binary; its own target directory, as RUSTFLAGS differ.
RUSTFLAGS="-C target-feature=+crt-static $remap" CARGO_TARGET_DIR="$root/target/static" \
  cargo build --quiet --locked --release -p stcheck-cli --target "$TRIPLE"
static="$root/target/static/$TRIPLE/release/stcheck"
# Static (a static-pie): no program interpreter and no shared library needed (ldd says
# "statically linked" with status 0 for it, so it cannot tell).
if readelf -l "$static" | grep -q "program interpreter" || readelf -d "$static" | grep -q NEEDED; then
  echo "release.sh: $static is dynamically linked" >&2; exit 1
fi
stage="$root/target/release-static/stcheck-$version-$TRIPLE"
rm -rf "$(dirname "$stage")"
mkdir -p "$stage"
# Stripped of its symbol table (binutils strip: 8.3 MB -> 6.7 MB; the same bytes each time).
strip -o "$stage/stcheck" "$static"
cp LICENSE-MIT LICENSE-APACHE README.md CHANGELOG.md "$stage/"
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
  --mode='u+rwX,go+rX,go-w' -C "$(dirname "$stage")" -cf - "$(basename "$stage")" \
  | gzip -9 -n > "$out/stcheck-$version-$TRIPLE.tar.gz"

step "the SBOM (CycloneDX, cargo-cyclonedx $CYCLONEDX_VERSION)"
tools="$root/target/tools"
if ! "$tools/bin/cargo-cyclonedx" cyclonedx --version 2>/dev/null | grep -q " $CYCLONEDX_VERSION\$"; then
  cargo install --quiet --locked --root "$tools" cargo-cyclonedx --version "=$CYCLONEDX_VERSION"
fi
# One document per crate of each workspace (beside its Cargo.toml, removed after), merged:
# the root's, the Python extension's and the WebAssembly module's (their own lock files).
# --target all: the crates of every platform (Windows' among them), as the lock files have them.
rm -f ./*/stcheck-release.cdx.json
for manifest in Cargo.toml python/Cargo.toml js/Cargo.toml; do
  "$tools/bin/cargo-cyclonedx" cyclonedx --quiet --manifest-path "$manifest" --format json \
    --spec-version 1.5 --target all --override-filename stcheck-release.cdx
done
# The shipped programs' crates (not the benches', the test kit's and the fuzzers').
python3 scripts/sbom.py "$out/stcheck.cdx.json" \
  {validator,gate,print,cli,serve,conformance,python,js}/stcheck-release.cdx.json
rm -f ./*/stcheck-release.cdx.json

step "release notes and SHA256SUMS"
awk -v v="$version" '
  $0 ~ "^## \\[" v "\\]" { on = 1; print "# stcheck " v; next }
  on && /^## / { exit }
  on && /^\[/ { next }
  on { print }
' CHANGELOG.md > "$out/RELEASE-NOTES.md"
[ -s "$out/RELEASE-NOTES.md" ] || { echo "release.sh: no CHANGELOG entry for $version" >&2; exit 1; }
(cd "$out" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | LC_ALL=C sort \
  | xargs sha256sum > SHA256SUMS)

step "auditwheel show"
for w in "$out"/*.whl; do auditwheel show "$w"; done > "$root/target/release-auditwheel.txt" 2>&1
grep -E "manylinux_2_17_x86_64|is consistent with the following platform tag" "$root/target/release-auditwheel.txt" || true

if [ "$publish_check" = 1 ]; then
  # One command for the five: cargo orders them by their dependencies and verifies each
  # against the ones before it (none is on crates.io yet). stcheck-conformance, the Python
  # and JavaScript crates, the benches, the test kit and the fuzzers' crates are
  # `publish = false`.
  step "cargo publish --dry-run: stcheck, stcheck-gate, stcheck-print, stcheck-serve, stcheck-cli"
  cargo publish --dry-run --locked --allow-dirty -p stcheck -p stcheck-gate -p stcheck-print \
    -p stcheck-serve -p stcheck-cli > "$root/target/release-publish.log" 2>&1 \
    || { tail -n 20 "$root/target/release-publish.log"; echo "release.sh: cargo publish --dry-run failed" >&2; exit 1; }
  grep -E "^ *(Packaging|Verifying|Uploading)" "$root/target/release-publish.log" || true
fi

step "done"
ls -l "$out"
