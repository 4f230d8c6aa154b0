#!/usr/bin/env bash
# Seed the fuzz targets from the golden files of corpus/ (never by hand copies), into DIR
# (default target/fuzz-seeds; the kept, minimised corpora are fuzz/corpus/<target>/):
#   DIR/<target>/<area>__<file>.safetensors
# The `stream` target reads a chunk schedule from the end of its input (the last byte is its
# length), so its seeds get one 0x00 byte appended: the whole file, read in one go.
# The `structured` target builds its inputs itself from `arbitrary` bytes; files make poor
# seeds for it, so it starts from an empty corpus.
# The `fast_path` target takes header bytes: its seeds are the files without the length field.
# The option targets (`deep_scan`, `portable`, `reference_profile`, `file_source`) take files
# as they are. `rule_table` gets the rule IDs of SPEC.md (one a line) and the profile and read
# mode names; `reader_table` the built-in reader table.
# Run this again after corpus/ changes. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-target/fuzz-seeds}
targets=(validate stream differential deep_scan portable reference_profile file_source)
count=0
for t in "${targets[@]}" structured fast_path rule_table reader_table; do mkdir -p "$dir/$t"; done
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
# The ID of every rule (`Rule = "ID", Kind, Severity;` lines of the core's rule table).
sed -n 's/^ *[A-Za-z]* = "\([A-Z0-9-]*\)", [A-Za-z]*, [A-Za-z]*;$/\1/p' validator/src/rules.rs \
    > "$dir/rule_table/rule-ids"
printf 'strict\nreference\nportable\nmmap\nread\nstream\nlayout-gaps\n' > "$dir/rule_table/names"
cp validator/readers.json "$dir/reader_table/builtin-readers.json"
echo "seed-corpora: $count files into $dir/{${targets[*]} fast_path}, rule_table, reader_table"
