#!/usr/bin/env python3
"""Conformance adapter: `pure_safetensors`, a reader and writer of safetensors in pure Python
(attrs + marshmallow for the header's schema), through `SafeTensors(FILE, "r")`.

Usage: pure_safetensors_adapter.py FILE | pure_safetensors_adapter.py --persistent
(protocol v2, see conformance/PROTOCOL.md and ../python/stconform_protocol.py)

Each tensor of `SafeTensors.tensors` is reported with its dtype (the header's name), shape
and the SHA-256 of its bytes as `as_buffer()` gives them; the metadata is `.metadata`.

A dtype of the format that the library does not have (F8, F6, F4, C64) is "unsupported"
(exit 4): the header's dtypes are checked against `pure_safetensors.safetensors.dtypes`
before the file is opened (the library itself raises a bare `KeyError` for them).

Refusals (exit 1): the library's error type `SafeTensorError` (with its subclasses
`SafeTensorHeaderError` and `SafeTensorEmptyFileError`), marshmallow's `ValidationError`
from its schema of the header, `json.JSONDecodeError` and `UnicodeDecodeError` from parsing
the header. Anything else is a crash (exit 3).
"""
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import stconform_protocol as protocol  # noqa: E402
import marshmallow  # noqa: E402
from pure_safetensors import SafeTensors  # noqa: E402
from pure_safetensors.exc import SafeTensorError  # noqa: E402
from pure_safetensors.safetensors import dtypes  # noqa: E402


def read(path, kind):
    if kind == "index":
        raise protocol.Unsupported("SafeTensors reads one file, not a sharded set")
    protocol.require_dtypes(path, dtypes, "pure_safetensors")
    tensors = []
    with SafeTensors(path, "r") as sf:
        buffers = sf.as_buffer()
        for name, info in sf.tensors.items():
            buffer, dtype, shape = buffers[name]
            tensors.append({
                "name": name,
                "dtype": dtype.name if hasattr(dtype, "name") else str(dtype),
                "shape": [str(d) for d in shape],
                "sha256": hashlib.sha256(bytes(buffer)).hexdigest(),
            })
        metadata = sf.metadata
    return {"tensors": tensors, "metadata": metadata}


if __name__ == "__main__":
    sys.exit(protocol.run(read, (SafeTensorError, marshmallow.ValidationError,
                                 json.JSONDecodeError, UnicodeDecodeError)))
