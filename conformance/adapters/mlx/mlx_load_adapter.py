#!/usr/bin/env python3
"""Conformance adapter: MLX, `mlx.core.load` (packages `mlx` and `mlx-cpu` on Linux).

Usage: mlx_load_adapter.py FILE | mlx_load_adapter.py --persistent
(protocol v2, see conformance/PROTOCOL.md and ../python/stconform_protocol.py)

Loads FILE with `mx.load(FILE, return_metadata=True)`, forces every array to be read, and
reports each tensor's dtype (mapped back to the header's names), shape (as MLX reports it: a
negative dimension stays negative), the SHA-256 of its bytes, and the metadata.

Refusals (exit 1): ValueError and RuntimeError, the exceptions MLX raises on a file it
refuses; an unsupported dtype is reported as such (exit 4). Anything else is a crash (exit 3);
a crash of the native code ends the process by a signal.
"""
import hashlib
import os
import sys

NAMES = {
    "bool": "BOOL", "uint8": "U8", "uint16": "U16", "uint32": "U32", "uint64": "U64",
    "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
    "float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64",
    "complex64": "C64",
}


def read(path):
    import stconform_protocol as protocol

    import mlx.core as mx
    import numpy as np

    try:
        arrays, metadata = mx.load(path, return_metadata=True)
    except (ValueError, RuntimeError) as e:
        if "unsupported" in str(e).lower() and "dtype" in str(e).lower():
            raise protocol.Unsupported(str(e)) from e
        raise
    tensors = []
    for name, a in arrays.items():
        kind = str(a.dtype).rsplit(".", 1)[-1]
        raw = a.view(mx.uint16) if a.dtype == mx.bfloat16 else a
        data = np.ascontiguousarray(np.array(raw)).tobytes()
        tensors.append({
            "name": name,
            "dtype": NAMES.get(kind, kind),
            "shape": [str(d) for d in a.shape],
            "sha256": hashlib.sha256(data).hexdigest(),
        })
    return {"tensors": tensors, "metadata": metadata}


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import stconform_protocol as protocol

    def read_file(path, kind):
        if kind == "index":
            raise protocol.Unsupported("mx.load reads one file, not a sharded set")
        return read(path)

    # MLX refuses a file with ValueError or RuntimeError ("[load_safetensors] ...").
    sys.exit(protocol.run(read_file, (ValueError, RuntimeError)))
