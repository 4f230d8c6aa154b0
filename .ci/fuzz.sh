#!/usr/bin/env bash
# Build every fuzz target with the OSS-Fuzz build script (fuzz/oss-fuzz/build.sh) and the
# environment OSS-Fuzz gives it, into target/oss-fuzz/out, check that every target landed there
# with its options, dictionary and seed corpus, and run each built binary for FUZZ_SECONDS
# (default 20) seconds as OSS-Fuzz would: with its options file, its dictionary, and its seed
# corpus (the kept corpus fuzz/corpus/<target>/, unzipped) plus the seeds made from corpus/
# (fuzz/seed-corpora.sh). Fails on any crash, leak, out-of-memory or timeout (libFuzzer exits
# non-zero and writes the input to fuzz/artifacts/<target>/); the input is then kept under
# target/fuzz-findings/<target>/ and printed in base64, so it outlives the machine. Called by
# .ci/run; see fuzz/README.md.
#
#   FUZZ_SECONDS   seconds per target (default 20)
#   FUZZ_TARGETS   space-separated targets to run (default: every target of fuzz/Cargo.toml)
#   FUZZ_LOG_DIR   where the logs go (default target/fuzz-logs)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-20}
log_dir=${FUZZ_LOG_DIR:-target/fuzz-logs}
mkdir -p "$log_dir"

# OSS-Fuzz's build uses clang (CC/CXX below: libFuzzer's C++ is compiled with the sanitizer
# flags it is given) and zip; the runs unzip the seed corpora. Debian's packages, when missing.
if ! command -v clang >/dev/null || ! command -v clang++ >/dev/null || ! command -v zip >/dev/null \
    || ! command -v unzip >/dev/null; then
    SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
    $SUDO apt-get install -y -qq --no-install-recommends clang zip unzip > /dev/null 2>&1 \
        || { $SUDO apt-get update -qq > /dev/null && $SUDO apt-get install -y -qq --no-install-recommends clang zip unzip > /dev/null; }
fi
if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

# The fuzz crate's lock file must be current: a build that rewrites it means the core's
# dependencies changed without it.
cargo metadata --manifest-path fuzz/Cargo.toml --format-version 1 --locked > /dev/null

targets=${FUZZ_TARGETS:-$(cd fuzz && cargo +nightly fuzz list)}

# One build for all targets, by OSS-Fuzz's build script with the variables OSS-Fuzz sets for a
# libFuzzer AddressSanitizer build of a Rust project, so CI checks that script on every run. It
# builds optimised with debug assertions and overflow checks, so the reference crate's unchecked
# arithmetic panics in `differential` and stcheck's own arithmetic is checked everywhere;
# AddressSanitizer also detects leaks. Two differences from OSS-Fuzz's image: its CXXFLAGS add
# -stdlib=libc++, which that image has and this machine need not; its $SRC holds the checkout
# as `stcheck`, here a link to it. The Rust build has a target directory of its own, as its
# RUSTFLAGS differ from `cargo fuzz build`'s.
oss=$PWD/target/oss-fuzz
out=$oss/out
rm -rf "$out" "$oss/src"
mkdir -p "$out" "$oss/work" "$oss/src"
ln -s "$PWD" "$oss/src/stcheck"
cflags="-O1 -fno-omit-frame-pointer -gline-tables-only -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION"
cflags+=" -fsanitize=address -fsanitize-address-use-after-scope -fsanitize=fuzzer-no-link"
build_start=$(date +%s)
SRC=$oss/src OUT=$out WORK=$oss/work CC=clang CXX=clang++ CFLAGS="$cflags" CXXFLAGS="$cflags" \
    RUSTFLAGS="--cfg fuzzing -Cdebuginfo=1 -Cforce-frame-pointers" SANITIZER=address \
    FUZZING_ENGINE=libfuzzer FUZZING_LANGUAGE=rust LIB_FUZZING_ENGINE=-fsanitize=fuzzer \
    ARCHITECTURE=x86_64 RUSTUP_TOOLCHAIN=nightly CARGO_TARGET_DIR=$oss/cargo \
    bash fuzz/oss-fuzz/build.sh
echo "fuzz: fuzz/oss-fuzz/build.sh took $(( $(date +%s) - build_start )) s"

# What OSS-Fuzz picks up from $OUT: each target's binary and options, its dictionary where it
# has one, its seed corpus where it has a kept corpus.
missing=()
for t in $(cd fuzz && cargo +nightly fuzz list); do
    [ -x "$out/$t" ] || missing+=("$t")
    [ -f "$out/$t.options" ] || missing+=("$t.options")
    if [ -n "$(ls -A "fuzz/corpus/$t" 2>/dev/null)" ] && [ ! -f "$out/${t}_seed_corpus.zip" ]; then
        missing+=("${t}_seed_corpus.zip")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "fuzz: fuzz/oss-fuzz/build.sh did not put in \$OUT: ${missing[*]}"
    exit 1
fi

# The seeds from corpus/ are a second, read-only corpus directory; the seed corpus is unzipped
# into a work directory, so what a run adds stays out of the work tree.
bash fuzz/seed-corpora.sh target/fuzz-seeds
work=target/fuzz-corpus

failed=()
mkdir -p target/fuzz-findings
for t in $targets; do
    echo "--- fuzz $t for ${seconds}s (log: $log_dir/$t.log)"
    rm -rf "$work/$t"
    mkdir -p "$work/$t" "target/fuzz-seeds/$t" "fuzz/artifacts/$t"
    if [ -f "$out/${t}_seed_corpus.zip" ]; then unzip -q "$out/${t}_seed_corpus.zip" -d "$work/$t"; fi
    # The options file's `name = value` lines as libFuzzer flags.
    mapfile -t flags < <(sed -n 's/^\([a-z_]*\) = \(.*\)$/-\1=\2/p' "$out/$t.options")
    flags+=(-max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$t/")
    if [ -f "$out/$t.dict" ]; then flags+=(-dict="$out/$t.dict"); fi
    if STCHECK_FINDINGS_DIR="$PWD/target/fuzz-findings" \
            "$out/$t" "${flags[@]}" "$work/$t" "target/fuzz-seeds/$t" > "$log_dir/$t.log" 2>&1; then
        grep -E '^stat::number_of_executed_units|^#[0-9]+[[:space:]]+DONE' "$log_dir/$t.log" | tail -2 || true
    else
        echo "FAILED: fuzz target $t (crash, leak, OOM or timeout); last lines of the log:"
        tail -40 "$log_dir/$t.log"
        mkdir -p "target/fuzz-findings/$t"
        for a in fuzz/artifacts/"$t"/*; do
            [ -f "$a" ] || continue
            cp "$a" "target/fuzz-findings/$t/"
            echo "finding input $(basename "$a") (base64; keep it under fuzz/corpus/$t/ with a regression test):"
            base64 -w 76 "$a" | head -200
        done
        failed+=("$t")
    fi
    # Findings in the reference crate are reported, not failures.
    grep -h '^REFERENCE FINDING' "$log_dir/$t.log" | sort -u || true
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: failures in: ${failed[*]} (inputs under fuzz/artifacts/)"
    exit 1
fi
echo "fuzz: every target ran ${seconds}s without a finding"
