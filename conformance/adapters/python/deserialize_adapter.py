#!/usr/bin/env python3
"""Conformance adapter: the Python `safetensors` package, loading from bytes.

Usage: deserialize_adapter.py FILE | deserialize_adapter.py --persistent
(protocol v2, see conformance/PROTOCOL.md and stconform_protocol.py)

Reads FILE into memory and calls `safetensors.deserialize(bytes)`, the path under
`safetensors.numpy.load` / `safetensors.torch.load`. It returns every tensor's name, dtype,
shape and raw bytes (so bytes are reported for every dtype), and the decoded values of float
tensors (with ml_dtypes); it does not return the metadata, so none is reported.

Only `SafetensorError`, the library's error type, is a refusal (exit 1); anything else (a
Rust panic surfacing as PanicException, MemoryError, a TypeError) is a crash (exit 3).
"""
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stconform_protocol as protocol  # noqa: E402
from safetensors import SafetensorError, deserialize  # noqa: E402


def read(path, kind):
    if kind == "index":
        raise protocol.Unsupported("safetensors.deserialize reads one file, not a sharded set")
    with open(path, "rb") as f:
        data = f.read()
    tensors = []
    for name, info in deserialize(data):
        raw = bytes(info["data"])
        entry = {
            "name": name,
            "dtype": info["dtype"],
            "shape": [str(d) for d in info["shape"]],
            "sha256": hashlib.sha256(raw).hexdigest(),
        }
        count = 1
        for d in info["shape"]:
            count *= d
        values = protocol.decode_values(info["dtype"], raw, count)
        if values is not None:
            entry["values"] = values
        tensors.append(entry)
    return {"tensors": tensors}


if __name__ == "__main__":
    sys.exit(protocol.run(read, (SafetensorError,)))
