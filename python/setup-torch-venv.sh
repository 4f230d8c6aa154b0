#!/usr/bin/env bash
# A second virtual environment for the torch half of the Python tests: target/torch-venv, with
# torch, safetensors, numpy, ml_dtypes, pytest and the stcheck package built as
# `pip install ./python` builds it (into target/python-build, shared with python/setup-venv.sh,
# so a second build only relinks). Kept apart from target/python-venv because torch from PyPI
# is large: on Linux x86_64 PyPI has only the CUDA build (torch itself about 540 MB, and its
# CUDA libraries as dependencies, several GB installed); it runs on CPU without a GPU, which is
# all the tests ask of it. No CPU-only build is on PyPI for this platform. Measured on the
# 2-core development machine: 92 s to download and install the pins with no pip cache (5.4 GB
# installed), then about 15 s for the stcheck wheel after python/setup-venv.sh built it.
# Idempotent; prints how long the installs took.
# Usage: python/setup-torch-venv.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/target/torch-venv"
PYTHON="${PYTHON:-python3}"

# Pinned versions of the torch test environment: change them here, in one place.
pins=(
  "torch==2.15.0"
  "numpy==2.4.6"
  "ml_dtypes==0.7.0"
  "safetensors==0.8.0"
  "pytest==9.2.0"
)

start=$(date +%s)
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
# pip leaves requirements that are already satisfied alone, without asking the index.
"$VENV/bin/python" -m pip install --disable-pip-version-check --quiet --progress-bar off "${pins[@]}"
deps=$(date +%s)

CARGO_TARGET_DIR="$ROOT/target/python-build" "$VENV/bin/python" -m pip install \
  --disable-pip-version-check --quiet --force-reinstall --no-deps "$ROOT/python"
end=$(date +%s)

"$VENV/bin/python" - <<'PY'
import importlib.metadata as m
import stcheck, torch
for name in ("stcheck", "torch", "numpy", "ml_dtypes", "safetensors", "pytest"):
    print(f"{name} {m.version(name)}")
PY
echo "torch venv: dependencies $((deps - start)) s, stcheck $((end - deps)) s; $(du -sh "$VENV" | cut -f1) installed"
