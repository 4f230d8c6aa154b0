#!/usr/bin/env bash
# One command for the conformance suite: set up the adapters' environments, build the runner,
# run every adapter over corpus/, check each run against its known-failures file, check the
# acceptance criteria, and regenerate CONFORMANCE.md and its HTML page, CONFORMANCE.html.
#
# Usage: conformance/run-all.sh [--ci] [--large] [--bless] [--no-setup] [--report-only]
#   --ci        only the adapters marked "ci" in conformance/adapters.json (stcheck strict and
#               reference profile, the reference crate, Python safetensors, the glob-shards
#               loader); does not rewrite CONFORMANCE.md. This is what CI runs. Without --ci
#               it also sets up MLX, the Hub's JS parser and fastsafetensors (torch), and
#               builds the candle adapter (its own cargo project, outside the workspace) into
#               target/conformance-candle; when that build fails, candle is skipped with a
#               message (and CONFORMANCE.md says so) instead of failing the run.
#   --large     also generate the large cases (about 225 MB, into target/corpus-large) and
#               run them; without it their known results are kept but not checked
#   --bless     rewrite every known-failures file from this run (review the diff!)
#   --no-setup  skip the setup scripts (the venv and node_modules must exist)
#   --report-only  run nothing: rewrite CONFORMANCE.md from the results of the last run
#               (target/conformance-results), e.g. after editing conformance/analysis.md
#
# Then the writers: conformance/run-writers.sh with the same options (its writers, known
# failures and part of CONFORMANCE.md; see conformance/WRITER-PROTOCOL.md).
#
# Exit status: 0 when every adapter's results match its known-failures file and the acceptance
# checks hold; 1 otherwise (every adapter is still run, and CONFORMANCE.md still written).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ci=0; bless=0; setup=1; large=0; report_only=0
for arg in "$@"; do
  case "$arg" in
    --ci) ci=1 ;;
    --bless) bless=1 ;;
    --large) large=1 ;;
    --report-only) report_only=1; setup=0 ;;
    --no-setup) setup=0 ;;
    *) echo "run-all.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

if [ "$setup" = 1 ]; then
  if [ "$ci" = 1 ]; then
    bash conformance/setup-python.sh || exit 2
  else
    bash conformance/setup-python.sh --mlx --more || exit 2
    bash conformance/setup-node.sh || exit 2
    bash conformance/setup-fastsafetensors.sh || exit 2
  fi
fi
# candle: a cargo project of its own (outside the workspace), built into target/conformance-candle
# in the dev profile (overflow checks on, like the other Rust adapters). When it does not build
# here (no access to crates.io, a toolchain too old for candle), candle is skipped, and every
# place that lists results says so; the other adapters still run and decide the exit status.
skipped=()
CANDLE_LOG="$ROOT/target/conformance-candle-build.log"
if [ "$ci" = 0 ] && [ "$report_only" = 0 ]; then
  mkdir -p "$ROOT/target"
  if ! CARGO_TARGET_DIR="$ROOT/target/conformance-candle" \
      cargo build --quiet --locked --manifest-path conformance/adapters/candle/Cargo.toml \
      > "$CANDLE_LOG" 2>&1; then
    echo "run-all.sh: candle: the adapter (conformance/adapters/candle) did not build; candle is" >&2
    echo "  skipped. The build's errors (all of its output: $CANDLE_LOG):" >&2
    grep -E '^(error|warning: spurious network)' "$CANDLE_LOG" | head -n 5 | sed 's/^/  /' >&2
    skipped+=(candle)
  fi
  # ferric-load and lumen-io: one cargo project of their own (conformance/adapters/crates), built
  # the same way into target/conformance-crates; skipped together when it does not build.
  CRATES_LOG="$ROOT/target/conformance-crates-build.log"
  if ! CARGO_TARGET_DIR="$ROOT/target/conformance-crates" \
      cargo build --quiet --locked --manifest-path conformance/adapters/crates/Cargo.toml \
      > "$CRATES_LOG" 2>&1; then
    echo "run-all.sh: ferric-load, lumen-io: the adapters (conformance/adapters/crates) did not" >&2
    echo "  build; they are skipped. The build's errors (all of its output: $CRATES_LOG):" >&2
    grep -E '^(error|warning: spurious network)' "$CRATES_LOG" | head -n 5 | sed 's/^/  /' >&2
    skipped+=(ferric-load lumen-io)
  fi
fi

cargo build --quiet -p stcheck-conformance --bins || exit 2
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET" in /*) ;; *) TARGET="$ROOT/$TARGET" ;; esac
STCONFORM="$TARGET/debug/stconform"
RESULTS="$ROOT/target/conformance-results"
[ "$ci" = 1 ] && RESULTS="$ROOT/target/conformance-results-ci"   # keeps the full run's results
ACCEPT="$RESULTS/acceptance.txt"
status=0
adapters=()
if [ "$report_only" = 1 ]; then
  [ -f "$ACCEPT" ] || { echo "run-all.sh: no results in $RESULTS: run without --report-only first" >&2; exit 2; }
  large="$(cat "$RESULTS/large" 2>/dev/null || echo 0)"
  read -r -a skipped < <(cat "$RESULTS/skipped" 2>/dev/null || true)
fi
is_skipped() { local s; for s in ${skipped[@]+"${skipped[@]}"}; do [ "$s" = "$1" ] && return 0; done; return 1; }
while IFS=$'\t' read -r name where _; do
  if [ "$ci" = 1 ] && [ "$where" != ci ]; then continue; fi
  is_skipped "$name" && continue
  adapters+=("$name")
done < <("$STCONFORM" list)

if [ "$report_only" = 0 ]; then
  rm -rf "$RESULTS"
  mkdir -p "$RESULTS"
  echo "$large" > "$RESULTS/large"
  echo "${skipped[*]+"${skipped[*]}"}" > "$RESULTS/skipped"

  common=()
  if [ "$large" = 1 ]; then
    "$TARGET/debug/stcorpus" --large "$ROOT/target/corpus-large" | tail -n 1 || exit 2
    # The Rust adapters stay in the dev profile for the large cases too (a release build would
    # change the reference crate's verdict on invalid/data/length-sum-overflow, see PROTOCOL.md),
    # so the 100,000-tensor cases are slow: up to 29 s a case (reference-crate) in a run on the
    # busy 2-core development machine. Hence the longer timeout.
    common+=(--large "$ROOT/target/corpus-large" --timeout 120)
  fi

  for name in "${adapters[@]}"; do
    echo "== $name"
    extra=("${common[@]}")
    [ "$bless" = 1 ] && extra+=(--bless)
    if ! "$STCONFORM" --adapter "$name" --save "$RESULTS/$name.json" "${extra[@]}"; then
      echo "run-all.sh: $name: results differ from conformance/known-failures/$name.json" >&2
      status=1
    fi
  done

  # Acceptance: stcheck strict passes every case; its reference profile agrees with the
  # reference crate on every case, and both match the manifest's reference verdicts.
  echo "== acceptance"
  : > "$ACCEPT"
  if "$STCONFORM" --adapter stcheck-strict --no-known-failures "${common[@]}" > "$RESULTS/acceptance-strict.txt"; then
    echo "stcheck strict fails no case: $(head -n 1 "$RESULTS/acceptance-strict.txt" | sed 's/^stconform: //')" >> "$ACCEPT"
  else
    cat "$RESULTS/acceptance-strict.txt"
    echo "run-all.sh: stcheck strict does not pass every case" >&2
    status=1
  fi
  if "$STCONFORM" --adapter stcheck-portable --no-known-failures "${common[@]}" > "$RESULTS/acceptance-portable.txt"; then
    echo "stcheck portable fails no case of the portable verdicts: $(head -n 1 "$RESULTS/acceptance-portable.txt" | sed 's/^stconform: //')" >> "$ACCEPT"
  else
    cat "$RESULTS/acceptance-portable.txt"
    echo "run-all.sh: stcheck's portable profile does not pass every case" >&2
    status=1
  fi
  if "$STCONFORM" compare "$RESULTS/stcheck-reference.json" "$RESULTS/reference-crate.json" > "$RESULTS/compare.txt"; then
    tail -n 1 "$RESULTS/compare.txt" >> "$ACCEPT"
  else
    cat "$RESULTS/compare.txt"
    status=1
  fi
  for name in stcheck-reference reference-crate; do
    if "$STCONFORM" --adapter "$name" --judge reference --no-known-failures "${common[@]}" \
        --save "$RESULTS/$name.judged-by-reference.json" > "$RESULTS/$name.judged-by-reference.txt"; then
      echo "judged by the manifest's reference verdicts: $(head -n 1 "$RESULTS/$name.judged-by-reference.txt" | sed 's/^stconform: //')" >> "$ACCEPT"
    else
      cat "$RESULTS/$name.judged-by-reference.txt"
      echo "run-all.sh: $name differs from the manifest's reference verdicts" >&2
      status=1
    fi
  done
  # The portable profile's reader table against the readers themselves: every reader of
  # corpus/readers.json run on every file strict accepts (and on the probe sets), and the table
  # checked against what they did (every portable rejection backed by an observed misreading).
  if [ "$ci" = 0 ]; then
    echo "== portable probes"
    probe_args=()
    [ "$large" = 1 ] && probe_args+=(--large)
    if bash conformance/probes/run.sh "${probe_args[@]}" > "$RESULTS/probes.txt" 2>&1; then
      echo "the reader table predicts every reader's observed behaviour (conformance/probes/run.sh)" >> "$ACCEPT"
    else
      tail -n 30 "$RESULTS/probes.txt"
      echo "run-all.sh: the reader table and the readers disagree (conformance/probes/run.sh)" >&2
      status=1
    fi
  fi
  cat "$ACCEPT"
fi

if [ "$ci" = 0 ]; then
  files=()
  for name in "${adapters[@]}"; do files+=("$RESULTS/$name.json"); done
  counts="$(python3 conformance/count-cases.py corpus/manifest.json "$large" 2>/dev/null || echo '?')"
  {
    echo "# Conformance of safetensors readers"
    echo
    echo "<!-- Generated by conformance/run-all.sh from real runs; edit conformance/analysis.md"
    echo "     and the adapters, not this file. -->"
    echo
    if [ "$large" = 1 ]; then where="\`corpus/\`"; else where="\`corpus/\` (without its large cases: \`run-all.sh --large\`)"; fi
    echo "Every implementation below was run over the $counts of $where through its adapter"
    echo "(\`conformance/PROTOCOL.md\`), judged against the strict verdicts of \`SPEC.md\`."
    echo "Regenerate with \`conformance/run-all.sh --large\`; run one implementation with"
    echo "\`cargo run -p stcheck-conformance --bin stconform -- --adapter NAME\` (names below; the"
    echo "Python, MLX, tinygrad, gguf, JS and fastsafetensors adapters need \`conformance/setup-python.sh --mlx --more\`,"
    echo "\`conformance/setup-node.sh\` and \`conformance/setup-fastsafetensors.sh\` first, candle's a build"
    echo "of \`conformance/adapters/candle\`, ferric-load's and lumen-io's one of \`conformance/adapters/crates\`;"
    echo "\`run-all.sh\` does all of it). Adapters without an index"
    echo "mode do not run the sharded-set cases. The same results as one page, a cell per case and"
    echo "implementation with the reason on hover and filters by class and outcome:"
    echo "[\`CONFORMANCE.html\`](CONFORMANCE.html)."
    echo
    echo "| Adapter | What runs | In CI |"
    echo "|---|---|---|"
    "$STCONFORM" list | while IFS=$'\t' read -r name where desc; do
      ran="$([ "$where" = ci ] && echo yes || echo "no: \`conformance/run-all.sh\`")"
      is_skipped "$name" && ran="not run here: the adapter did not build"
      echo "| \`$name\` | $desc | $ran |"
    done
    echo
    echo "## Acceptance checks"
    echo
    sed 's/^/- /' "$ACCEPT"
    echo
    cat conformance/analysis.md
    echo
    "$STCONFORM" matrix "${files[@]}"
  } > CONFORMANCE.md.tmp && mv CONFORMANCE.md.tmp CONFORMANCE.md
  echo "== wrote CONFORMANCE.md"
fi

# --- writers (conformance/run-writers.sh): after the readers, so that without --ci the
# writers part is spliced into the CONFORMANCE.md just written.
writer_args=()
[ "$ci" = 1 ] && writer_args+=(--ci)
[ "$large" = 1 ] && writer_args+=(--large)
[ "$bless" = 1 ] && writer_args+=(--bless)
[ "$setup" = 0 ] && writer_args+=(--no-setup)
[ "$report_only" = 1 ] && writer_args+=(--report-only)
bash conformance/run-writers.sh "${writer_args[@]}" || status=1
# --- end writers

# The HTML page of both matrices, next to CONFORMANCE.md (from the same results).
if [ "$ci" = 0 ]; then
  writer_files=()
  for f in "$ROOT"/target/writers-results/*.json; do [ -f "$f" ] && writer_files+=("$f"); done
  if "$STCONFORM" page --out CONFORMANCE.html "${files[@]}" ${writer_files[@]+"${writer_files[@]}"} > /dev/null; then
    echo "== wrote CONFORMANCE.html"
  else
    echo "run-all.sh: CONFORMANCE.html was not written" >&2
    status=1
  fi
fi

if [ "$status" = 0 ]; then
  echo "run-all.sh: every result is as recorded"
fi
if [ "${#skipped[@]}" -gt 0 ]; then
  echo "run-all.sh: skipped (did not build): ${skipped[*]}" >&2
fi
exit "$status"
