#!/usr/bin/env python3
"""Conformance adapter: the Python `safetensors` package, through `safe_open`.

Usage: safe_open_adapter.py FILE | safe_open_adapter.py --persistent
(protocol v2, see conformance/PROTOCOL.md and stconform_protocol.py)

Opens FILE with `safe_open(FILE, framework="numpy")`, lists every tensor's name, dtype and
shape (`get_slice`), the metadata, and the SHA-256 of each tensor's bytes as `get_tensor`
returns them, for the dtypes NumPy can hold (BF16, F8, F4 and F6 tensors have no NumPy dtype:
their bytes are not reported, and the runner does not compare them).

Refusals (exit 1): `SafetensorError`, the library's error type, and NumPy's `ValueError` when
it refuses to make the array (its dimension limits). Anything else is a crash (exit 3).
"""
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stconform_protocol as protocol  # noqa: E402
from safetensors import SafetensorError, safe_open  # noqa: E402

NUMPY_DTYPES = {"BOOL", "U8", "I8", "U16", "I16", "F16", "U32", "I32", "F32", "U64", "I64", "F64", "C64"}


def read(path, kind):
    import numpy as np

    if kind == "index":
        raise protocol.Unsupported("safe_open reads one file, not a sharded set")
    tensors = []
    with safe_open(path, framework="numpy") as f:
        metadata = f.metadata()
        for name in f.keys():
            view = f.get_slice(name)
            dtype = view.get_dtype()
            entry = {"name": name, "dtype": dtype, "shape": [str(d) for d in view.get_shape()]}
            if dtype in NUMPY_DTYPES:
                array = np.ascontiguousarray(f.get_tensor(name))
                entry["sha256"] = hashlib.sha256(array.tobytes()).hexdigest()
            tensors.append(entry)
    return {"tensors": tensors, "metadata": metadata}


if __name__ == "__main__":
    sys.exit(protocol.run(read, (SafetensorError, ValueError)))
