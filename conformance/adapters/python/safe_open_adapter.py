#!/usr/bin/env python3
"""Conformance adapter: the Python `safetensors` package, through `safe_open`.

Usage: safe_open_adapter.py FILE   (see conformance/PROTOCOL.md)

Opens FILE with `safe_open(FILE, framework="numpy")`, lists every tensor's name, dtype and
shape (`get_slice`), the metadata, and the SHA-256 of each tensor's bytes as `get_tensor`
returns them, for the dtypes NumPy can hold (BF16, F8, F4 and F6 tensors have no NumPy dtype:
their bytes are not reported, and the runner does not compare them).

Exit codes: 0 accepted (JSON on stdout), 1 the library raised an error (rejected),
2 usage or I/O error before the library ran, 3 the library crashed (a Rust panic surfaces as
PanicException, which is not an Exception; MemoryError is treated as a crash too).
"""
import hashlib
import json
import sys

NUMPY_DTYPES = {"BOOL", "U8", "I8", "U16", "I16", "F16", "U32", "I32", "F32", "U64", "I64", "F64", "C64"}


def read(path):
    from safetensors import safe_open
    import numpy as np

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


def main():
    if len(sys.argv) != 2:
        print("usage: safe_open_adapter.py FILE", file=sys.stderr)
        return 2
    path = sys.argv[1]
    try:
        open(path, "rb").close()
    except OSError as e:
        print(f"safe_open_adapter: {e}", file=sys.stderr)
        return 2
    try:
        answer = read(path)
    except MemoryError as e:
        print(f"crash: MemoryError: {e}", file=sys.stderr)
        return 3
    except Exception as e:  # the library's way to refuse a file
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except BaseException as e:  # pyo3's PanicException: the library panicked
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        print(f"crash: {type(e).__name__}: {e}", file=sys.stderr)
        return 3
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
