#!/usr/bin/env bash
# Seed the fuzz targets from the golden files of corpus/ (never by hand copies), into DIR
# (default target/fuzz-seeds; the kept, minimised corpora are fuzz/corpus/<target>/):
#   DIR/<target>/<area>__<file>.safetensors
# The `stream` target reads a chunk schedule from the end of its input (the last byte is its
# length), so its seeds get one 0x00 byte appended: the whole file, read in one go.
# The `structured` target builds its inputs itself from `arbitrary` bytes; files make poor
# seeds for it, so it starts from an empty corpus.
# The `fast_path` target takes header bytes: its seeds are the files without the length field.
# Run this again after corpus/ changes. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-target/fuzz-seeds}
targets=(validate stream differential)
count=0
for t in "${targets[@]}" structured fast_path; do mkdir -p "$dir/$t"; done
# seed FILE NAME: one input for every target, in the form each target reads.
seed() {
    for t in "${targets[@]}"; do
        if [ "$t" = stream ]; then
            { cat "$1"; printf '\0'; } > "$dir/$t/$2"
        else
            cp "$1" "$dir/$t/$2"
        fi
    done
    tail -c +9 "$1" > "$dir/fast_path/$2"
    count=$((count + 1))
}
while IFS= read -r -d '' f; do
    rel=${f#corpus/}
    seed "$f" "${rel//\//__}"
done < <(find corpus -name '*.safetensors' -type f -print0 | sort -z)
# Regression inputs are seeds too: the bytes that once broke something.
if [ -d validator/tests/regressions ]; then
    while IFS= read -r -d '' f; do
        seed "$f" "regression__$(basename "$f")"
    done < <(find validator/tests/regressions -type f -name '*.safetensors' -print0 | sort -z)
fi
echo "seed-corpora: $count files into $dir/{${targets[*]} fast_path}"
