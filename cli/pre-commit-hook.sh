#!/usr/bin/env bash
# The entry of the `stcheck` pre-commit hook (.pre-commit-hooks.yaml, language: script).
# pre-commit runs it from its own clone of this repository, in the repository being committed
# to, with the staged *.safetensors and *.safetensors.index.json files as arguments. It builds
# stcheck from the clone with cargo (the first time only: later runs find it up to date; crates
# come from crates.io, then from cargo's cache) and runs it on them.
#
# Why not `language: rust`: pre-commit installs such a hook with `cargo install --path .` at
# the repository root, which is a virtual workspace here (the package is cli/).
# CARGO_TARGET_DIR, when set, is where the build goes (default: target/ of the clone).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$repo/target}"
command -v cargo >/dev/null || {
  echo "stcheck hook: cargo not found; install a Rust toolchain, or use the stcheck-system hook with stcheck on PATH" >&2
  exit 2
}
# Only local files reach a hook: built without the `remote` feature (no HTTP and TLS stack
# to compile).
cargo build --release --locked --quiet -p stcheck-cli --no-default-features \
  --manifest-path "$repo/Cargo.toml" --target-dir "$target" >&2
# --with-sets: a staged shard is checked with the index of its directory that names it (and a
# staged index with its shards, as always), so a commit of one shard cannot break a set unseen.
exec "$target/release/stcheck" --with-sets "$@"
