#!/bin/bash -eu
# OSS-Fuzz (and ClusterFuzzLite) build script: every target of fuzz/Cargo.toml into $OUT, with
# its seed corpus ($OUT/<target>_seed_corpus.zip: the kept corpus fuzz/corpus/<target>/) and
# its dictionary ($OUT/<target>.dict). OSS-Fuzz's environment sets $SRC, $OUT, $CC, $CFLAGS,
# $SANITIZER and the nightly toolchain; run here, it builds the same with the local nightly
# (see fuzz/README.md: `OUT=... SRC=... CC=clang ... bash fuzz/oss-fuzz/build.sh`).
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

triple=$(rustc -vV | sed -n 's/^host: //p')
built=${CARGO_TARGET_DIR:-fuzz/target}/$triple/release
for t in $(cd fuzz && cargo fuzz list); do
    cp "$built/$t" "$OUT/$t"
    if [ -d "fuzz/corpus/$t" ] && [ -n "$(ls -A "fuzz/corpus/$t")" ]; then
        (cd "fuzz/corpus/$t" && zip -q -r "$OUT/${t}_seed_corpus.zip" .)
    fi
    case $t in
        validate | stream | differential | fast_path | remote_index | deep_scan | portable | \
            reference_profile | file_source) cp fuzz/dict/safetensors.dict "$OUT/$t.dict" ;;
        address | hub_listing | content_range | glob | serve_query) cp fuzz/dict/web.dict "$OUT/$t.dict" ;;
        serve_clamd) cp fuzz/dict/clamd.dict "$OUT/$t.dict" ;;
        reader_table) cp fuzz/dict/readers.dict "$OUT/$t.dict" ;;
        protocol_reply) cp fuzz/dict/protocol.dict "$OUT/$t.dict" ;;
        corpus_archive) cp fuzz/dict/archive.dict "$OUT/$t.dict" ;;
    esac
    # Inputs are capped as CI caps them.
    printf '[libfuzzer]\nmax_len = 65536\nrss_limit_mb = 2048\nmalloc_limit_mb = 512\n' > "$OUT/$t.options"
    # The loopback server's threads: see .ci/fuzz.sh.
    if [ "$t" = remote_range ]; then echo 'detect_leaks = 0' >> "$OUT/$t.options"; fi
done
