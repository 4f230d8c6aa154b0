#!/usr/bin/env bash
# The action's second step: stcheck on $STCHECK_PATHS with $STCHECK_ARGS, from the workspace,
# as workflow commands (the runner shows them on the files), then a step summary: the summary
# line and a table of the findings. Exits with stcheck's status, which fails the job when a
# file is invalid or could not be checked.
set -uo pipefail
: "${GITHUB_STEP_SUMMARY:?}" "${GITHUB_OUTPUT:?}"
cd "${GITHUB_WORKSPACE:-.}"
out="${RUNNER_TEMP:-/tmp}/stcheck-annotations.txt"
# Word splitting of the two inputs is wanted: they are lists separated by spaces.
# shellcheck disable=SC2086
stcheck --format github --no-progress ${STCHECK_ARGS:-} -- ${STCHECK_PATHS:-.} > "$out"
code=$?
cat "$out"
echo "exit-code=$code" >> "$GITHUB_OUTPUT"
python3 - "$out" "$code" >> "$GITHUB_STEP_SUMMARY" <<'PY'
import re, sys
path, code = sys.argv[1], int(sys.argv[2])
lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
def unescape(s):
    return s.replace("%0A", " ").replace("%0D", " ").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")
def cell(s):
    return s.replace("|", "\\|").replace("<", "&lt;")
verdict = {0: "all valid", 1: "invalid files found", 2: "paths not checked"}.get(code, "error")
print(f"## stcheck: {verdict}\n")
for l in lines:
    if l.startswith("summary: "):
        print(f"`{l}`\n")
rows = []
for l in lines:
    m = re.match(r"^::(error|warning) (.*?)::(.*)$", l)
    if not m:
        continue
    props = dict(p.split("=", 1) for p in m.group(2).split(",") if "=" in p)
    rows.append((m.group(1), unescape(props.get("file", "")), unescape(props.get("title", "")), unescape(m.group(3))))
if rows:
    print("| level | file | rule | finding |\n| --- | --- | --- | --- |")
    for level, f, rule, msg in rows[:1000]:
        print(f"| {level} | {cell(f)} | {cell(rule)} | {cell(msg)} |")
    if len(rows) > 1000:
        print(f"\n... and {len(rows) - 1000} more findings (see the annotations)")
PY
exit "$code"
