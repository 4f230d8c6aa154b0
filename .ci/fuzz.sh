#!/usr/bin/env bash
# Build every fuzz target with nightly and run each for FUZZ_SECONDS (default 20) seconds,
# starting from its kept corpus (fuzz/corpus/<target>/, committed) and the seeds made from
# corpus/ (fuzz/seed-corpora.sh), with its dictionary (fuzz/dict/). Fails on any crash, leak,
# out-of-memory or timeout (libFuzzer exits non-zero and writes the input to
# fuzz/artifacts/<target>/); the input is then kept under target/fuzz-findings/<target>/ and
# printed in base64, so it outlives the machine. Called by .ci/run; see fuzz/README.md.
#
#   FUZZ_SECONDS   seconds per target (default 20: 23 targets x 20 s, about the 14 x 30 s the
#                  stage took before the option, file, table, writer and conformance targets)
#   FUZZ_TARGETS   space-separated targets to run (default: every target of fuzz/Cargo.toml)
#   FUZZ_LOG_DIR   where the logs go (default target/fuzz-logs)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-20}
log_dir=${FUZZ_LOG_DIR:-target/fuzz-logs}
mkdir -p "$log_dir"

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

# One build for all targets: optimised, with debug assertions and overflow checks (-a), so the
# reference crate's unchecked arithmetic panics in `differential` and stcheck's own arithmetic
# is checked everywhere; AddressSanitizer (the default) also detects leaks.
(cd fuzz && cargo +nightly fuzz build -O -a)

# The kept corpus is copied, so that what a run adds stays out of the work tree; the seeds are a
# second, read-only corpus directory.
bash fuzz/seed-corpora.sh target/fuzz-seeds
work=target/fuzz-corpus

# Memory: inputs are capped at 64 KiB (-max_len), so a single allocation above 512 MiB or a
# resident size above 2 GiB can only be a bug (the validator allocates O(header length)).
flags=(
    -max_total_time="$seconds"
    -rss_limit_mb=2048
    -malloc_limit_mb=512
    -timeout=10
    -max_len=65536
    -print_final_stats=1
)

# The dictionary of each target (none for the `arbitrary`-driven ones).
dict_of() {
    case $1 in
        validate | stream | differential | fast_path | remote_index | deep_scan | portable | \
            reference_profile | file_source) echo "-dict=$PWD/fuzz/dict/safetensors.dict" ;;
        address | hub_listing | content_range | glob | serve_query) echo "-dict=$PWD/fuzz/dict/web.dict" ;;
        serve_clamd) echo "-dict=$PWD/fuzz/dict/clamd.dict" ;;
        reader_table) echo "-dict=$PWD/fuzz/dict/readers.dict" ;;
        protocol_reply) echo "-dict=$PWD/fuzz/dict/protocol.dict" ;;
        corpus_archive) echo "-dict=$PWD/fuzz/dict/archive.dict" ;;
    esac
}

# remote_range runs a loopback server thread and the HTTP client's threads; glibc's record of
# their thread-local destructors (32 bytes, `__cxa_thread_atexit_impl`) outlives an input, and
# LeakSanitizer reports it. The memory is not stcheck's; leak detection is off for that target.
extra_of() {
    case $1 in
        remote_range) echo "-detect_leaks=0" ;;
    esac
}

failed=()
mkdir -p target/fuzz-findings
for t in $targets; do
    echo "--- fuzz $t for ${seconds}s (log: $log_dir/$t.log)"
    rm -rf "$work/$t"
    mkdir -p "$work/$t" "target/fuzz-seeds/$t"
    if [ -d "fuzz/corpus/$t" ]; then cp -R "fuzz/corpus/$t/." "$work/$t/"; fi
    dict=$(dict_of "$t")
    extra=$(extra_of "$t")
    if (cd fuzz && STCHECK_FINDINGS_DIR="$PWD/../target/fuzz-findings" \
            cargo +nightly fuzz run -O -a "$t" "../$work/$t" "../target/fuzz-seeds/$t" -- \
            "${flags[@]}" ${dict:+"$dict"} ${extra:+"$extra"}) \
            > "$log_dir/$t.log" 2>&1; then
        grep -E '^stat::number_of_executed_units|^#[0-9]+ +DONE' "$log_dir/$t.log" | tail -2 || true
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
