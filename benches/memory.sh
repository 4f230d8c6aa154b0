#!/usr/bin/env bash
# Peak memory of a check, next to the goal of issue 9: peak RSS <= 2 x header length + 64 MiB,
# for near-limit headers (most tensors; ~10 M metadata entries; ~2.9 M warnings) and a 100 MB
# index.json, in every output mode. Builds the inputs with `memgen`, runs the release binary
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
cargo build --release -q -p stcheck --bin stcheck
cargo build --release -q -p stcheck-benches --bin memgen
bin=target/release/stcheck
[ -f "$out/warnings.safetensors" ] || target/release/memgen "$out" "$len"

# KiB of 2 x N + 64 MiB for a header (or index) of N bytes.
goal() { echo $(( (2 * $1) / 1024 + 65536 )); }
header_len() { od -An -t u8 -N 8 "$1" | tr -d ' '; }

printf '| input | header or index bytes | mode | peak RSS (MiB) | goal (MiB) | within | wall (s) |\n'
printf '|---|---|---|---|---|---|---|\n'
fails=0
run() { # input label, N, mode label, command...
    local input=$1 n=$2 mode=$3
    shift 3
    local log
    log=$(mktemp)
    set +e
    /usr/bin/time -v "$@" > /dev/null 2> "$log"
    set -e
    local rss wall
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
    rm -f "$log"
    local g
    g=$(goal "$n")
    local ok=yes
    if [ "$rss" -gt "$g" ]; then ok=NO; fails=$((fails + 1)); fi
    printf '| %s | %s | %s | %d | %d | %s | %s |\n' "$input" "$n" "$mode" $((rss / 1024)) $((g / 1024)) "$ok" "$wall"
}
for f in tensors metadata warnings; do
    file="$out/$f.safetensors"
    n=$(header_len "$file")
    run "$f" "$n" "text" "$bin" "$file"
    run "$f" "$n" "--json" "$bin" --json "$file"
    run "$f" "$n" "--json -v" "$bin" --json -v "$file"
    run "$f" "$n" "--json --deep" "$bin" --json --deep "$file"
    run "$f" "$n" "--json --deep --sha256 -v" "$bin" --json --deep --sha256 -v "$file"
    run "$f" "$n" "--no-mmap --json" "$bin" --no-mmap --json "$file"
    run "$f" "$n" "--stream --json" "$bin" --stream --json "$file"
    run "$f" "$n" "stdin --json --deep" sh -c "exec $bin --json --deep - < $file"
done
index="$out/index/model.safetensors.index.json"
n=$(stat -c %s "$index")
run "index.json" "$n" "text" "$bin" "$index"
run "index.json" "$n" "--json" "$bin" --json "$index"
run "index.json" "$n" "--json -v --deep" "$bin" --json -v --deep "$index"
echo
if [ "$fails" -gt 0 ]; then
    echo "$fails run(s) above the goal"
    exit 1
fi
echo "every run within the goal"
