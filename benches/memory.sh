#!/usr/bin/env bash
# Peak memory of a check, next to the goal of issues 9 and 19: peak RSS <= 2 x header length +
# 64 MiB, for near-limit headers (most tensors; ~10 M metadata entries; ~2.9 M warnings;
# ~1.5 M NaN scalars), a 100 MB index.json and one naming ~7 M distinct missing shards, in every
# output mode, with the reference verdict too, and on standard input (whose bytes written to
# disk are shown: nothing past the header may be stored). Builds the inputs with `memgen`, runs the release binary
# under /usr/bin/time -v (GNU time), and prints one table row per input and mode.
#
# Usage: benches/memory.sh [OUT_DIR] [HEADER_BYTES]   (defaults: target/memory, 99999992)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/memory}
len=${2:-99999992}
if [ ! -x /usr/bin/time ]; then
    echo "benches/memory.sh needs GNU time (/usr/bin/time); apt-get install time" >&2
    exit 2
fi
cargo build --release -q -p stcheck-cli --bin stcheck
cargo build --release -q -p stcheck-benches --bin memgen
bin=target/release/stcheck
[ -f "$out/missing/model.safetensors.index.json" ] || target/release/memgen "$out" "$len"

# KiB of 2 x N + 64 MiB for a header (or index) of N bytes.
goal() { echo $(( (2 * $1) / 1024 + 65536 )); }
header_len() { od -An -t u8 -N 8 "$1" | tr -d ' '; }

printf '| input | header or index bytes | mode | peak RSS (MiB) | goal (MiB) | within | written (MiB) | wall (s) |\n'
printf '|---|---|---|---|---|---|---|---|\n'
fails=0
run() { # input label, N, mode label, command...
    local input=$1 n=$2 mode=$3
    shift 3
    local log
    log=$(mktemp)
    set +e
    /usr/bin/time -v "$@" > /dev/null 2> "$log"
    set -e
    local rss wall written
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
    written=$(awk -F': ' '/File system outputs/ {print $2}' "$log")
    rm -f "$log"
    local g
    g=$(goal "$n")
    local ok=yes
    if [ "$rss" -gt "$g" ]; then ok=NO; fails=$((fails + 1)); fi
    printf '| %s | %s | %s | %d | %d | %s | %d | %s |\n' "$input" "$n" "$mode" $((rss / 1024)) $((g / 1024)) "$ok" $((written / 2048)) "$wall"
}
for f in tensors metadata warnings nan; do
    file="$out/$f.safetensors"
    n=$(header_len "$file")
    run "$f" "$n" "text" "$bin" "$file"
    run "$f" "$n" "-v" "$bin" -v "$file"
    run "$f" "$n" "--json" "$bin" --json "$file"
    run "$f" "$n" "--json -v" "$bin" --json -v "$file"
    run "$f" "$n" "--json --deep" "$bin" --json --deep "$file"
    run "$f" "$n" "--json --deep --sha256 -v" "$bin" --json --deep --sha256 -v "$file"
    run "$f" "$n" "--format sarif --deep" "$bin" --format sarif --deep "$file"
    run "$f" "$n" "--mmap --json --deep" "$bin" --mmap --json --deep "$file"
    run "$f" "$n" "--stream --json" "$bin" --stream --json "$file"
    run "$f" "$n" "stdin --json --deep" sh -c "exec $bin --json --deep - < $file"
    run "$f" "$n" "--compare-reference" "$bin" --compare-reference "$file"
    run "$f" "$n" "stdin --compare-reference" sh -c "exec $bin --compare-reference - < $file"
done
for d in index missing; do
    index="$out/$d/model.safetensors.index.json"
    n=$(stat -c %s "$index")
    run "$d/index.json" "$n" "text" "$bin" "$index"
    run "$d/index.json" "$n" "--json" "$bin" --json "$index"
    run "$d/index.json" "$n" "--json -v --deep" "$bin" --json -v --deep "$index"
    run "$d/index.json" "$n" "--format sarif" "$bin" --format sarif "$index"
    run "$d/index.json" "$n" "--profile portable --json" "$bin" --profile portable --json "$index"
    run "$d/index.json" "$n" "walk of the directory" "$bin" --json "$out/$d"
done
# An 80-byte header that declares a 64 GiB tensor, then endless zeros on standard input, with
# the reference verdict: the check reads on to the data region's end (as the strict check
# does) and stores nothing past the header (it once wrote up to 64 GiB to a temporary file).
# The run is cut after 20 s; what matters is the memory and the bytes written meanwhile.
huge="$out/huge-region.header"
printf '{"w":{"dtype":"U8","shape":[68719476736],"data_offsets":[0,68719476736]}}' > "$huge.json"
python3 -c "import struct,sys; h=open(sys.argv[1],'rb').read(); open(sys.argv[2],'wb').write(struct.pack('<Q',len(h))+h)" "$huge.json" "$huge"
run "80-byte header, 64 GiB declared" 80 "stdin --compare-reference, 20 s of zeros" \
    sh -c "cat $huge /dev/zero | timeout 20 $bin --compare-reference -; true"
echo
if [ "$fails" -gt 0 ]; then
    echo "$fails run(s) above the goal"
    exit 1
fi
echo "every run within the goal"
