#!/usr/bin/env bash
# The core library's public API (the stcheck crate: bytes -> verdict) must not change by accident: list it with cargo-public-api (from the
# nightly rustdoc JSON) and compare with the committed listing validator/public-api.txt.
# A deliberate change: run `STCHECK_BLESS=1 bash .ci/api.sh` and commit the new listing.
# Installs cargo-public-api (pinned) under target/tools when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.52.0
tools=$PWD/target/tools
if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
if [ ! -x "$tools/bin/cargo-public-api" ]; then
    cargo install cargo-public-api --version "$version" --locked --root "$tools"
fi
out=$(mktemp)
# -ss: without blanket and auto-trait impls (Send, Sync, Unpin, UnwindSafe...); the marker
# StructuralPartialEq impls of derived PartialEq are left out too: none of them is a choice.
PATH="$tools/bin:$PATH" cargo public-api -p stcheck -ss | grep -v 'StructuralPartialEq' > "$out"
if [ -n "${STCHECK_BLESS:-}" ]; then
    cp "$out" validator/public-api.txt
    echo "validator/public-api.txt rewritten ($(wc -l < "$out") lines)"
    exit 0
fi
if ! diff -u validator/public-api.txt "$out"; then
    echo "the public API of stcheck changed (diff above): if on purpose, run"
    echo "  STCHECK_BLESS=1 bash .ci/api.sh   and commit validator/public-api.txt"
    exit 1
fi
echo "public API unchanged ($(wc -l < "$out") lines)"
