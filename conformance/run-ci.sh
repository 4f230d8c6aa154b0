#!/usr/bin/env bash
# What CI runs for the conformance suite: the adapters marked "ci" in conformance/adapters.json
# (stcheck strict, strict + deep, and reference profiles, the reference crate, Python
# safetensors through safe_open and through deserialize), each checked against its
# known-failures file, plus the acceptance checks; then the writers marked "ci" in
# conformance/writers.json (stcheck, the reference crate, Python safetensors). MLX, candle and
# the Hub's JS parser run with `conformance/run-all.sh`, which also regenerates CONFORMANCE.md.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/run-all.sh" --ci "$@"
