#!/usr/bin/env python3
"""Conformance adapter: the Python `safetensors` package, loading from bytes.

Usage: deserialize_adapter.py FILE   (see conformance/PROTOCOL.md)

Reads FILE into memory and calls `safetensors.deserialize(bytes)`, the path under
`safetensors.numpy.load` / `safetensors.torch.load`. It returns every tensor's name, dtype,
shape and raw bytes (so bytes are reported for every dtype); it does not return the metadata,
so none is reported.

Exit codes: 0 accepted (JSON on stdout), 1 the library raised an error (rejected),
2 usage or I/O error before the library ran, 3 the library crashed (PanicException,
MemoryError).
"""
import hashlib
import json
import sys


def main():
    if len(sys.argv) != 2:
        print("usage: deserialize_adapter.py FILE", file=sys.stderr)
        return 2
    try:
        with open(sys.argv[1], "rb") as f:
            data = f.read()
    except OSError as e:
        print(f"deserialize_adapter: {e}", file=sys.stderr)
        return 2
    try:
        from safetensors import deserialize

        tensors = [
            {
                "name": name,
                "dtype": info["dtype"],
                "shape": [str(d) for d in info["shape"]],
                "sha256": hashlib.sha256(bytes(info["data"])).hexdigest(),
            }
            for name, info in deserialize(data)
        ]
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
    print(json.dumps({"tensors": tensors}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
