#!/usr/bin/env bash
# The part of .ci/release-check.sh that runs as `nobody`, with PATH free of Rust, in $SCRATCH:
# artifacts/ (a copy of target/release-artifacts), work/, home/, repo/ (a clone: the tests and
# examples it runs, and the pre-commit hook's repository). VERSION and PRE_COMMIT_VERSION given.
set -euo pipefail
t0=$(date +%s)
step() { echo "-- $1 ($(( $(date +%s) - t0 )) s)"; }
fail() { echo "release-user.sh: FAIL: $1" >&2; exit 1; }
A="$SCRATCH/artifacts"
cd "$SCRATCH/work"
[ "$(id -un)" = nobody ] || fail "not running as nobody"
! command -v cargo && ! command -v rustc && ! command -v rustup || fail "a Rust toolchain is on PATH"
pipq() { "$1/bin/python" -m pip install --quiet --disable-pip-version-check "${@:2}"; }

# README's promise, measured (printed, not asserted: a time is no test): a newcomer with the
# artifacts clones the repository (here from the local clone: no network), verifies them and
# has a working stcheck, by the static binary and by the wheel.
now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
step "a newcomer: clone, sha256sum -c, a working stcheck (timed)"
n0="$(now)"
git clone --quiet "$SCRATCH/repo" "$SCRATCH/newcomer"
(cd "$A" && sha256sum --check --quiet SHA256SUMS)
tar -xzf "$A/stcheck-$VERSION-x86_64-unknown-linux-gnu.tar.gz" -C "$SCRATCH/newcomer"
"$SCRATCH/newcomer/stcheck-$VERSION-x86_64-unknown-linux-gnu/stcheck" "$SCRATCH/newcomer/examples/model.safetensors"
echo "clone to a working stcheck, the static binary: $(took "$n0") s"
n0="$(now)"
python3 -m venv "$SCRATCH/newcomer/.venv"
pipq "$SCRATCH/newcomer/.venv" --no-index "$A"/stcheck_cli-"$VERSION"-*.whl
"$SCRATCH/newcomer/.venv/bin/stcheck" "$SCRATCH/newcomer/examples/model.safetensors"
echo "then a working stcheck from the wheel (venv, pip install): $(took "$n0") s more"

step "stcheck-cli: pip install the wheel, stcheck on PATH"
python3 -m venv "$SCRATCH/cli"
pipq "$SCRATCH/cli" --no-index "$A"/stcheck_cli-"$VERSION"-*.whl
"$SCRATCH/cli/bin/stcheck" --version | grep -qx "stcheck $VERSION" || fail "stcheck --version"
"$SCRATCH/cli/bin/stcheck" model.safetensors || fail "stcheck on a valid file"
code=0; "$SCRATCH/cli/bin/stcheck" --format github duplicate-name.safetensors > gh.txt || code=$?
[ "$code" = 1 ] && grep -q '^::error file=duplicate-name.safetensors,line=1,title=JSON-DUPLICATE-KEY::' gh.txt \
  || fail "stcheck --format github on an invalid file (exit $code)"

step "the static binary"
tar -xzf "$A/stcheck-$VERSION-x86_64-unknown-linux-gnu.tar.gz"
"./stcheck-$VERSION-x86_64-unknown-linux-gnu/stcheck" model.safetensors || fail "the static stcheck"

step "stcheck (Python): pip install the wheel (numpy from PyPI), import stcheck"
python3 -m venv "$SCRATCH/py"
pipq "$SCRATCH/py" "numpy>=1.21"
pipq "$SCRATCH/py" --no-index --no-deps "$A"/stcheck-"$VERSION"-cp39-abi3-*.whl
"$SCRATCH/py/bin/python" - <<'PY' || fail "import stcheck"
import stcheck
good = stcheck.check("model.safetensors")
bad = stcheck.check("duplicate-name.safetensors")
assert good.valid and not bad.valid, (good, bad)
assert "JSON-DUPLICATE-KEY" in str(bad.error), bad.error
t = stcheck.load_file("model.safetensors")
assert len(t) == 3, t
print("import stcheck:", stcheck.__version__, "checks and loads")
PY

step "stcheck-conformance: stconform, stwrite, stcorpus"
python3 -m venv "$SCRATCH/conf"
pipq "$SCRATCH/conf" --no-index "$A"/stcheck_conformance-"$VERSION"-*.whl
export PATH="$SCRATCH/conf/bin:$PATH"
stconform corpus | tee corpus.txt
grep -q "(bundled, release" corpus.txt || fail "stconform corpus: the bundled corpus was not used"
stconform --adapter minimal-v1 --known-failures minimal-v1.json -- python3 minimal_adapter.py > v1.txt \
  || { cat v1.txt; fail "stconform with a v1 adapter"; }
head -n 3 v1.txt
stwrite --adapter stcheck --no-known-failures -- writer-stcheck > writer.txt \
  || { cat writer.txt; fail "stwrite"; }
head -n 2 writer.txt
code=0; stcorpus --large large > large.txt 2>&1 || code=$?
echo "stcorpus --large: exit $code"; head -n 3 large.txt
[ "$code" = 0 ] || fail "stcorpus --large (exit $code)"

step "the npm tarball: Node import, Node require, an esbuild bundle in Chromium (js/test/package.test.mjs)"
STCHECK_JS_TARBALL="$A/stcheck-$VERSION.tgz" STCHECK_JS_PROJECT="$SCRATCH/npm" \
  node --experimental-websocket --no-warnings --test --test-reporter=spec \
  "$SCRATCH/repo/js/test/package.test.mjs" || fail "the npm tarball"

step "the GitHub Action's steps in a runner-like workspace"
python3 -m venv "$SCRATCH/pc"
pipq "$SCRATCH/pc" "pre-commit==$PRE_COMMIT_VERSION"
(cd "$SCRATCH/repo" && "$SCRATCH/pc/bin/python" action/test.py "$A") || fail "action/test.py"

step "pre-commit try-repo: the stcheck-wheel hook, its wheel from the artifacts"
git init --quiet "$SCRATCH/hooked"
cp model.safetensors duplicate-name.safetensors "$SCRATCH/hooked/"
cd "$SCRATCH/hooked"
git add .
export PIP_FIND_LINKS="$A" PRE_COMMIT_HOME="$SCRATCH/pre-commit-home"
"$SCRATCH/pc/bin/pre-commit" try-repo "$SCRATCH/repo" stcheck-wheel --verbose --files model.safetensors \
  > good.txt 2>&1 || { cat good.txt; fail "the hook failed a valid file"; }
code=0
"$SCRATCH/pc/bin/pre-commit" try-repo "$SCRATCH/repo" stcheck-wheel --files model.safetensors duplicate-name.safetensors \
  > bad.txt 2>&1 || code=$?
[ "$code" = 1 ] && grep -q "duplicate-name.safetensors: error JSON-DUPLICATE-KEY" bad.txt \
  || { cat bad.txt; fail "the hook passed an invalid file (exit $code)"; }
echo "pre-commit: the stcheck-wheel hook passes a valid file and fails an invalid one"
step "done"
