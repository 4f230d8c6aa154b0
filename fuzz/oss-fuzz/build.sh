#!/bin/bash -eu
# OSS-Fuzz (and ClusterFuzzLite) build script: every target of fuzz/Cargo.toml into $OUT, with
# its seed corpus ($OUT/<target>_seed_corpus.zip: the kept corpus fuzz/corpus/<target>/) and
# its dictionary ($OUT/<target>.dict) and its libFuzzer options ($OUT/<target>.options).
# OSS-Fuzz's environment sets $SRC, $OUT, $CC, $CFLAGS, $RUSTFLAGS, $SANITIZER and the nightly
# toolchain; CI (.ci/fuzz.sh) runs it here with the same variables and fuzzes what it puts in
# $OUT, as OSS-Fuzz would.
cd "$SRC/stcheck"
export RUSTUP_TOOLCHAIN=${RUSTUP_TOOLCHAIN:-nightly}

# OSS-Fuzz's sanitizer names, as cargo-fuzz takes them; `coverage` builds are instrumented by
# the flags OSS-Fuzz puts in RUSTFLAGS, so they need no sanitizer.
case ${SANITIZER:-address} in
    address) sanitizer=address ;;
    memory) sanitizer=memory ;;
    undefined | coverage | none) sanitizer=none ;;
    *) echo "build.sh: sanitizer $SANITIZER is not supported" >&2; exit 1 ;;
esac

# Optimised, with debug assertions and overflow checks, as CI fuzzes them.
(cd fuzz && cargo fuzz build -O --debug-assertions --sanitizer "$sanitizer")

# Where cargo put them: fuzz/target, or $CARGO_TARGET_DIR (absolute, whatever the variable's form).
target_dir=$(cd fuzz && cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
triple=$(rustc -vV | sed -n 's/^host: //p')
built=$target_dir/$triple/release
for t in $(cd fuzz && cargo fuzz list); do
    cp "$built/$t" "$OUT/$t"
    rm -f "$OUT/${t}_seed_corpus.zip"
    if [ -d "fuzz/corpus/$t" ] && [ -n "$(ls -A "fuzz/corpus/$t")" ]; then
        (cd "fuzz/corpus/$t" && zip -q -r "$OUT/${t}_seed_corpus.zip" .)
    fi
    # The dictionary (none for structured, index, writer, remote_range, rule_table).
    case $t in
        validate | stream | differential | fast_path | remote_index | deep_scan | portable | \
            reference_profile | file_source | source_faults) cp fuzz/dict/safetensors.dict "$OUT/$t.dict" ;;
        address | hub_listing | content_range | glob | serve_query) cp fuzz/dict/web.dict "$OUT/$t.dict" ;;
        serve_clamd) cp fuzz/dict/clamd.dict "$OUT/$t.dict" ;;
        reader_table) cp fuzz/dict/readers.dict "$OUT/$t.dict" ;;
        protocol_reply) cp fuzz/dict/protocol.dict "$OUT/$t.dict" ;;
        corpus_archive) cp fuzz/dict/archive.dict "$OUT/$t.dict" ;;
    esac
    # Inputs are capped at 64 KiB, so a single allocation above 512 MiB or a resident size
    # above 2 GiB can only be a bug (the validator allocates O(header length)); an input that
    # takes 10 s is a hang.
    printf '[libfuzzer]\nmax_len = 65536\nrss_limit_mb = 2048\nmalloc_limit_mb = 512\ntimeout = 10\n' \
        > "$OUT/$t.options"
    # remote_range runs a loopback server thread and the HTTP client's threads; glibc's record
    # of their thread-local destructors (32 bytes, `__cxa_thread_atexit_impl`) outlives an
    # input, and LeakSanitizer reports it. The memory is not stcheck's: no leak detection there.
    if [ "$t" = remote_range ]; then echo 'detect_leaks = 0' >> "$OUT/$t.options"; fi
done
