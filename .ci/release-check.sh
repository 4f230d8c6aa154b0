#!/usr/bin/env bash
# CI for the release artifacts (issue 31): after `bash scripts/release.sh`, from the files in
# target/release-artifacts/ alone, as a user without Rust would: SHA256SUMS verifies; the
# wheels are tagged manylinux_2_17; the SBOM lists the crates of Cargo.lock; then as the
# non-root user `nobody`, with no cargo, rustc or rustup on PATH and HOME elsewhere: each wheel
# pip-installed into a fresh venv (the Python package's numpy from PyPI) and `stcheck`,
# `import stcheck`, `stconform`, `stwrite` and `stcorpus` run; the static binary runs; the
# GitHub Action's steps (action/test.py) install the wheel checksum-verified and annotate; and
# `pre-commit try-repo` runs the stcheck-wheel hook, its wheel found in the artifacts.
#
# Usage: .ci/release-check.sh   (as root, after scripts/release.sh; output under
# target/release-check/)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ART="$ROOT/target/release-artifacts"
OUT="$ROOT/target/release-check"
t0=$(date +%s)
step() { echo "== $1 ($(( $(date +%s) - t0 )) s)"; }
fail() { echo "release-check.sh: FAIL: $1" >&2; exit 1; }
version="$(bash scripts/version.sh)"
# The pre-commit of the integrations stage (one pin).
pre_commit_version="$(sed -n 's/^PRE_COMMIT_VERSION="\([^"]*\)".*/\1/p' .ci/setup-integrations.sh)"

step "SHA256SUMS verifies, and names every artifact"
(cd "$ART" && sha256sum --check --strict --quiet SHA256SUMS) || fail "SHA256SUMS does not verify"
for f in "$ART"/*; do
  n="$(basename "$f")"
  [ "$n" = SHA256SUMS ] || grep -q "  $n\$" "$ART/SHA256SUMS" || fail "$n is not in SHA256SUMS"
done

step "the wheels are manylinux_2_17 (glibc 2.17) and cover what a user installs"
for w in "stcheck_cli-$version-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl" \
         "stcheck-$version-cp39-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl" \
         "stcheck_conformance-$version-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl" \
         "stcheck-$version.tar.gz" "stcheck-$version-x86_64-unknown-linux-gnu.tar.gz" "stcheck-$version.tgz" \
         stcheck.cdx.json RELEASE-NOTES.md; do
  [ -f "$ART/$w" ] || fail "no $w in $ART"
done
# (auditwheel wraps its lines: joined first.)
tr -s ' \n' '  ' < target/release-auditwheel.txt \
  | grep -o 'is consistent with the following platform tag: "manylinux_2_17_x86_64"' | wc -l | grep -qx 3 \
  || { cat target/release-auditwheel.txt; fail "auditwheel does not say manylinux_2_17 for the 3 wheels"; }
echo "auditwheel show: manylinux_2_17_x86_64 for the 3 wheels"

step "the SBOM lists every crate of Cargo.lock that a shipped binary is built from"
python3 scripts/sbom.py --check "$ART/stcheck.cdx.json" || fail "the SBOM misses crates"

step "as nobody, without Rust on PATH, from the artifacts alone"
rm -rf "$OUT"
mkdir -p "$OUT"
scratch="$(mktemp -d /tmp/stcheck-release-check.XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
chmod 755 "$scratch"
cp -r "$ART" "$scratch/artifacts"
mkdir -p "$scratch/home" "$scratch/work" "$scratch/bin"
cp examples/*.safetensors "$scratch/work/"
cp conformance/adapters/python/minimal_adapter.py conformance/known-failures/minimal-v1.json "$scratch/work/"
# PATH: every program of /usr/bin and /bin but a Rust toolchain's.
for d in /usr/local/bin /usr/bin /bin; do
  for p in "$d"/*; do
    n="$(basename "$p")"
    case "$n" in cargo*|rustc*|rustup*|rustdoc*|rust-*|clippy-driver) continue ;; esac
    [ -e "$scratch/bin/$n" ] || ln -s "$p" "$scratch/bin/$n"
  done
done
# The repository as a clean clone for pre-commit (its committed state) and the action test.
git clone --quiet --no-hardlinks "$ROOT" "$scratch/repo"
chown -R nobody "$scratch"
cp .ci/release-user.sh "$scratch/release-user.sh"
chmod 755 "$scratch/release-user.sh"
status=0
runuser -u nobody -- env -i HOME="$scratch/home" PATH="$scratch/bin" LANG=C.UTF-8 \
  SCRATCH="$scratch" VERSION="$version" PRE_COMMIT_VERSION="$pre_commit_version" bash "$scratch/release-user.sh" 2>&1 \
  | tee "$OUT/user.log" || status=$?
[ "$status" = 0 ] || fail "the checks as nobody failed (target/release-check/user.log)"
step "done"
