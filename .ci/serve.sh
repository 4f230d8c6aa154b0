#!/usr/bin/env bash
# The service's tests (serve/tests/it) with its real clients installed, so that none skips:
# Debian's clamdscan and prometheus (promtool), systemd's systemd-socket-activate, and PyPI's
# clamd and requests in a venv under target/. STCHECK_SERVE_CLIENTS=required turns a missing
# client into a failure.
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
