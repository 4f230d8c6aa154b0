#!/usr/bin/env python3
"""Conformance adapter: MLX, `mlx.core.load` (packages `mlx` and `mlx-cpu` on Linux).

Usage: mlx_load_adapter.py FILE   (see conformance/PROTOCOL.md)

Loads FILE with `mx.load(FILE, return_metadata=True)`, forces every array to be read, and
reports each tensor's dtype (mapped back to the header's names), shape (as MLX reports it: a
negative dimension stays negative), the SHA-256 of its bytes, and the metadata.

Exit codes: 0 accepted (JSON on stdout), 1 MLX raised an error (rejected), 2 usage or I/O
error before MLX ran, 3 a crash that surfaced as a Python exception (MemoryError).
A real crash of the native code ends the process by a signal.
"""
import hashlib
import json
import sys

NAMES = {
    "bool": "BOOL", "uint8": "U8", "uint16": "U16", "uint32": "U32", "uint64": "U64",
    "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
    "float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64",
    "complex64": "C64",
}


def read(path):
    import mlx.core as mx
    import numpy as np

    arrays, metadata = mx.load(path, return_metadata=True)
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


def main():
    if len(sys.argv) != 2:
        print("usage: mlx_load_adapter.py FILE", file=sys.stderr)
        return 2
    path = sys.argv[1]
    try:
        open(path, "rb").close()
    except OSError as e:
        print(f"mlx_load_adapter: {e}", file=sys.stderr)
        return 2
    try:
        answer = read(path)
    except MemoryError as e:
        print(f"crash: MemoryError: {e}", file=sys.stderr)
        return 3
    except Exception as e:  # MLX's way to refuse a file
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
