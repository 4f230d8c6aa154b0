#!/usr/bin/env bash
# Create (or reuse) the Python virtual environment of the fastsafetensors adapter:
#   target/conformance-venv-torch  with fastsafetensors + torch (+ numpy).
# A venv of its own: torch from PyPI brings several GB of CUDA libraries that `import torch`
# needs even on a machine without a GPU, so it stays out of the light venv CI uses
# (setup-python.sh). Not run by CI; run-all.sh runs it.
# Idempotent: a venv whose pinned packages are already installed is left as it is.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/target/conformance-venv-torch"
PYTHON="${PYTHON:-python3}"

# Pinned versions: change them here, in one place, and re-run the script.
FASTSAFETENSORS_VERSION="0.5.0"
TORCH_VERSION="2.15.0"
NUMPY_VERSION="2.4.6"

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
pkgs=("fastsafetensors==$FASTSAFETENSORS_VERSION" "torch==$TORCH_VERSION" "numpy==$NUMPY_VERSION")
missing=()
for p in "${pkgs[@]}"; do
  name="${p%%==*}"; version="${p##*==}"
  have="$("$VENV/bin/python" -m pip show "$name" 2>/dev/null | sed -n 's/^Version: //p' || true)"
  if [ "$have" != "$version" ]; then missing+=("$p"); fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet "${missing[@]}"
fi
"$VENV/bin/python" - <<'PY'
import importlib.metadata as m
for name in ("fastsafetensors", "torch", "numpy"):
    print(f"{name} {m.version(name)}")
PY
