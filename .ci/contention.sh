#!/usr/bin/env bash
# The README's test command again, with every core kept busy by other processes: two busy
# loops (`yes > /dev/null`) per core for the whole run, ended by their own ids when it ends.
# No test may depend on timing or scheduling (events are counted, races are set up
# deterministically, deadlines are hang guards only), so the result must be the same as on
# an idle machine. Usage: bash .ci/contention.sh [LOOPS_PER_CORE]
set -euo pipefail
cd "$(dirname "$0")/.."
per_core=${1:-2}
cores=$(nproc)
pids=()
stop() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait "${pids[@]}" 2>/dev/null || true
}
trap stop EXIT
for _ in $(seq $((cores * per_core))); do
    yes > /dev/null &
    pids+=("$!")
done
echo "$((cores * per_core)) busy loops on $cores cores: ${pids[*]}"
cargo test --workspace
