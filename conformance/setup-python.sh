#!/usr/bin/env bash
# Create (or reuse) the Python virtual environment for the conformance adapters:
#   target/conformance-venv  with safetensors + numpy + ml_dtypes (always), mlx + mlx-cpu
#   (with --mlx), tinygrad + gguf + pure_safetensors + modelvet + safetensors-print +
#   model-fingerprint + reminis (with --more: the independent readers and writers of
#   run-all.sh). ml_dtypes decodes the F8, F6 and F4 values the deserialize adapter reports,
#   and gives NumPy the BF16 and F8 types the writer adapters need.
# Idempotent: a venv whose pinned packages are already installed is left as it is.
# Usage: conformance/setup-python.sh [--mlx] [--more]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/target/conformance-venv"
PYTHON="${PYTHON:-python3}"

# Pinned versions: change them here, in one place, and re-run the script.
SAFETENSORS_VERSION="0.8.0"
NUMPY_VERSION="2.4.6"
ML_DTYPES_VERSION="0.7.0"
MLX_VERSION="0.32.4"
TINYGRAD_VERSION="0.14.0"
GGUF_VERSION="0.19.0"
PURE_SAFETENSORS_VERSION="0.3.2"
# pure_safetensors 0.3.2 builds its schema with marshmallow's `context`, which marshmallow 4
# removed: it needs a marshmallow 3.
MARSHMALLOW_VERSION="3.26.1"
# Independent readers and writers of corpus 1.1.0's run (none uses the safetensors package):
# modelvet builds its C library from the sdist (needs a C compiler and Python's headers).
MODELVET_VERSION="0.1.1"
SAFETENSORS_PRINT_VERSION="0.1.0"
MODEL_FINGERPRINT_VERSION="0.1.1"
REMINIS_VERSION="0.34.0"

want_mlx=0; want_more=0
for arg in "$@"; do
  case "$arg" in
    --mlx) want_mlx=1 ;;
    --more) want_more=1 ;;
    *) echo "setup-python.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi

pkgs=("safetensors==$SAFETENSORS_VERSION" "numpy==$NUMPY_VERSION" "ml_dtypes==$ML_DTYPES_VERSION")
if [ "$want_mlx" = 1 ]; then
  pkgs+=("mlx==$MLX_VERSION" "mlx-cpu==$MLX_VERSION")
fi
if [ "$want_more" = 1 ]; then
  pkgs+=("tinygrad==$TINYGRAD_VERSION" "gguf==$GGUF_VERSION"
         "pure-safetensors==$PURE_SAFETENSORS_VERSION" "marshmallow==$MARSHMALLOW_VERSION"
         "modelvet==$MODELVET_VERSION" "safetensors-print==$SAFETENSORS_PRINT_VERSION"
         "model-fingerprint==$MODEL_FINGERPRINT_VERSION" "reminis==$REMINIS_VERSION")
fi

# Skip pip entirely when every pin is already satisfied (fast, and works offline).
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
for name in ("safetensors", "numpy", "ml_dtypes", "mlx", "mlx-cpu", "tinygrad", "gguf",
             "pure-safetensors", "marshmallow", "modelvet", "safetensors-print",
             "model-fingerprint", "reminis"):
    try:
        print(f"{name} {m.version(name)}")
    except m.PackageNotFoundError:
        pass
PY
