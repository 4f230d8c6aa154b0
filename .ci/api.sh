#!/usr/bin/env bash
# The public API of the library crates must not change by accident: the core (stcheck: bytes
# -> verdict), the gate (stcheck-gate: where bytes come from, options, the driver) and the
# printers (stcheck-print). Each is listed with cargo-public-api (from the nightly rustdoc
# JSON) and compared with the listing committed beside the crate: validator/public-api.txt,
# gate/public-api.txt, print/public-api.txt.
# A deliberate change: run `STCHECK_BLESS=1 bash .ci/api.sh` and commit the new listings.
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
changed=0
for pair in stcheck:validator stcheck-gate:gate stcheck-print:print; do
    crate=${pair%%:*}
    listing=${pair#*:}/public-api.txt
    out=$(mktemp)
    # -ss: without blanket and auto-trait impls (Send, Sync, Unpin, UnwindSafe...); the marker
    # StructuralPartialEq impls of derived PartialEq are left out too: none of them is a choice.
    PATH="$tools/bin:$PATH" cargo public-api -p "$crate" -ss | grep -v 'StructuralPartialEq' > "$out"
    if [ -n "${STCHECK_BLESS:-}" ]; then
        cp "$out" "$listing"
        echo "$listing rewritten ($(wc -l < "$out") lines)"
    elif ! diff -u "$listing" "$out"; then
        echo "the public API of $crate changed (diff above): if on purpose, run"
        echo "  STCHECK_BLESS=1 bash .ci/api.sh   and commit $listing"
        changed=1
    else
        echo "public API of $crate unchanged ($(wc -l < "$out") lines)"
    fi
    rm -f "$out"
done
exit "$changed"
