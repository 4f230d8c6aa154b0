#!/usr/bin/env bash
# Coverage of the library code reached by the fuzz targets over their kept corpora
# (fuzz/corpus/<target>/): `cargo fuzz coverage` per target, the profiles merged with
# llvm-profdata, and a per-file region and line table for validator/ (the core), gate/ and
# print/ from llvm-cov. Ends with the line `core region coverage: NN.N%`. See fuzz/README.md.
#
#   FUZZ_TARGETS     targets to measure (default: every target of fuzz/Cargo.toml)
#   FUZZ_CORPUS      the corpora's root (default fuzz/corpus)
#   LLVM_BIN         where llvm-profdata and llvm-cov are, matching rustc's LLVM
#                    (default /usr/lib/llvm-22/bin: Debian's llvm-22)
#   COVERAGE_OUT     where the merged profile and the reports go (default target/fuzz-coverage)
#   COVERAGE_JOBS    targets measured at a time (default 2; 1 measures one after another)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
llvm_bin=${LLVM_BIN:-/usr/lib/llvm-22/bin}
corpus=${FUZZ_CORPUS:-fuzz/corpus}
out=${COVERAGE_OUT:-target/fuzz-coverage}
for tool in llvm-profdata llvm-cov; do
    if [ ! -x "$llvm_bin/$tool" ]; then
        echo "coverage: $llvm_bin/$tool is missing (apt-get install llvm-22, or set LLVM_BIN)" >&2
        exit 2
    fi
done
targets=${FUZZ_TARGETS:-$(cd fuzz && cargo +nightly fuzz list)}
mkdir -p "$out"
case $corpus in /*) ;; *) corpus=$root/$corpus ;; esac

# One target's profile over its corpus; its log in $out/<target>.log, and $out/<target>.failed
# if it failed.
measure() {
    rm -f "$out/$1.failed"
    # Built with debug assertions (-a), as the targets are fuzzed.
    (cd fuzz && cargo +nightly fuzz coverage -a --llvm-path "$llvm_bin" "$1" "$corpus/$1" \
        -- -rss_limit_mb=2048 -timeout=10) > "$out/$1.log" 2>&1 || {
        echo "coverage: cargo fuzz coverage $1 failed; last lines of $out/$1.log:" >&2
        tail -20 "$out/$1.log" >&2
        touch "$out/$1.failed"
    }
}

# COVERAGE_JOBS targets at a time (default 2): cargo builds one at a time (the build directory
# is locked), so one target's corpus runs while the next one builds. What is measured does
# not change: each target is built and run as it is alone.
jobs=${COVERAGE_JOBS:-2}
measured=()
for t in $targets; do
    if [ -z "$(ls -A "$corpus/$t" 2>/dev/null)" ]; then
        echo "coverage: no corpus for $t under $corpus; skipped" >&2
        continue
    fi
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
        wait -n || true
    done
    measure "$t" &
    measured+=("$t")
done
wait
for t in "${measured[@]}"; do
    if [ -e "$out/$t.failed" ]; then
        exit 1
    fi
done
objects=()
profiles=()
for t in "${measured[@]}"; do
    objects+=(-object "$(find fuzz/target -path "*/coverage/*/release/$t" -type f | head -1)")
    profiles+=("fuzz/coverage/$t/coverage.profdata")
done
if [ ${#profiles[@]} -eq 0 ]; then
    echo "coverage: no target had a corpus" >&2
    exit 1
fi
"$llvm_bin/llvm-profdata" merge -sparse "${profiles[@]}" -o "$out/all.profdata"

# Only the project's library code: not the registry, the standard library, the fuzz
# harnesses or the fuzzing crate's own properties.
# (The checkout's own path may hold `fuzz`: the harness folders are named from its root.)
ignore="(/\\.cargo/|/\\.rustup/|/rustc/|^$root/fuzz/|^$root/fuzzing/)"
"$llvm_bin/llvm-cov" report --instr-profile "$out/all.profdata" "${objects[@]}" \
    -ignore-filename-regex="$ignore" > "$out/report.txt"
"$llvm_bin/llvm-cov" export --summary-only --instr-profile "$out/all.profdata" \
    "${objects[@]}" -ignore-filename-regex="$ignore" > "$out/summary.json"
python3 - "$out/summary.json" "$root" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))["data"][0]["files"]
root = sys.argv[2].rstrip("/") + "/"
crates = {"validator/": [0, 0, 0, 0], "gate/": [0, 0, 0, 0], "print/": [0, 0, 0, 0]}
rows = []
for f in sorted(data, key=lambda f: f["filename"]):
    name = f["filename"].removeprefix(root)
    crate = next((c for c in crates if name.startswith(c)), None)
    if crate is None:
        continue
    r, l = f["summary"]["regions"], f["summary"]["lines"]
    t = crates[crate]
    t[0] += r["covered"]; t[1] += r["count"]; t[2] += l["covered"]; t[3] += l["count"]
    rows.append((name, r["covered"], r["count"], l["covered"], l["count"]))
pct = lambda a, b: 100.0 * a / b if b else 100.0
print(f"{'file':52} {'regions':>16} {'lines':>16}")
for name, rc, rn, lc, ln in rows:
    print(f"{name:52} {rc:>6}/{rn:<6} {pct(rc, rn):5.1f}% {lc:>5}/{ln:<5} {pct(lc, ln):5.1f}%")
print()
for crate, (rc, rn, lc, ln) in crates.items():
    if rn == 0:
        print(f"{crate:52} {'not linked into any target':>33}")
        continue
    print(f"{crate:52} {rc:>6}/{rn:<6} {pct(rc, rn):5.1f}% {lc:>5}/{ln:<5} {pct(lc, ln):5.1f}%")
if not rows:
    sys.exit("coverage: no file of validator/, gate/ or print/ in the profile")
rc, rn = crates["validator/"][:2]
print(f"core region coverage: {pct(rc, rn):.1f}%")
PY
