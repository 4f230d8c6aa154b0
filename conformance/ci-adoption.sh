#!/usr/bin/env bash
# CI for what another project adopts (issue 24's "Done when"): the corpus release archive is
# the same bytes twice and the runner runs from it; the wheel, installed into a fresh venv and
# run with no Rust toolchain on PATH, runs a v1 adapter over the bundled corpus, shows a
# wrong-reason adapter's WRONG_RULE in its default summary, stops a crashing adapter early and
# refuses to bless it; the writer runner runs from the wheel too; and the HTML results page,
# loaded in headless Chromium (Debian's package) at 1,280 px, shows the cells of known cases
# and filters, keeps every matrix in a box that fits the window and scrolls sideways with its
# case column sticky, and hides no row when opened at an anchor.
#
# Usage: conformance/ci-adoption.sh    (after the workspace's dev build, which it reuses)
# Output under target/adoption/ (the page, its screenshot page.png, the runs' results).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="$ROOT/target/adoption"
rm -rf "$OUT"
mkdir -p "$OUT"
t0=$(date +%s)
step() { echo "== $1 ($(( $(date +%s) - t0 )) s)"; }
fail() { echo "ci-adoption.sh: FAIL: $1" >&2; exit 1; }

step "corpus release archive: the same bytes twice, checked, and runnable"
cargo build --quiet -p stcheck-conformance --bins
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
"$TARGET/debug/stcorpus" pack --out "$OUT/a/stcheck-corpus.tar.gz"
"$TARGET/debug/stcorpus" pack --out "$OUT/b/stcheck-corpus.tar.gz" > /dev/null
cmp "$OUT/a/stcheck-corpus.tar.gz" "$OUT/b/stcheck-corpus.tar.gz" || fail "two packs differ"
ARCHIVE="$OUT/a/stcheck-corpus.tar.gz"

step "the wheel (maturin, binary bindings, dev profile) and a fresh venv"
WHEEL="$(bash conformance/wheel/build.sh --dev)"
python3 -m venv "$OUT/venv"
"$OUT/venv/bin/python" -m pip install --quiet --no-index --no-deps "$WHEEL"

# From here on: the installed programs only, with no Rust toolchain on PATH (the machine may
# have one in /usr/bin too, so PATH is the venv and a directory of the few system programs
# the runs need), no CARGO_* or RUSTUP_* variables, and a working directory without a corpus.
WORK="$OUT/work"
SYSBIN="$OUT/sysbin"
mkdir -p "$WORK" "$SYSBIN"
for tool in sh bash env kill cat; do
  ln -s "$(command -v "$tool")" "$SYSBIN/$tool"
done
cp conformance/adapters/python/minimal_adapter.py "$WORK/"
cp conformance/adapters/writers/example_writer.py "$WORK/" 2>/dev/null || true
bare() {
  (cd "$WORK" && env -i HOME="$WORK" PATH="$OUT/venv/bin:$SYSBIN" LANG=C.UTF-8 \
    XDG_CACHE_HOME="$WORK/cache" "$@")
}
bare sh -c '! command -v cargo && ! command -v rustc && ! command -v rustup' > /dev/null \
  || fail "a Rust toolchain is on PATH"
bare stconform corpus | tee "$OUT/corpus.txt"
VERSION="$(sed -n 's/^pub const CORPUS_VERSION: &str = "\(.*\)";/\1/p' conformance/src/corpus/mod.rs)"
grep -qF "(bundled, release $VERSION, checked)" "$OUT/corpus.txt" || fail "the bundled corpus (release $VERSION) was not used"

step "a v1 adapter (exit codes only) over the bundled corpus, against its known failures"
cp conformance/known-failures/minimal-v1.json "$WORK/known.json"
bare stconform --adapter minimal-v1 --known-failures known.json --save v1.json \
  -- python3 minimal_adapter.py > "$OUT/v1.txt" || { cat "$OUT/v1.txt"; fail "the v1 adapter's results differ"; }
head -n 5 "$OUT/v1.txt"
grep -q "PASS (no reason given)" "$OUT/v1.txt" || fail "no PASS (no reason given) for a v1 adapter"

step "a wrong-reason adapter: WRONG_RULE in the default summary"
bare env MINIMAL_ADAPTER_RULE=SCHEMA-ROOT \
  stconform --adapter wrong-reason --no-known-failures --save wrong.json \
  -- python3 minimal_adapter.py > "$OUT/wrong.txt" && fail "a wrong-reason run passed"
head -n 5 "$OUT/wrong.txt"
grep -Eq '^  security .*WRONG_RULE [0-9]+' "$OUT/wrong.txt" || fail "no WRONG_RULE count in the summary"

step "a crashing adapter stops early, says why, and cannot be blessed"
status=0
bare stconform --adapter broken --known-failures broken.json --bless \
  -- python3 -c 'import not_a_module_anywhere' > "$OUT/broken.txt" 2>&1 || status=$?
cat "$OUT/broken.txt"
[ "$status" = 2 ] || fail "a crashing adapter exited $status, not 2"
grep -q "ModuleNotFoundError: No module named 'not_a_module_anywhere'" "$OUT/broken.txt" || fail "the adapter's error is not quoted"
[ ! -e "$WORK/broken.json" ] || fail "a crashing adapter was blessed"

step "stcheck's own adapter from the wheel, and a run from the release archive"
bare stconform --adapter stcheck-strict --persistent --index --no-known-failures --save stcheck.json \
  -- adapter-stcheck --persistent > "$OUT/stcheck.txt" || { cat "$OUT/stcheck.txt"; fail "stcheck failed a case"; }
head -n 1 "$OUT/stcheck.txt"
bare stconform --corpus "$ARCHIVE" --adapter minimal-v1 --known-failures known.json \
  -- python3 minimal_adapter.py > "$OUT/archive.txt" || { cat "$OUT/archive.txt"; fail "the run from the archive differs"; }
head -n 1 "$OUT/archive.txt"

step "the writer runner from the wheel"
bare stwrite --adapter stcheck --no-known-failures --save writer.json -- writer-stcheck \
  > "$OUT/writer.txt" || { cat "$OUT/writer.txt"; fail "stcheck's writer failed a task"; }
head -n 2 "$OUT/writer.txt"

step "the HTML results page in headless Chromium"
bare stconform page --out page.html v1.json wrong.json stcheck.json writer.json
cp "$WORK/page.html" "$OUT/page.html"
if ! command -v chromium > /dev/null; then
  apt-get install -y -qq chromium > /dev/null 2>&1 || { apt-get update -qq > /dev/null && apt-get install -y -qq chromium > /dev/null; }
fi
python3 conformance/tests/page_check.py "$OUT/page.html" "$OUT/page.png" --width 1280 \
  --expect stcheck-strict malformed/frame/not-safetensors-png PASS \
  --expect minimal-v1 invalid/layout/gap-between PASS \
  --expect wrong-reason invalid/layout/gap-between WRONG_RULE \
  --expect minimal-v1 valid/dtype/f4-even SHOULD_HAVE_ACCEPTED \
  --expect stcheck dtype/u8 PASS \
  --filtered "class=security&outcome=WRONG_RULE" invalid/layout/gap-between valid/dtype/f32 \
  --anchor readers-matrix --anchor invalid/layout/gap-between

step "done"
