#!/usr/bin/env bash
# Probe every reader of corpus/readers.json for real, then check the table against what the
# readers did (conformance/tests/it/portable_probes.rs).
#
#   conformance/probes/run.sh            the committed corpus and the small sharded sets
#   conformance/probes/run.sh --large    also the large cases: headers of 25 and 100 MB,
#                                        123,502 tensors, 10,001 shards, 200,001 weight_map
#                                        entries, a sparse 2 GiB tensor (several minutes,
#                                        a few GB of disk under target/ and of memory)
#
# Installs what it needs under target/ (conformance/setup-python.sh --mlx,
# conformance/setup-node.sh); writes the observations to target/probes/observed/<reader>.json.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="$ROOT/target/probes/observed"
LARGE_DIR="$ROOT/target/corpus-large"

large=0
for arg in "$@"; do
  case "$arg" in
    --large) large=1 ;;
    *) echo "run.sh: unknown argument $arg (usage: run.sh [--large])" >&2; exit 2 ;;
  esac
done

"$ROOT/conformance/setup-python.sh" --mlx
"$ROOT/conformance/setup-node.sh"

extra=()
if [ "$large" = 1 ]; then
  (cd "$ROOT" && cargo run -q -p stcheck-conformance --bin stcorpus -- --large "$LARGE_DIR")
  extra=(--large "$LARGE_DIR")
  export STCHECK_LARGE_DIR="$LARGE_DIR"
fi

rm -rf "$OUT"
mkdir -p "$OUT"
"$ROOT/target/conformance-venv/bin/python" "$ROOT/conformance/probes/probe_python.py" --out "$OUT" "${extra[@]}"
node "$ROOT/conformance/probes/probe_hub.mjs" --out "$OUT" --node-dir "$ROOT/target/conformance-node" "${extra[@]}"
rm -rf "$OUT/files"

cd "$ROOT"
STCHECK_PROBES="$OUT" cargo test -q -p stcheck-conformance --test it portable_probes -- --ignored --nocapture
