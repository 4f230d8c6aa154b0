#!/usr/bin/env bash
# Build the stcheck Python package into a virtual environment under target/, with what its
# tests need:  target/python-venv  (numpy, ml_dtypes, safetensors, pytest, dask[distributed], pyarrow and pandas for the
# Parquet scan).
# The package itself is installed the way a user installs it, `pip install ./python` (maturin
# and PyO3 come from the registries); its Rust build goes to target/python-build, so a second
# run only rebuilds what changed. Also builds the CLI (target/debug/stcheck) the tests compare
# with. Idempotent.
# Usage: python/setup-venv.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/target/python-venv"
PYTHON="${PYTHON:-python3}"

# Pinned versions of the test environment: change them here, in one place.
pins=(
  "numpy==2.4.6"
  "ml_dtypes==0.7.0"
  "safetensors==0.8.0"
  "pytest==9.2.0"
  "dask==2026.8.0"
  "distributed==2026.8.0"
  "pyarrow==26.0.1"
  "pandas==3.1.1"
)

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi

# pip leaves requirements that are already satisfied alone, without asking the index.
"$VENV/bin/python" -m pip install --disable-pip-version-check --quiet "${pins[@]}"

# The package, as `pip install ./python` builds it (release profile, abi3 wheel).
CARGO_TARGET_DIR="$ROOT/target/python-build" "$VENV/bin/python" -m pip install \
  --disable-pip-version-check --quiet --force-reinstall --no-deps "$ROOT/python"

# The CLI the parity tests compare with.
cargo build --quiet -p stcheck-cli --manifest-path "$ROOT/Cargo.toml"

"$VENV/bin/python" - <<'PY'
import importlib.metadata as m
import stcheck
for name in ("stcheck", "numpy", "ml_dtypes", "safetensors", "pytest", "dask", "distributed", "pyarrow", "pandas"):
    print(f"{name} {m.version(name)}")
PY
