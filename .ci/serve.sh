#!/usr/bin/env bash
# The service's tests (serve/tests/it) with its real clients installed, so that none skips:
# Debian's clamdscan and prometheus (promtool), systemd's systemd-socket-activate, and PyPI's
# clamd and requests in a venv under target/. STCHECK_SERVE_CLIENTS=required turns a missing
# client into a failure. Then systemd's own check of the unit files (serve/systemd/).
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
if ! command -v clamdscan > /dev/null || ! command -v promtool > /dev/null \
  || ! [ -x /usr/bin/systemd-socket-activate ]; then
  apt-get install -y -qq --no-install-recommends clamdscan prometheus systemd > /dev/null 2>&1 \
    || { apt-get update -qq > /dev/null && apt-get install -y -qq --no-install-recommends clamdscan prometheus systemd > /dev/null; }
fi
[ -x target/clamd-venv/bin/python ] || python3 -m venv target/clamd-venv
target/clamd-venv/bin/pip install -q clamd==1.0.2 requests
STCHECK_SERVE_CLIENTS=required cargo test -p stcheck-serve --test it

# The unit files, as systemd reads them: `systemd-analyze verify` loads them with the units
# they name (it needs no systemd as PID 1), and its warnings (an unknown key, a bad value) fail
# too. ExecStart points at the binary just built, so that it must exist and be executable.
# Not done here: starting the units (no systemd as PID 1 in CI); the socket activation they
# use is tested with systemd-socket-activate (serve/tests/it/lifecycle.rs).
units=target/serve-units
rm -rf "$units" && mkdir -p "$units"
cp serve/systemd/*.service serve/systemd/*.socket "$units"/
cargo build -q -p stcheck-cli
sed -i "s#^ExecStart=/usr/local/bin/stcheck #ExecStart=$PWD/target/debug/stcheck #" "$units"/stcheck-serve.service
grep -q "^ExecStart=$PWD/target/debug/stcheck serve " "$units"/stcheck-serve.service
said=$(cd "$units" && systemd-analyze verify --man=no ./*.service ./*.socket 2>&1) || {
  echo "$said"; echo "systemd-analyze verify failed"; exit 1; }
if [ -n "$said" ]; then echo "$said"; echo "systemd-analyze verify warned"; exit 1; fi
echo "serve/systemd: systemd-analyze verify: ok"
